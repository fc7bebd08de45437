"""Kafka message sets (message formats v0 and v1) decoded straight into `Message` tuples.

This is the consumer's hot path: a fetch response holds tens of thousands of messages, and
every Python object made per message costs throughput. kafka-python builds several (a record
batch view, a record, a ConsumerRecord) and so tops out near 100,000 records/s on 100-byte
records; one struct read, one CRC check in C and one tuple per message do several times better.

Formats v0 (brokers 0.8-0.9) and v1 (0.10+, with timestamps) are the only ones a broker sends
to a client that asks with Fetch v0-v2, whatever it stores: newer brokers down-convert.
Pure: bytes in, messages out.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

from kafka import codec

from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import Message

# offset, message size, crc, magic, attributes, then (format v0) the key length
_V0_HEAD = struct.Struct(">qiIbbi")
# format v1 puts the timestamp before the key length
_V1_TAIL = struct.Struct(">qi")
_INT = struct.Struct(">i")
_OFFSET_AND_SIZE = 12  # the log overhead before each message
_SMALLEST_MESSAGE = 14  # crc, magic, attributes and two null lengths
_CODEC_MASK = 0x07
_LOG_APPEND_TIME = 0x08
_NO_TIMESTAMP = -1


class CorruptMessageError(ZkConsumerError):
    """A message failed its CRC check or could not be decompressed."""


class DecodedSet(NamedTuple):
    messages: list[Message]
    next_offset: int | None  # where the next fetch starts; None: no complete message here
    truncated: bool  # the set ended inside a message (the broker cuts at the size asked for)


def decode_message_set(data: bytes, topic: str, partition: int, fetch_offset: int,
                       check_crcs: bool = True) -> DecodedSet:
    """Every complete message at or after `fetch_offset`.

    A broker answers with whole compressed wrappers, so messages before the offset asked for
    can appear and are skipped; the set is cut at the byte limit asked for, so its last message
    may be partial and is left for the next fetch.
    """
    messages: list[Message] = []
    next_offset, truncated = _decode_into(messages, data, topic, partition, check_crcs)
    if messages and messages[0].offset < fetch_offset:
        messages = [m for m in messages if m.offset >= fetch_offset]
    if next_offset is not None and next_offset < fetch_offset:
        next_offset = fetch_offset
    return DecodedSet(messages, next_offset, truncated)


def _decode_into(out: list[Message], data: bytes, topic: str, partition: int,
                 check_crcs: bool) -> tuple[int | None, bool]:
    append = out.append
    view = memoryview(data)
    crc32 = zlib.crc32
    head = _V0_HEAD.unpack_from
    read_int = _INT.unpack_from
    end = len(data)
    position = 0
    next_offset = None
    while position < end:
        if position + _V0_HEAD.size > end:
            return next_offset, True
        offset, size, crc, magic, attributes, key_length = head(data, position)
        following = position + _OFFSET_AND_SIZE + size
        if following > end:
            return next_offset, True
        if size < _SMALLEST_MESSAGE:
            raise CorruptMessageError(
                f"message at offset {offset} of {topic}-{partition} is too short ({size} bytes)")
        if check_crcs and crc32(view[position + 16:following]) != crc:
            raise CorruptMessageError(
                f"message at offset {offset} of {topic}-{partition} fails its CRC check")
        cursor = position + 22
        timestamp = None
        if magic == 1:
            timestamp, key_length = _V1_TAIL.unpack_from(data, position + 18)
            cursor += 8
            if timestamp == _NO_TIMESTAMP:
                timestamp = None
        if key_length < 0:
            key = None
        else:
            key = data[cursor:cursor + key_length]
            cursor += key_length
        (value_length,) = read_int(data, cursor)
        cursor += 4
        value = None if value_length < 0 else data[cursor:cursor + value_length]
        if attributes & _CODEC_MASK:
            _decode_wrapper(out, offset, magic, attributes, timestamp, value, topic, partition,
                            check_crcs)
        else:
            append(Message(topic, partition, offset, key, value, timestamp))
        next_offset = offset + 1
        position = following
    return next_offset, False


def _decode_wrapper(out: list[Message], wrapper_offset: int, magic: int, attributes: int,
                    wrapper_timestamp: int | None, payload: bytes | None, topic: str,
                    partition: int, check_crcs: bool) -> None:
    """Inner messages of a compressed wrapper. In format v1 their offsets are relative and the
    wrapper carries the absolute offset of the last one; in v0 they are already absolute."""
    inner: list[Message] = []
    _, truncated = _decode_into(inner, _decompress(attributes & _CODEC_MASK, magic, payload or b""),
                                topic, partition, check_crcs)
    if truncated or not inner:
        raise CorruptMessageError(
            f"compressed message at offset {wrapper_offset} of {topic}-{partition} "
            "holds no complete message set")
    if magic == 1:
        shift = wrapper_offset - inner[-1].offset
        log_append_time = attributes & _LOG_APPEND_TIME
        inner = [m._replace(offset=m.offset + shift,
                            timestamp=wrapper_timestamp if log_append_time else m.timestamp)
                 for m in inner]
    out.extend(inner)


def _decompress(codec_id: int, magic: int, payload: bytes) -> bytes:
    try:
        if codec_id == 1:
            return zlib.decompress(payload, 47)  # 47: a gzip or a zlib header, found by zlib
        if codec_id == 2 and codec.has_snappy():
            return codec.snappy_decode(payload)
        if codec_id == 3 and codec.has_lz4():
            # Format v0 framed LZ4 with a wrong header checksum, which the old decoder accepts.
            return codec.lz4_decode_old_kafka(payload) if magic == 0 else codec.lz4_decode(payload)
    except Exception as exc:  # each codec library raises its own error types
        raise CorruptMessageError(f"cannot decompress a message set: {exc}") from exc
    names = {2: "snappy (pip install python-snappy)", 3: "lz4 (pip install lz4)"}
    if codec_id in names:
        raise CorruptMessageError(f"messages are compressed with {names[codec_id]}, "
                                  "which is not installed")
    raise CorruptMessageError(f"unknown compression codec {codec_id}")

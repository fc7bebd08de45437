"""Message formats v0 and v1 (legacy message sets): the one case aiokafka's reader refuses.

`records.decode_records` reads every format with aiokafka's compiled reader, except
LZ4-compressed messages in format v0: brokers 0.8 and 0.9 framed LZ4 with a wrong header checksum
(KAFKA-3160), and aiokafka declines that framing outright. kafka-python's codec knows the fault
and reads it; what it unpacks is an ordinary message set of uncompressed v0 messages with
absolute offsets, which the common reader then decodes like any other.
Pure: bytes in, bytes out.
"""

from __future__ import annotations

import struct
import zlib

from kafka import codec

from zkconsumer.errors import ZkConsumerError

# offset, message size, crc, magic, attributes, key length
_V0_HEAD = struct.Struct(">qiIbbi")
_INT = struct.Struct(">i")
_CRC_COVERS_FROM = 16  # the magic byte on


class CorruptMessageError(ZkConsumerError):
    """Records failed their CRC check, could not be decompressed or are in no known format."""


def unwrap_old_lz4(wrapper: bytes, topic: str, partition: int, check_crc: bool
                   ) -> tuple[int, bytes]:
    """The offset of a format-v0 message compressed with the 0.8/0.9 brokers' LZ4, and the
    message set inside it."""
    offset, _, crc, _, _, key_length = _V0_HEAD.unpack_from(wrapper)
    if check_crc and zlib.crc32(memoryview(wrapper)[_CRC_COVERS_FROM:]) != crc:
        raise CorruptMessageError(
            f"the message at offset {offset} of {topic}-{partition} fails its CRC check")
    cursor = _V0_HEAD.size + max(key_length, 0)
    (value_length,) = _INT.unpack_from(wrapper, cursor)
    cursor += _INT.size
    if value_length < 0 or cursor + value_length > len(wrapper):
        raise CorruptMessageError(f"the compressed message at offset {offset} of "
                                  f"{topic}-{partition} has no valid payload")
    if not codec.has_lz4():
        raise CorruptMessageError(f"the message at offset {offset} of {topic}-{partition} is "
                                  "compressed with lz4 (pip install lz4 xxhash), which is not "
                                  "installed")
    try:
        return offset, codec.lz4_decode_old_kafka(wrapper[cursor:cursor + value_length])
    except Exception as exc:  # the lz4 library raises its own error types
        raise CorruptMessageError(f"cannot decompress the message at offset {offset} of "
                                  f"{topic}-{partition}: {exc}") from exc


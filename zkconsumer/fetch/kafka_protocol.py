"""The three Kafka requests a fetcher needs, as bytes: Metadata v0, ListOffsets v0, Fetch v0-v2.

These versions are what the legacy consumer spoke, and every broker from 0.8 to 3.x answers
them. Pure encoding and decoding, no sockets, so each is tested against hand-made bytes and the
network code stays a thin loop around them.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import NamedTuple

from zkconsumer.model import TopicPartition

FETCH, LIST_OFFSETS, METADATA = 1, 2, 3
EARLIEST, LATEST = -2, -1  # ListOffsets "times" for the log start and the log end

_HEADER = struct.Struct(">hhih")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_PARTITION_INT64_INT32 = struct.Struct(">iqi")  # partition, offset or time, size or count
_FETCH_PARTITION_HEAD = struct.Struct(">ihqi")


class ProtocolError(ValueError):
    """A response did not parse: a broker bug, or a request version it does not speak."""


def fetch_version(api_version: tuple[int, ...] | None) -> int:
    """v0 for 0.8 brokers, v1 (adds throttle time) for 0.9, v2 (message format v1, with
    timestamps) for 0.10 and newer, which is also assumed when the version is unknown."""
    if api_version is None or api_version >= (0, 10):
        return 2
    return 1 if api_version >= (0, 9) else 0


def frame_request(api_key: int, version: int, correlation_id: int, client_id: str,
                  body: bytes) -> bytes:
    client = client_id.encode()
    header = _HEADER.pack(api_key, version, correlation_id, len(client)) + client
    return _INT32.pack(len(header) + len(body)) + header + body


def response_correlation_id(payload: bytes) -> int:
    return _INT32.unpack_from(payload, 0)[0]


# -- Metadata v0 --------------------------------------------------------------------------

class Metadata(NamedTuple):
    brokers: dict[int, tuple[str, int]]
    leaders: dict[TopicPartition, int]  # -1 while an election runs


def metadata_request(topics: list[str]) -> bytes:
    return _array([_string(topic) for topic in topics])


def decode_metadata(payload: bytes) -> Metadata:
    reader = _Reader(payload, 4)
    brokers = {}
    for _ in range(reader.int32()):
        node_id, host, port = reader.int32(), reader.string(), reader.int32()
        brokers[node_id] = (host, port)
    leaders = {}
    for _ in range(reader.int32()):
        _topic_error, topic = reader.int16(), reader.string()  # a topic in error has no partitions
        for _ in range(reader.int32()):
            _partition_error, partition, leader = reader.int16(), reader.int32(), reader.int32()
            reader.skip_int32_array()  # replicas
            reader.skip_int32_array()  # in-sync replicas
            leaders[TopicPartition(topic, partition)] = leader
    return Metadata(brokers, leaders)


# -- ListOffsets v0 -----------------------------------------------------------------------

def list_offsets_request(times: Mapping[TopicPartition, int]) -> bytes:
    """One offset per partition: the first (EARLIEST) or the next to be written (LATEST)."""
    return _INT32.pack(-1) + _topics_array(
        times, lambda tp, time: _PARTITION_INT64_INT32.pack(tp.partition, time, 1))


def decode_list_offsets(payload: bytes) -> dict[TopicPartition, tuple[int, int | None]]:
    """Per partition: (error code, offset or None)."""
    reader = _Reader(payload, 4)
    result = {}
    for _ in range(reader.int32()):
        topic = reader.string()
        for _ in range(reader.int32()):
            partition, error = reader.int32(), reader.int16()
            offsets = [reader.int64() for _ in range(reader.int32())]
            result[TopicPartition(topic, partition)] = (error, offsets[0] if offsets else None)
    return result


# -- Fetch v0-v2 --------------------------------------------------------------------------

class FetchedPartition(NamedTuple):
    partition: TopicPartition
    error: int
    high_watermark: int
    message_set: bytes


def fetch_request(max_wait_ms: int, min_bytes: int, offsets: Mapping[TopicPartition, int],
                  max_bytes: int) -> bytes:
    """The same body serves v0 to v2."""
    return _INT32.pack(-1) + _INT32.pack(max_wait_ms) + _INT32.pack(min_bytes) + _topics_array(
        offsets, lambda tp, offset: _PARTITION_INT64_INT32.pack(tp.partition, offset, max_bytes))


def decode_fetch(version: int, payload: bytes) -> list[FetchedPartition]:
    reader = _Reader(payload, 8 if version >= 1 else 4)  # v1+ adds the throttle time
    result = []
    for _ in range(reader.int32()):
        topic = reader.string()
        for _ in range(reader.int32()):
            partition, error, high_watermark, size = reader.unpack(_FETCH_PARTITION_HEAD)
            result.append(FetchedPartition(TopicPartition(topic, partition), error,
                                           high_watermark, reader.take(size)))
    return result


# -- building blocks ----------------------------------------------------------------------

def _string(text: str) -> bytes:
    encoded = text.encode()
    return _INT16.pack(len(encoded)) + encoded


def _array(items: list[bytes]) -> bytes:
    return _INT32.pack(len(items)) + b"".join(items)


def _topics_array(per_partition: Mapping[TopicPartition, int], encode_partition) -> bytes:
    by_topic: dict[str, list[bytes]] = {}
    for tp in sorted(per_partition):
        by_topic.setdefault(tp.topic, []).append(encode_partition(tp, per_partition[tp]))
    return _array([_string(topic) + _array(parts) for topic, parts in by_topic.items()])


class _Reader:
    """A cursor over a response; any read past the end is a ProtocolError."""

    def __init__(self, payload: bytes, position: int) -> None:
        self._payload = payload
        self._position = position

    def unpack(self, layout: struct.Struct) -> tuple:
        try:
            values = layout.unpack_from(self._payload, self._position)
        except struct.error as exc:
            raise ProtocolError(f"response ends early: {exc}") from None
        self._position += layout.size
        return values

    def int16(self) -> int:
        return self.unpack(_INT16)[0]

    def int32(self) -> int:
        return self.unpack(_INT32)[0]

    def int64(self) -> int:
        return self.unpack(_INT64)[0]

    def take(self, size: int) -> bytes:
        if size < 0 or self._position + size > len(self._payload):
            raise ProtocolError("response ends inside a field")
        start = self._position
        self._position += size
        return self._payload[start:self._position]

    def string(self) -> str:
        return self.take(self.int16()).decode()

    def skip_int32_array(self) -> None:
        self.take(4 * self.int32())

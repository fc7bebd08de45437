"""The Kafka requests a fetcher needs, as bytes, in every version it speaks: ApiVersions v0,
Metadata v0-v12, ListOffsets v0-v11 and Fetch v0-v12.

Brokers 0.8 and 0.9 know only the oldest versions (those the legacy consumer spoke); Kafka 4.0
(KIP-896) no longer answers Fetch below v4 or ListOffsets v0, and the brokers in between
convert their data down for an old Fetch. So the fetcher asks each broker which versions it
speaks (ApiVersions) and uses the newest both sides know (`versions`). Versions from
Fetch v12, ListOffsets v6 and Metadata v9 on are "flexible": lengths are unsigned varints (+1,
so that 0 means null) and every structure ends with tagged fields; one reader and one writer
handle both encodings. Topic ids (Fetch v13+) are not used: names are what the group knows.

Pure encoding and decoding, no sockets: each layout is tested against kafka-python's own
implementation of Kafka's message specs, and the network code stays a thin loop around them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import NamedTuple

from zkconsumer.model import TopicPartition

FETCH, LIST_OFFSETS, METADATA, API_VERSIONS = 1, 2, 3, 18
# The group coordinator's requests, whose bodies `group_codec` writes and reads.
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 8, 9, 10
JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS = 11, 12, 13, 14, 15
LIST_GROUPS = 16
API_NAMES = {FETCH: "Fetch", LIST_OFFSETS: "ListOffsets", METADATA: "Metadata",
             API_VERSIONS: "ApiVersions", OFFSET_COMMIT: "OffsetCommit",
             OFFSET_FETCH: "OffsetFetch", FIND_COORDINATOR: "FindCoordinator",
             JOIN_GROUP: "JoinGroup", HEARTBEAT: "Heartbeat", LEAVE_GROUP: "LeaveGroup",
             SYNC_GROUP: "SyncGroup", DESCRIBE_GROUPS: "DescribeGroups",
             LIST_GROUPS: "ListGroups"}
# The fetcher's versions implemented here, per API key.
IMPLEMENTED = {FETCH: (0, 12), LIST_OFFSETS: (0, 11), METADATA: (0, 12)}
_FIRST_FLEXIBLE = {FETCH: 12, LIST_OFFSETS: 6, METADATA: 9, API_VERSIONS: 3,
                   OFFSET_COMMIT: 8, OFFSET_FETCH: 6, FIND_COORDINATOR: 3, JOIN_GROUP: 6,
                   HEARTBEAT: 4, LEAVE_GROUP: 4, SYNC_GROUP: 4, DESCRIBE_GROUPS: 5,
                   LIST_GROUPS: 3}
EARLIEST, LATEST = -2, -1  # ListOffsets "times" for the log start and the log end
READ_UNCOMMITTED, READ_COMMITTED = 0, 1  # isolation levels (Fetch v4+, ListOffsets v2+)

_HEADER = struct.Struct(">hhih")
_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_INT32_MAX = 0x7FFFFFFF
_NO_TAGGED_FIELDS = b"\x00"
_NO_TOPIC_ID = bytes(16)
_UUID_SIZE = 16
_API_RANGE = struct.Struct(">hhh")  # API key, min version, max version
_FETCH_HEAD = struct.Struct(">iii")  # replica id, max wait, min bytes
_FETCH_SESSION = struct.Struct(">ii")  # session id, session epoch
_FETCHED_PARTITION_HEAD = struct.Struct(">ihq")  # partition, error, high watermark
_ABORTED_TRANSACTION = struct.Struct(">qq")  # producer id, first offset
_PARTITION_AND_ERROR = struct.Struct(">ih")
_TIMESTAMP_AND_OFFSET = struct.Struct(">qq")
_PARTITION_LEADER = struct.Struct(">hii")  # error, partition, leader


class ProtocolError(ValueError):
    """A response did not parse: a broker bug, or a request version it does not speak."""


def is_flexible(api_key: int, version: int) -> bool:
    first = _FIRST_FLEXIBLE.get(api_key)
    return first is not None and version >= first


def frame_request(api_key: int, version: int, correlation_id: int, client_id: str,
                  body: bytes) -> bytes:
    """Size, request header (v1, or v2 with tagged fields for a flexible version), body. The
    client id stays a classic string in both header versions."""
    client = client_id.encode()
    header = _HEADER.pack(api_key, version, correlation_id, len(client)) + client
    if is_flexible(api_key, version):
        header += _NO_TAGGED_FIELDS
    return _INT32.pack(len(header) + len(body)) + header + body


def response_correlation_id(payload: bytes | bytearray) -> int:
    return _INT32.unpack_from(payload, 0)[0]


# -- ApiVersions v0 -----------------------------------------------------------------------

API_VERSIONS_REQUEST = b""  # v0 has an empty body; every broker from 0.10 on answers it


def decode_api_versions(payload: bytes | bytearray) -> dict[int, tuple[int, int]]:
    """Per API key, the (lowest, highest) version the broker speaks."""
    reader = Reader(payload, flexible=False)  # its response header is never flexible
    error = reader.int16()
    offered = {}
    for _ in range(reader.array_length(_API_RANGE.size)):
        api_key, lowest, highest = reader.unpack(_API_RANGE)
        offered[api_key] = (lowest, highest)
    reader.expect_end()
    if error and not offered:
        raise ProtocolError(f"ApiVersions answered error {error}")
    return offered


# -- Metadata v0-v12 ----------------------------------------------------------------------

class Metadata(NamedTuple):
    brokers: dict[int, tuple[str, int]]
    leaders: dict[TopicPartition, int]  # -1 while an election runs
    # The topics the brokers flag as internal (v1+; v0 flags none).
    internal: frozenset[str] = frozenset()


def metadata_request(topics: list[str] | None, version: int = 0) -> bytes:
    """Metadata of these topics, or of every topic (None: an empty list in v0, a null one
    from v1 on, where an empty list asks for none). From v4 on the request says whether a
    broker configured to create missing topics may do so: yes, as it did for every v0-v3
    request."""
    writer = Writer(version >= _FIRST_FLEXIBLE[METADATA])
    if topics is None:
        writer.array(-1 if version >= 1 else 0)
    else:
        writer.array(len(topics))
    for topic in topics or ():
        if version >= 10:
            writer.raw(_NO_TOPIC_ID)
        writer.string(topic)
        writer.end_struct()
    if version >= 4:
        writer.pack(_INT8, 1)  # allow auto topic creation
    if 8 <= version <= 10:
        writer.pack(_INT8, 0)  # include cluster authorized operations
    if version >= 8:
        writer.pack(_INT8, 0)  # include topic authorized operations
    writer.end_struct()
    return writer.build()


def decode_metadata(payload: bytes | bytearray, version: int = 0) -> Metadata:
    flexible = version >= _FIRST_FLEXIBLE[METADATA]
    reader = Reader(payload, flexible)
    if version >= 3:
        reader.int32()  # throttle time
    brokers = {}
    for _ in range(reader.array_length()):
        node_id, host, port = reader.int32(), reader.string(), reader.int32()
        if version >= 1:
            reader.nullable_string()  # rack
        reader.end_struct()
        brokers[node_id] = (host, port)
    if version >= 2:
        reader.nullable_string()  # cluster id
    if version >= 1:
        reader.int32()  # controller id
    leaders = {}
    internal = set()
    for _ in range(reader.array_length()):
        _topic_error, topic = reader.int16(), reader.nullable_string()  # in error: no partitions
        if version >= 10:
            reader.skip(_UUID_SIZE)  # topic id
        if version >= 1 and reader.boolean() and topic is not None:
            internal.add(topic)
        # Thousands of partitions a topic: the reader's methods looked up once.
        unpack, skip_int32_array = reader.unpack, reader.skip_int32_array
        for _ in range(reader.array_length()):
            _partition_error, partition, leader = unpack(_PARTITION_LEADER)
            if version >= 7:
                unpack(_INT32)  # leader epoch
            skip_int32_array()  # replicas
            skip_int32_array()  # in-sync replicas
            if version >= 5:
                skip_int32_array()  # offline replicas
            if flexible:
                reader.end_struct()
            if topic is not None:
                leaders[TopicPartition(topic, partition)] = leader
        if version >= 8:
            reader.int32()  # topic authorized operations
        reader.end_struct()
    if 8 <= version <= 10:
        reader.int32()  # cluster authorized operations
    reader.end_struct()
    reader.expect_end()
    return Metadata(brokers, leaders, frozenset(internal))


# -- ListOffsets v0-v11 -------------------------------------------------------------------

def list_offsets_request(times: Mapping[TopicPartition, int], version: int = 0,
                         isolation_level: int = READ_UNCOMMITTED, timeout_ms: int = 30000
                         ) -> bytes:
    """One offset per partition: the first (EARLIEST) or the next to be written (LATEST; for
    READ_COMMITTED from v2 on, the last stable offset). `timeout_ms` (v10+) bounds the
    broker's own wait for tiered storage."""
    writer = Writer(version >= _FIRST_FLEXIBLE[LIST_OFFSETS])
    writer.pack(_INT32, -1)  # replica id: a consumer
    if version >= 2:
        writer.pack(_INT8, isolation_level)

    def partition(tp: TopicPartition, time: int) -> None:
        writer.pack(_INT32, tp.partition)
        if version >= 4:
            writer.pack(_INT32, -1)  # current leader epoch: not tracked
        writer.pack(_INT64, time)
        if version == 0:
            writer.pack(_INT32, 1)  # max number of offsets

    writer.topics(times, partition)
    if version >= 10:
        writer.pack(_INT32, timeout_ms)
    writer.end_struct()
    return writer.build()


def decode_list_offsets(payload: bytes | bytearray, version: int = 0
                        ) -> dict[TopicPartition, tuple[int, int | None]]:
    """Per partition: (error code, offset or None)."""
    reader = Reader(payload, version >= _FIRST_FLEXIBLE[LIST_OFFSETS])
    if version >= 2:
        reader.int32()  # throttle time
    result = {}
    for _ in range(reader.array_length()):
        topic = reader.string()
        for _ in range(reader.array_length()):
            partition, error = reader.unpack(_PARTITION_AND_ERROR)
            if version == 0:
                offsets = [reader.int64() for _ in range(reader.array_length(_INT64.size))]
                offset = offsets[0] if offsets else -1
            else:
                _timestamp, offset = reader.unpack(_TIMESTAMP_AND_OFFSET)
                if version >= 4:
                    reader.int32()  # leader epoch
            reader.end_struct()
            # No offset is no position to fetch from.
            result[TopicPartition(topic, partition)] = (error, offset if offset >= 0 else None)
        reader.end_struct()
    reader.end_struct()
    reader.expect_end()
    return result


# -- Fetch v0-v12 -------------------------------------------------------------------------

class FetchedPartition(NamedTuple):
    partition: TopicPartition
    error: int
    high_watermark: int
    last_stable_offset: int  # -1 before v4
    aborted: list[tuple[int, int]] | None  # (producer id, first offset); v4+, read_committed
    records: memoryview  # a view into the response; see `Reader.records`


class FetchResponse(NamedTuple):
    error: int  # for the whole request (v7+; 0 before)
    partitions: list[FetchedPartition]


def fetch_request(max_wait_ms: int, min_bytes: int, offsets: Mapping[TopicPartition, int],
                  max_bytes: int, version: int = 0,
                  isolation_level: int = READ_UNCOMMITTED) -> bytes:
    """Fetch from these offsets, up to `max_bytes` per partition, partitions in the order given
    (grouped by topic): from v3 on a broker fills the response in that order. The whole
    response may hold every partition's share, as v0-v2 allowed (a broker caps it with its own
    fetch.max.bytes). No fetch session (v7+): every fetch names all its partitions."""
    writer = Writer(version >= _FIRST_FLEXIBLE[FETCH])
    writer.pack(_FETCH_HEAD, -1, max_wait_ms, min_bytes)  # replica id -1: a consumer
    if version >= 3:
        writer.pack(_INT32, min(max_bytes * len(offsets), _INT32_MAX))
    if version >= 4:
        writer.pack(_INT8, isolation_level)
    if version >= 7:
        writer.pack(_FETCH_SESSION, 0, -1)

    def partition(tp: TopicPartition, offset: int) -> None:
        writer.pack(_INT32, tp.partition)
        if version >= 9:
            writer.pack(_INT32, -1)  # current leader epoch: not tracked
        writer.pack(_INT64, offset)
        if version >= 12:
            writer.pack(_INT32, -1)  # last fetched epoch: not tracked
        if version >= 5:
            writer.pack(_INT64, -1)  # log start offset: only followers send one
        writer.pack(_INT32, max_bytes)

    writer.topics(offsets, partition)
    if version >= 7:
        writer.array(0)  # forgotten topics: none outside a session
    if version >= 11:
        writer.string("")  # rack id: none, so the leader answers itself
    writer.end_struct()
    return writer.build()


def decode_fetch(version: int, payload: bytes | bytearray) -> FetchResponse:
    reader = Reader(payload, version >= _FIRST_FLEXIBLE[FETCH])
    if version >= 1:
        reader.int32()  # throttle time
    error = 0
    if version >= 7:
        error = reader.int16()
        reader.int32()  # session id
    partitions = []
    for _ in range(reader.array_length()):
        topic = reader.string()
        for _ in range(reader.array_length()):
            partition, code, high_watermark = reader.unpack(_FETCHED_PARTITION_HEAD)
            last_stable_offset, aborted = -1, None
            if version >= 4:
                last_stable_offset = reader.int64()
                if version >= 5:
                    reader.int64()  # log start offset
                aborted = reader.aborted_transactions()
                if version >= 11:
                    reader.int32()  # preferred read replica: only for a client naming a rack
            records = reader.records()
            reader.end_struct()
            partitions.append(FetchedPartition(TopicPartition(topic, partition), code,
                                               high_watermark, last_stable_offset, aborted,
                                               records))
        reader.end_struct()
    reader.end_struct()
    reader.expect_end()
    return FetchResponse(error, partitions)


# -- building blocks ----------------------------------------------------------------------

def _unsigned_varint(value: int) -> bytes:
    encoded = bytearray()
    while value >= 0x80:
        encoded.append(value & 0x7F | 0x80)
        value >>= 7
    encoded.append(value)
    return bytes(encoded)


class Writer:
    """A request body in one version's encoding: classic (int16 string and int32 array
    lengths) or compact (unsigned varint lengths + 1) with tagged fields, none of them here,
    closing every structure."""

    def __init__(self, flexible: bool) -> None:
        self._flexible = flexible
        self._parts: list[bytes] = []

    def pack(self, layout: struct.Struct, *values: int) -> None:
        self._parts.append(layout.pack(*values))

    def raw(self, data: bytes) -> None:
        self._parts.append(data)

    def int8(self, value: int) -> None:
        self._parts.append(_INT8.pack(value))

    def int16(self, value: int) -> None:
        self._parts.append(_INT16.pack(value))

    def int32(self, value: int) -> None:
        self._parts.append(_INT32.pack(value))

    def int64(self, value: int) -> None:
        self._parts.append(_INT64.pack(value))

    def string(self, text: str) -> None:
        encoded = text.encode()
        self._length(len(encoded), _INT16)
        self._parts.append(encoded)

    def nullable_string(self, text: str | None) -> None:
        if text is None:
            self._length(-1, _INT16)
        else:
            self.string(text)

    def bytes_field(self, data: bytes | None) -> None:
        """A (nullable) bytes field: an int32 length, or the compact one, then the bytes."""
        if data is None:
            self._length(-1, _INT32)
            return
        self._length(len(data), _INT32)
        self._parts.append(data)

    def array(self, count: int) -> None:
        """The length of an array; its items follow."""
        self._length(count, _INT32)

    def end_struct(self) -> None:
        if self._flexible:
            self._parts.append(_NO_TAGGED_FIELDS)

    def topics(self, per_partition: Mapping[TopicPartition, int],
               write_partition: Callable[[TopicPartition, int], None]) -> None:
        """The topics array every partition-addressed request has: partitions grouped by
        topic, each topic where its first partition comes, each partition's own fields
        written by `write_partition`."""
        groups: dict[str, list[tuple[TopicPartition, int]]] = {}
        for tp, value in per_partition.items():
            groups.setdefault(tp.topic, []).append((tp, value))
        self.array(len(groups))
        for topic, partitions in groups.items():
            self.string(topic)
            self.array(len(partitions))
            for tp, value in partitions:
                write_partition(tp, value)
                self.end_struct()
            self.end_struct()

    def build(self) -> bytes:
        return b"".join(self._parts)

    def _length(self, count: int, classic: struct.Struct) -> None:
        self._parts.append(_unsigned_varint(count + 1) if self._flexible else classic.pack(count))


class Reader:
    """A cursor over a response body, after the response header (v0, or v1 with tagged fields
    for a flexible version), in either encoding. The bytes come from the network: any read past
    the end, a length or count that the rest of the response cannot hold, a negative length
    other than null's -1, or a string that is not UTF-8 is a ProtocolError, found before
    anything is allocated or looped over for it."""

    def __init__(self, payload: bytes | bytearray, flexible: bool, start: int = 4) -> None:
        """`start`: 4 skips a response's correlation id; 0 reads bytes that have none (the
        consumer protocol's, embedded in the group requests)."""
        self._payload = payload
        self._flexible = flexible
        self._position = start
        self.end_struct()

    def unpack(self, layout: struct.Struct) -> tuple:
        try:
            values = layout.unpack_from(self._payload, self._position)
        except struct.error:
            raise ProtocolError(f"response ends early: {len(self._payload)} bytes, a field of "
                                f"{layout.size} at byte {self._position}") from None
        self._position += layout.size
        return values

    def int8(self) -> int:
        return self.unpack(_INT8)[0]

    def int16(self) -> int:
        return self.unpack(_INT16)[0]

    def int32(self) -> int:
        return self.unpack(_INT32)[0]

    def int64(self) -> int:
        return self.unpack(_INT64)[0]

    def take(self, size: int) -> bytes | bytearray:
        start = self._position
        self.skip(size)
        return self._payload[start:self._position]

    def skip(self, size: int) -> None:
        """`take`, without copying what is skipped (a replica list, a record set)."""
        if size < 0 or size > len(self._payload) - self._position:
            raise ProtocolError(f"response ends inside a field: {size} bytes announced at byte "
                                f"{self._position}, {self._remaining()} left")
        self._position += size

    def array_length(self, item_size: int = 1) -> int:
        """-1 for a null array, which holds nothing. `item_size` is the least an item takes
        (every item takes a byte at least), so that a count the rest of the response cannot
        hold fails at once rather than after that many reads."""
        count = self._length(_INT32)
        if count * item_size > self._remaining():
            raise ProtocolError(f"response announces {count} items of {item_size}+ bytes at byte "
                                f"{self._position}, {self._remaining()} bytes left")
        return count

    def nullable_string(self) -> str | None:
        size = self._length(_INT16)
        if size < 0:
            return None
        try:
            return str(self.take(size), "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"response has a string that is not UTF-8 ({exc.reason}) "
                                f"before byte {self._position}") from None

    def string(self) -> str:
        text = self.nullable_string()
        if text is None:
            raise ProtocolError("response has a null where a string belongs")
        return text

    def boolean(self) -> bool:
        return self.int8() != 0

    def bytes_field(self) -> bytes | None:
        """A (nullable) bytes field, copied out of the payload."""
        size = self._length(_INT32)
        return None if size < 0 else bytes(self.take(size))

    def records(self) -> memoryview:
        """A record set, as a view into the response (the decoder copies what it keeps, so a
        copy here would be wasted); null (which a broker may send with an error) reads as
        empty."""
        size = self._length(_INT32)
        if size < 0:
            return memoryview(b"")
        start = self._position
        self.skip(size)
        return memoryview(self._payload)[start:self._position]

    def aborted_transactions(self) -> list[tuple[int, int]] | None:
        count = self.array_length(_ABORTED_TRANSACTION.size)
        if count < 0:
            return None
        aborted = []
        for _ in range(count):
            aborted.append(self.unpack(_ABORTED_TRANSACTION))
            self.end_struct()
        return aborted

    def skip_int32_array(self) -> None:
        """`skip(4 * array_length(4))`, in one call: a metadata answer has two or three of
        these per partition, and at thousands of partitions the calls were most of its
        decoding."""
        count = self._length(_INT32)
        if count > 0:
            size = _INT32.size * count
            if size > len(self._payload) - self._position:
                raise ProtocolError(f"response announces {count} items of {_INT32.size}+ bytes "
                                    f"at byte {self._position}, {self._remaining()} bytes left")
            self._position += size

    def end_struct(self) -> None:
        """Skip the tagged fields that close every structure of a flexible version."""
        if self._flexible:
            for _ in range(self._tagged_field_count()):
                self._unsigned_varint()  # tag
                self.skip(self._unsigned_varint())

    def expect_end(self) -> None:
        """A response longer than its layout was read in another version's layout."""
        if self._position != len(self._payload):
            raise ProtocolError(f"response has {len(self._payload) - self._position} bytes "
                                "after its last field")

    def _length(self, classic: struct.Struct) -> int:
        """A length or count; -1 is null, and nothing is shorter."""
        if self._flexible:
            length = self._unsigned_varint() - 1
        else:  # `unpack`, inlined: two or three per partition of a metadata answer
            try:
                (length,) = classic.unpack_from(self._payload, self._position)
            except struct.error:
                raise ProtocolError(f"response ends early: {len(self._payload)} bytes, a field "
                                    f"of {classic.size} at byte {self._position}") from None
            self._position += classic.size
        if length < -1:
            raise ProtocolError(f"response has a length of {length} before byte {self._position}")
        return length

    def _tagged_field_count(self) -> int:
        count = self._unsigned_varint()
        if count * 2 > self._remaining():  # a tag and a size at least
            raise ProtocolError(f"response announces {count} tagged fields at byte "
                                f"{self._position}, {self._remaining()} bytes left")
        return count

    def _remaining(self) -> int:
        return len(self._payload) - self._position

    def _unsigned_varint(self) -> int:
        value = shift = 0
        while shift <= 28:
            if self._position >= len(self._payload):
                raise ProtocolError("response ends early, inside a varint")
            byte = self._payload[self._position]
            self._position += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
        raise ProtocolError("response has a varint longer than 5 bytes")

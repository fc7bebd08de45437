"""The group coordinator's requests, as bytes: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit, OffsetFetch and DescribeGroups, in the versions a member needs from
Kafka 0.9 to 4.x.

Which versions, per request (lowest-highest implemented; flexible, i.e. compact lengths and
tagged fields, from the version in brackets):

    FindCoordinator v0-v3 [v3]   v4+ batch several keys
    JoinGroup       v0-v7 [v6]   v4+ may answer MEMBER_ID_REQUIRED; v8+ add a reason
    SyncGroup       v0-v5 [v4]   v5 names the protocol on both sides
    Heartbeat       v0-v4 [v4]
    LeaveGroup      v0-v4 [v4]   v3+ name the members leaving
    OffsetCommit    v2-v8 [v8]   v0 commits to ZooKeeper, v1 was removed in Kafka 4.0
    OffsetFetch     v1-v7 [v6]   v0 reads ZooKeeper; v8+ batch several groups
    DescribeGroups  v0-v6 [v5]   v0 for a member refused (what the others use), every
                                 version for the admin commands and the exporter
    ListGroups      v0-v4 [v3]   v4 lists groups in every state

The newest version both sides know is spoken (`group_versions`), so Kafka 4.x, which no longer
answers JoinGroup v0-v1, OffsetCommit v0-v1 or OffsetFetch v0 (KIP-896), gets versions it
keeps. Brokers 0.9 predate ApiVersions and get FindCoordinator (there GroupCoordinator),
JoinGroup, SyncGroup, Heartbeat and LeaveGroup v0, OffsetCommit v2 and OffsetFetch v1: the
oldest versions that keep offsets in Kafka, the group coordinator's. DescribeGroups is asked
only once a member is refused, so it is not negotiated: v0 is answered by every broker, 0.9 to
4.x (KIP-896 kept it).

Pure encoding and decoding on the codec's `Writer` and `Reader`: every count and length of an
answer is checked before use, and an answer that does not parse is a `ProtocolError`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

from zkconsumer.kafka.errors import ChannelError
from zkconsumer.kafka.protocol.codec import (
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    SYNC_GROUP,
    ProtocolError,
    Reader,
    Writer,
    decode_api_versions,
    is_flexible,
)
from zkconsumer.kafka.protocol.consumer_protocol import PROTOCOL_TYPE
from zkconsumer.kafka.protocol.sasl import LEGACY_SASL, SaslVersions, sasl_versions
from zkconsumer.kafka.protocol.versions import (
    LEGACY_VERSIONS,
    ApiVersionsHistory,
    asks_api_versions,
    newest_common,
)
from zkconsumer.model import TopicPartition

GROUP_IMPLEMENTED = {FIND_COORDINATOR: (0, 3), JOIN_GROUP: (0, 7), SYNC_GROUP: (0, 5),
                     HEARTBEAT: (0, 4), LEAVE_GROUP: (0, 4), OFFSET_COMMIT: (2, 8),
                     OFFSET_FETCH: (1, 7)}
_GROUP_KEY_TYPE = 0  # FindCoordinator v1+: a group's coordinator, not a transaction's
_NO_LEADER_EPOCH = -1


class GroupVersions(NamedTuple):
    """The version of each group request spoken on one connection."""

    find_coordinator: int
    join_group: int
    sync_group: int
    heartbeat: int
    leave_group: int
    offset_commit: int
    offset_fetch: int

    def of(self, api_key: int) -> int:
        return self[list(GROUP_IMPLEMENTED).index(api_key)]


# A broker that predates ApiVersions (0.9) is spoken to in these.
LEGACY_GROUP_VERSIONS = GroupVersions(*(LEGACY_VERSIONS[api_key] for api_key in GROUP_IMPLEMENTED))


def group_versions(address: str, offered: Mapping[int, tuple[int, int]]) -> GroupVersions:
    """The newest version of each group request that the broker at `address` offers (its
    ApiVersions answer) and zkconsumer implements; `versions.NoCommonVersion` names the first
    request without one."""
    return GroupVersions(*(newest_common(address, api_key, ours, offered)
                           for api_key, ours in GROUP_IMPLEMENTED.items()))


class GroupNegotiation:
    """What a connection to a group coordinator speaks, as `kafka.io.opener` learns it: the
    group requests' versions and the login's. Settings that say the brokers predate 0.10
    (`kafka.api.version`) skip the question; a silence that means a 0.9 broker
    (`versions.legacy_after_silence`) is one of those, and any other failure of it is the
    connection's."""

    def __init__(self, api_version: tuple[int, ...] | None) -> None:
        self._asks = asks_api_versions(api_version)
        self._history = ApiVersionsHistory()

    def known(self, address: str) -> tuple[GroupVersions, SaslVersions] | None:
        return None if self._asks else (LEGACY_GROUP_VERSIONS, LEGACY_SASL)

    def answered(self, address: str, payload: bytes | bytearray
                 ) -> tuple[GroupVersions, SaslVersions]:
        offered = decode_api_versions(payload)
        self._history.answered(address)
        return group_versions(address, offered), sasl_versions(offered)

    def unanswered(self, address: str, failure: ChannelError
                   ) -> tuple[GroupVersions, SaslVersions]:
        self._history.unanswered(address, failure)
        return LEGACY_GROUP_VERSIONS, LEGACY_SASL

    def sasl(self, known: tuple[GroupVersions, SaslVersions]) -> SaslVersions:
        return known[1]


# -- FindCoordinator (GroupCoordinator in 0.9) ----------------------------------------------

class CoordinatorAnswer(NamedTuple):
    error: int
    node_id: int
    host: str
    port: int


def find_coordinator_request(group_id: str, version: int) -> bytes:
    writer = Writer(is_flexible(FIND_COORDINATOR, version))
    writer.string(group_id)
    if version >= 1:
        writer.int8(_GROUP_KEY_TYPE)
    writer.end_struct()
    return writer.build()


def decode_find_coordinator(payload: bytes | bytearray, version: int) -> CoordinatorAnswer:
    reader = Reader(payload, is_flexible(FIND_COORDINATOR, version))
    if version >= 1:
        reader.int32()  # throttle time
    error = reader.int16()
    if version >= 1:
        reader.nullable_string()  # error message
    answer = CoordinatorAnswer(error, reader.int32(), reader.string(), reader.int32())
    reader.end_struct()
    reader.expect_end()
    return answer


# -- JoinGroup ------------------------------------------------------------------------------

class JoinAnswer(NamedTuple):
    error: int
    generation_id: int
    protocol_name: str | None  # the assignor the coordinator chose (None with some errors)
    leader: str
    member_id: str
    members: list[tuple[str, bytes]]  # (member id, subscription); only the leader gets them


def join_group_request(group_id: str, session_timeout_ms: int, rebalance_timeout_ms: int,
                       member_id: str, protocols: Sequence[tuple[str, bytes]],
                       version: int) -> bytes:
    """Join with these (assignor, subscription) pairs, in order of preference. Before v1 the
    coordinator waits up to the session timeout for members to rejoin."""
    writer = Writer(is_flexible(JOIN_GROUP, version))
    writer.string(group_id)
    writer.int32(session_timeout_ms)
    if version >= 1:
        writer.int32(rebalance_timeout_ms)
    writer.string(member_id)
    if version >= 5:
        writer.nullable_string(None)  # group instance id: not a static member
    writer.string(PROTOCOL_TYPE)
    writer.array(len(protocols))
    for name, metadata in protocols:
        writer.string(name)
        writer.bytes_field(metadata)
        writer.end_struct()
    writer.end_struct()
    return writer.build()


def decode_join_group(payload: bytes | bytearray, version: int) -> JoinAnswer:
    reader = Reader(payload, is_flexible(JOIN_GROUP, version))
    if version >= 2:
        reader.int32()  # throttle time
    error, generation_id = reader.int16(), reader.int32()
    if version >= 7:
        reader.nullable_string()  # protocol type
    protocol_name = reader.nullable_string() if version >= 7 else reader.string()
    leader, member_id = reader.string(), reader.string()
    members = []
    for _ in range(max(0, reader.array_length(4))):  # an id's and a metadata's lengths at least
        member = reader.string()
        if version >= 5:
            reader.nullable_string()  # group instance id
        metadata = reader.bytes_field()
        reader.end_struct()
        members.append((member, metadata or b""))
    reader.end_struct()
    reader.expect_end()
    return JoinAnswer(error, generation_id, protocol_name, leader, member_id, members)


# -- SyncGroup ------------------------------------------------------------------------------

def sync_group_request(group_id: str, generation_id: int, member_id: str, protocol_name: str,
                       assignments: Mapping[str, bytes], version: int) -> bytes:
    """The leader sends every member's assignment; a follower sends none."""
    writer = Writer(is_flexible(SYNC_GROUP, version))
    writer.string(group_id)
    writer.int32(generation_id)
    writer.string(member_id)
    if version >= 3:
        writer.nullable_string(None)  # group instance id
    if version >= 5:
        writer.nullable_string(PROTOCOL_TYPE)
        writer.nullable_string(protocol_name)
    writer.array(len(assignments))
    for member, assignment in assignments.items():
        writer.string(member)
        writer.bytes_field(assignment)
        writer.end_struct()
    writer.end_struct()
    return writer.build()


def decode_sync_group(payload: bytes | bytearray, version: int) -> tuple[int, bytes]:
    """(error code, this member's assignment: empty if the leader gave it none)."""
    reader = Reader(payload, is_flexible(SYNC_GROUP, version))
    if version >= 1:
        reader.int32()  # throttle time
    error = reader.int16()
    if version >= 5:
        reader.nullable_string()  # protocol type
        reader.nullable_string()  # protocol name
    assignment = reader.bytes_field()
    reader.end_struct()
    reader.expect_end()
    return error, assignment or b""


# -- Heartbeat and LeaveGroup ---------------------------------------------------------------

def heartbeat_request(group_id: str, generation_id: int, member_id: str, version: int) -> bytes:
    writer = Writer(is_flexible(HEARTBEAT, version))
    writer.string(group_id)
    writer.int32(generation_id)
    writer.string(member_id)
    if version >= 3:
        writer.nullable_string(None)  # group instance id
    writer.end_struct()
    return writer.build()


def decode_heartbeat(payload: bytes | bytearray, version: int) -> int:
    """The error code."""
    reader = Reader(payload, is_flexible(HEARTBEAT, version))
    if version >= 1:
        reader.int32()  # throttle time
    error = reader.int16()
    reader.end_struct()
    reader.expect_end()
    return error


def leave_group_request(group_id: str, member_id: str, version: int) -> bytes:
    writer = Writer(is_flexible(LEAVE_GROUP, version))
    writer.string(group_id)
    if version >= 3:
        writer.array(1)
        writer.string(member_id)
        writer.nullable_string(None)  # group instance id
        writer.end_struct()
    else:
        writer.string(member_id)
    writer.end_struct()
    return writer.build()


def decode_leave_group(payload: bytes | bytearray, version: int) -> int:
    """The error code: the request's, else (v3+) the first member's."""
    reader = Reader(payload, is_flexible(LEAVE_GROUP, version))
    if version >= 1:
        reader.int32()  # throttle time
    error = reader.int16()
    if version >= 3:
        for _ in range(max(0, reader.array_length(4))):
            reader.string()  # member id
            reader.nullable_string()  # group instance id
            error = error or reader.int16()
            reader.end_struct()
    reader.end_struct()
    reader.expect_end()
    return error


# -- OffsetCommit and OffsetFetch -----------------------------------------------------------

def offset_commit_request(group_id: str, generation_id: int, member_id: str,
                          offsets: Mapping[TopicPartition, int], version: int) -> bytes:
    """Commit these offsets (the next to consume) in this generation; the broker keeps them
    for its own `offsets.retention.minutes`."""
    writer = Writer(is_flexible(OFFSET_COMMIT, version))
    writer.string(group_id)
    writer.int32(generation_id)
    writer.string(member_id)
    if version >= 7:
        writer.nullable_string(None)  # group instance id
    if version <= 4:
        writer.int64(-1)  # retention time: the broker's

    def partition(tp: TopicPartition, offset: int) -> None:
        writer.int32(tp.partition)
        writer.int64(offset)
        if version >= 6:
            writer.int32(_NO_LEADER_EPOCH)
        writer.nullable_string("")  # metadata

    writer.topics(offsets, partition)
    writer.end_struct()
    return writer.build()


def decode_offset_commit(payload: bytes | bytearray, version: int
                         ) -> dict[TopicPartition, int]:
    """Per partition, its error code."""
    reader = Reader(payload, is_flexible(OFFSET_COMMIT, version))
    if version >= 3:
        reader.int32()  # throttle time
    errors = {}
    for _ in range(max(0, reader.array_length(2))):
        topic = reader.string()
        for _ in range(max(0, reader.array_length(6))):
            partition, error = reader.int32(), reader.int16()
            reader.end_struct()
            errors[TopicPartition(topic, partition)] = error
        reader.end_struct()
    reader.end_struct()
    reader.expect_end()
    return errors


class FetchedOffsets(NamedTuple):
    error: int  # the request's (v2+; 0 before)
    offsets: dict[TopicPartition, tuple[int, int | None]]  # (error, offset; None: no commit)


def offset_fetch_request(group_id: str, partitions: Collection[TopicPartition] | None,
                         version: int) -> bytes:
    """The group's committed offsets of these partitions, or (None, v2+: Kafka 0.10.2 on)
    every offset it has. From v7 on the coordinator is asked to wait out offsets of
    transactions not yet decided (UNSTABLE_OFFSET_COMMIT), as the Java consumer does, rather
    than answer one that may still be aborted."""
    if partitions is None and version < 2:
        raise ValueError(f"OffsetFetch v{version} cannot ask for every partition of a group")
    writer = Writer(is_flexible(OFFSET_FETCH, version))
    writer.string(group_id)
    per_topic: dict[str, list[int]] = {}
    for tp in partitions or ():
        per_topic.setdefault(tp.topic, []).append(tp.partition)
    writer.array(-1 if partitions is None else len(per_topic))
    for topic, numbers in per_topic.items():
        writer.string(topic)
        writer.array(len(numbers))
        for number in numbers:
            writer.int32(number)
        writer.end_struct()
    if version >= 7:
        writer.int8(1)  # require stable
    writer.end_struct()
    return writer.build()


def decode_offset_fetch(payload: bytes | bytearray, version: int) -> FetchedOffsets:
    reader = Reader(payload, is_flexible(OFFSET_FETCH, version))
    if version >= 3:
        reader.int32()  # throttle time
    offsets = {}
    for _ in range(max(0, reader.array_length(2))):
        topic = reader.string()
        for _ in range(max(0, reader.array_length(16))):
            partition, offset = reader.int32(), reader.int64()
            if version >= 5:
                reader.int32()  # leader epoch
            reader.nullable_string()  # metadata
            error = reader.int16()
            reader.end_struct()
            offsets[TopicPartition(topic, partition)] = (error, offset if offset >= 0 else None)
        reader.end_struct()
    error = reader.int16() if version >= 2 else 0
    reader.end_struct()
    reader.expect_end()
    return FetchedOffsets(error, offsets)


# -- ListGroups v0-v4 ------------------------------------------------------------------------

# The least a listed group takes: two strings' lengths (compact: a byte each, and the tagged
# fields' count).
_LISTED_GROUP_SIZE = 3


class ListedGroup(NamedTuple):
    group_id: str
    protocol_type: str  # "consumer", or "" for a group that only keeps offsets
    state: str | None  # v4+; None before


def list_groups_request(version: int) -> bytes:
    """Every group the broker coordinates (from v4 on: in any state)."""
    writer = Writer(is_flexible(LIST_GROUPS, version))
    if version >= 4:
        writer.array(0)  # states filter: none
    writer.end_struct()
    return writer.build()


def decode_list_groups(payload: bytes | bytearray, version: int
                       ) -> tuple[int, list[ListedGroup]]:
    """(error code, the groups the broker coordinates)."""
    reader = Reader(payload, is_flexible(LIST_GROUPS, version))
    if version >= 1:
        reader.int32()  # throttle time
    error = reader.int16()
    groups = []
    for _ in range(max(0, reader.array_length(_LISTED_GROUP_SIZE))):
        group_id, protocol_type = reader.string(), reader.string()
        state = reader.string() if version >= 4 else None
        reader.end_struct()
        groups.append(ListedGroup(group_id, protocol_type, state))
    reader.end_struct()
    reader.expect_end()
    return error, groups


# -- DescribeGroups v0-v6 --------------------------------------------------------------------

DESCRIBE_GROUPS_VERSION = 0  # what a member asks, when refused: every broker answers it
DESCRIBE_GROUPS_IMPLEMENTED = (0, 6)
# The least a described group takes: its error, four strings' lengths, its members' count.
_DESCRIBED_GROUP_SIZE = 2 + 4 * 2 + 4
# The least a described member takes: three strings' and two byte fields' lengths.
_DESCRIBED_MEMBER_SIZE = 3 * 2 + 2 * 4
# Both in the compact encoding (a byte per length, and the tagged fields' count).
_COMPACT_GROUP_SIZE, _COMPACT_MEMBER_SIZE = 2 + 5 + 1, 5 + 1


class DescribedMember(NamedTuple):
    """A member as its coordinator describes it; the metadata and the assignment are the
    member's subscription and assignment in the group's protocol, bytes another client wrote."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


class DescribedGroupAnswer(NamedTuple):
    """A group as its coordinator describes it, fields named as Kafka's spec names them."""

    error_code: int
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str  # the assignor the members agreed on ("" during a rebalance)
    members: list[DescribedMember]


class DescribedGroup(NamedTuple):
    """A group as a member needs it described: its state, the protocol type its members
    speak and the assignor they agreed on, and how many members it has."""

    error: int
    state: str
    protocol_type: str
    protocol: str
    members: int


def describe_groups_request(group_id: str) -> bytes:
    return describe_many_groups_request([group_id], DESCRIBE_GROUPS_VERSION)


def describe_many_groups_request(group_ids: Sequence[str], version: int) -> bytes:
    """These groups, without their authorized operations (v3+), which nobody here reads."""
    writer = Writer(is_flexible(DESCRIBE_GROUPS, version))
    writer.array(len(group_ids))
    for group_id in group_ids:
        writer.string(group_id)
    if version >= 3:
        writer.int8(0)  # include authorized operations: no
    writer.end_struct()
    return writer.build()


def decode_described_groups(payload: bytes | bytearray, version: int
                            ) -> list[DescribedGroupAnswer]:
    flexible = is_flexible(DESCRIBE_GROUPS, version)
    reader = Reader(payload, flexible)
    if version >= 1:
        reader.int32()  # throttle time
    groups = []
    group_size, member_size = ((_COMPACT_GROUP_SIZE, _COMPACT_MEMBER_SIZE) if flexible
                               else (_DESCRIBED_GROUP_SIZE, _DESCRIBED_MEMBER_SIZE))
    for _ in range(max(0, reader.array_length(group_size))):
        error = reader.int16()
        if version >= 6:
            reader.nullable_string()  # error message
        name, state, protocol_type, protocol = (reader.string(), reader.string(),
                                                reader.string(), reader.string())
        members = []
        for _ in range(max(0, reader.array_length(member_size))):
            member_id = reader.string()
            instance = reader.nullable_string() if version >= 4 else None
            client_id, client_host = reader.string(), reader.string()
            metadata, assignment = reader.bytes_field(), reader.bytes_field()
            reader.end_struct()
            members.append(DescribedMember(member_id, instance, client_id, client_host,
                                           metadata or b"", assignment or b""))
        if version >= 3:
            reader.int32()  # authorized operations
        reader.end_struct()
        groups.append(DescribedGroupAnswer(error, name, state, protocol_type, protocol, members))
    reader.end_struct()
    reader.expect_end()
    return groups


def decode_describe_groups(payload: bytes | bytearray, group_id: str) -> DescribedGroup:
    """The v0 answer's description of `group_id`; ProtocolError when it has none."""
    for group in decode_described_groups(payload, DESCRIBE_GROUPS_VERSION):
        if group.group_id == group_id:
            return DescribedGroup(group.error_code, group.group_state, group.protocol_type,
                                  group.protocol_data, len(group.members))
    raise ProtocolError(f"response does not describe group {group_id!r}")

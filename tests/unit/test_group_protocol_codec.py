"""The group coordinator's requests and the consumer protocol's bytes, in every version spoken.

As for the fetcher's requests, kafka-python's implementation of Kafka's message specs is the
reference: our requests are byte for byte what it encodes, and its responses decode in ours. The
consumer protocol's bytes come from other clients and are untrusted: whatever the bytes, they
decode or raise GroupMetadataError, nothing else."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.admin import DescribeGroupsRequest, DescribeGroupsResponse
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.protocol.metadata.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from support.kafka_answers import api_versions_answer

from zkconsumer.kafka.errors import ChannelError, GroupMetadataError
from zkconsumer.kafka.protocol import codec as protocol
from zkconsumer.kafka.protocol import group_codec as group
from zkconsumer.kafka.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from zkconsumer.kafka.protocol.sasl import (
    LEGACY_SASL,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    SaslVersions,
)
from zkconsumer.kafka.protocol.versions import NoCommonVersion
from zkconsumer.model import TopicPartition as TP


def versions(api_key: int) -> range:
    lowest, highest = group.GROUP_IMPLEMENTED[api_key]
    return range(lowest, highest + 1)


def answered_by_them(response, correlation_id: int = 9) -> bytes:
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True))


def framed_by_us(api_key: int, version: int, body: bytes) -> bytes:
    return protocol.frame_request(api_key, version, 42, "zk-test", body)[4:]


# -- the consumer protocol's bytes ------------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscriptions_of_every_version_written_by_kafka_python_decode(version):
    theirs = ConsumerProtocolSubscription(
        topics=["b", "a"], user_data=b"ud", owned_partitions=[("a", [2, 0])],
        generation_id=7, rack_id="r1")
    decoded = decode_subscription(bytes(theirs.encode(version=version)), "m-1")
    assert (decoded.version, decoded.topics, decoded.user_data) == (version, ("b", "a"), b"ud")
    assert decoded.owned_partitions == (() if version < 1 else (TP("a", 2), TP("a", 0)))
    assert decoded.generation_id == (7 if version >= 2 else -1)
    assert decoded.rack_id == ("r1" if version >= 3 else None)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_our_subscriptions_decode_in_kafka_python(version):
    ours = Subscription(version, ("t",), None, (TP("t", 1),), 3, "r")
    assert encode_subscription(ours) == bytes(ConsumerProtocolSubscription(
        topics=["t"], user_data=None, owned_partitions=[("t", [1])], generation_id=3,
        rack_id="r").encode(version=version))
    assert decode_subscription(encode_subscription(ours), "me") == (
        ours if version == 3 else ours._replace(
            owned_partitions=ours.owned_partitions if version >= 1 else (),
            generation_id=3 if version >= 2 else -1, rack_id=None))


def test_a_subscription_of_a_newer_version_is_read_in_the_newest_layout_known():
    """Kafka's rule for the consumer protocol: new versions only append fields."""
    v3 = encode_subscription(Subscription(3, ("t",), None, (), -1, None))
    newer = struct.pack(">h", 9) + v3[2:] + b"appended by a future client"
    assert decode_subscription(newer, "m").topics == ("t",)


def test_assignments_round_trip_with_kafka_python():
    ours = Assignment(0, (TP("a", 0), TP("a", 3), TP("b", 1)), b"x")
    theirs = ConsumerProtocolAssignment(assigned_partitions=[("a", [0, 3]), ("b", [1])],
                                        user_data=b"x")
    assert encode_assignment(ours) == bytes(theirs.encode(version=0))
    assert decode_assignment(bytes(theirs.encode(version=1)), "group leader 'L'") == ours._replace(
        version=1)


@pytest.mark.parametrize("data, problem", [
    (b"", "ends early"),
    (b"\xff\xff", "version -1"),
    (struct.pack(">hi", 0, 0x7FFFFFFF), "announces 2147483647 items"),
    (struct.pack(">hi", 0, -1) + b"\xff\xff\xff\xff", "null array"),
    (struct.pack(">hih", 0, 1, 5) + b"ab", "ends inside a field"),
    (struct.pack(">hih", 0, 1, 1) + b"\xff" + b"\xff\xff\xff\xff", "not UTF-8"),
    (struct.pack(">hi", 0, 0) + b"\x00\x00\x00\x05ab", "ends inside a field"),
    (struct.pack(">hi", 0, 0) + b"\xff\xff\xff\xff" + b"tail", "4 bytes after"),
])
def test_malformed_subscriptions_are_one_named_error_naming_the_member(data, problem):
    with pytest.raises(GroupMetadataError,
                       match=f"^the subscription of group member 'm-7' does not parse: .*"
                             f"{problem}"):
        decode_subscription(data, "m-7")


def test_an_assignment_naming_a_negative_partition_is_malformed():
    data = struct.pack(">hih", 0, 1, 1) + b"t" + struct.pack(">ii", 1, -3) + b"\xff\xff\xff\xff"
    with pytest.raises(GroupMetadataError, match="^the assignment written by group leader "
                                                 "'L' does not parse: it names partition -3"):
        decode_assignment(data, "group leader 'L'")


VALID = [encode_subscription(Subscription(v, ("orders", "audit"), b"u", (TP("orders", 1),), 4,
                                          "r")) for v in range(4)]
VALID_ASSIGNMENTS = [encode_assignment(Assignment(0, (TP("orders", 0), TP("audit", 2)), None))]


def _mutated(data: bytes, position: int, value: int, cut: int) -> bytes:
    changed = bytearray(data)
    changed[position % len(changed)] = value
    return bytes(changed[:len(changed) - cut])


@settings(max_examples=400, deadline=None)
@given(st.one_of(
    st.binary(max_size=64),
    st.builds(_mutated, st.sampled_from(VALID + VALID_ASSIGNMENTS), st.integers(0, 200),
              st.integers(0, 255), st.integers(0, 8)),
))
def test_any_bytes_decode_or_raise_the_named_error(data):
    for decode in (decode_subscription, decode_assignment):
        try:
            decode(data, "m")
        except GroupMetadataError:
            pass


# -- versions ---------------------------------------------------------------------------------

def test_the_newest_group_versions_both_sides_speak_are_chosen():
    kafka_4 = {protocol.FIND_COORDINATOR: (0, 6), protocol.JOIN_GROUP: (2, 9),
               protocol.SYNC_GROUP: (0, 5), protocol.HEARTBEAT: (0, 4),
               protocol.LEAVE_GROUP: (0, 5), protocol.OFFSET_COMMIT: (2, 9),
               protocol.OFFSET_FETCH: (1, 9)}
    assert group.group_versions("b:9092", kafka_4) == (3, 7, 5, 4, 4, 8, 7)
    kafka_0_10_0 = {protocol.FIND_COORDINATOR: (0, 0), protocol.JOIN_GROUP: (0, 0),
                    protocol.SYNC_GROUP: (0, 0), protocol.HEARTBEAT: (0, 0),
                    protocol.LEAVE_GROUP: (0, 0), protocol.OFFSET_COMMIT: (0, 2),
                    protocol.OFFSET_FETCH: (0, 1)}
    assert group.group_versions("b:9092", kafka_0_10_0) == group.LEGACY_GROUP_VERSIONS


def test_a_broker_keeping_offsets_only_in_zookeeper_has_no_version_in_common():
    with pytest.raises(NoCommonVersion, match="^broker b:9092 speaks OffsetCommit v0-v1 and "
                                              "zkconsumer v2-v8: no version in common"):
        group.group_versions("b:9092", {**dict.fromkeys(group.GROUP_IMPLEMENTED, (0, 0)),
                                        protocol.OFFSET_COMMIT: (0, 1)})


def test_the_coordinators_connection_asks_versions_unless_told_the_brokers_predate_them():
    """What `kafka.io.opener` is told for a connection to a group coordinator: the legacy
    versions without asking for 0.9 settings or a question left unanswered until the timeout,
    the negotiated ones otherwise, and any other failure of the question is the connection's."""
    legacy = (group.LEGACY_GROUP_VERSIONS, LEGACY_SASL)
    assert group.GroupNegotiation((0, 9)).known("b:9092") == legacy
    asking = group.GroupNegotiation(None)
    assert asking.known("b:9092") is None
    assert asking.unanswered("b:9092", ChannelError("silent", timed_out=True)) == legacy
    with pytest.raises(ChannelError, match="reset"):
        asking.unanswered("b:9092", ChannelError("reset", closed_by_broker=True))
    offered = {**dict.fromkeys(group.GROUP_IMPLEMENTED, (0, 9)), SASL_HANDSHAKE: (0, 1),
               SASL_AUTHENTICATE: (0, 2)}
    versions = asking.answered("b:9092", api_versions_answer(offered))
    assert versions == (group.group_versions("b:9092", offered), SaslVersions(1, 1))
    assert asking.sasl(versions) == SaslVersions(1, 1)


# -- requests and answers against kafka-python ------------------------------------------------

@pytest.mark.parametrize("version", versions(protocol.FIND_COORDINATOR))
def test_find_coordinator(version):
    body = group.find_coordinator_request("g", version)
    assert body == bytes(FindCoordinatorRequest[version](key="g", key_type=0).encode())
    response = FindCoordinatorResponse[version](throttle_time_ms=0, error_code=0,
                                                error_message=None, node_id=3, host="h",
                                                port=9093)
    assert group.decode_find_coordinator(answered_by_them(response), version) == (0, 3, "h",
                                                                                  9093)


@pytest.mark.parametrize("version", versions(protocol.JOIN_GROUP))
def test_join_group(version):
    body = group.join_group_request("g", 10000, 60000, "m-1", [("range", b"R"),
                                                               ("roundrobin", b"RR")], version)
    theirs = JoinGroupRequest[version](
        group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=60000, member_id="m-1",
        group_instance_id=None, protocol_type="consumer", protocols=[
            JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"R"),
            JoinGroupRequest.JoinGroupRequestProtocol(name="roundrobin", metadata=b"RR")])
    assert body == bytes(theirs.encode())
    JoinGroupRequest.decode(framed_by_us(protocol.JOIN_GROUP, version, body), version=version,
                            header=True)
    member = JoinGroupResponse.JoinGroupResponseMember
    response = JoinGroupResponse[version](
        throttle_time_ms=0, error_code=0, generation_id=5, protocol_type="consumer",
        protocol_name="range", leader="m-1", member_id="m-1",
        members=[member(member_id="m-1", group_instance_id=None, metadata=b"R"),
                 member(member_id="m-2", group_instance_id=None, metadata=b"S")])
    assert group.decode_join_group(answered_by_them(response), version) == (
        0, 5, "range", "m-1", "m-1", [("m-1", b"R"), ("m-2", b"S")])


@pytest.mark.parametrize("version", versions(protocol.SYNC_GROUP))
def test_sync_group(version):
    body = group.sync_group_request("g", 5, "m-1", "range", {"m-1": b"A1", "m-2": b"A2"},
                                    version)
    item = SyncGroupRequest.SyncGroupRequestAssignment
    theirs = SyncGroupRequest[version](
        group_id="g", generation_id=5, member_id="m-1", group_instance_id=None,
        protocol_type="consumer", protocol_name="range",
        assignments=[item(member_id="m-1", assignment=b"A1"),
                     item(member_id="m-2", assignment=b"A2")])
    assert body == bytes(theirs.encode())
    response = SyncGroupResponse[version](throttle_time_ms=0, error_code=27,
                                          protocol_type="consumer", protocol_name="range",
                                          assignment=b"")
    assert group.decode_sync_group(answered_by_them(response), version) == (27, b"")


@pytest.mark.parametrize("version", versions(protocol.HEARTBEAT))
def test_heartbeat(version):
    assert group.heartbeat_request("g", 5, "m-1", version) == bytes(HeartbeatRequest[version](
        group_id="g", generation_id=5, member_id="m-1", group_instance_id=None).encode())
    response = HeartbeatResponse[version](throttle_time_ms=0, error_code=22)
    assert group.decode_heartbeat(answered_by_them(response), version) == 22


@pytest.mark.parametrize("version", versions(protocol.LEAVE_GROUP))
def test_leave_group(version):
    theirs = LeaveGroupRequest[version](group_id="g", member_id="m-1", members=[
        LeaveGroupRequest.MemberIdentity(member_id="m-1", group_instance_id=None)])
    assert group.leave_group_request("g", "m-1", version) == bytes(theirs.encode())
    response = LeaveGroupResponse[version](throttle_time_ms=0, error_code=0, members=[
        LeaveGroupResponse.MemberResponse(member_id="m-1", group_instance_id=None,
                                          error_code=25)])
    assert group.decode_leave_group(answered_by_them(response), version) == (
        25 if version >= 3 else 0)


@pytest.mark.parametrize("version", versions(protocol.OFFSET_COMMIT))
def test_offset_commit(version):
    body = group.offset_commit_request("g", 5, "m-1", {TP("b", 0): 7, TP("a", 2): 9}, version)
    topic = OffsetCommitRequest.OffsetCommitRequestTopic
    partition = topic.OffsetCommitRequestPartition
    theirs = OffsetCommitRequest[version](
        group_id="g", generation_id_or_member_epoch=5, member_id="m-1", group_instance_id=None,
        retention_time_ms=-1, topics=[
            topic(name="b", partitions=[partition(partition_index=0, committed_offset=7,
                                                  committed_leader_epoch=-1,
                                                  committed_metadata="")]),
            topic(name="a", partitions=[partition(partition_index=2, committed_offset=9,
                                                  committed_leader_epoch=-1,
                                                  committed_metadata="")])])
    assert body == bytes(theirs.encode())
    answer = OffsetCommitResponse.OffsetCommitResponseTopic
    response = OffsetCommitResponse[version](throttle_time_ms=0, topics=[
        answer(name="b", partitions=[answer.OffsetCommitResponsePartition(partition_index=0,
                                                                          error_code=0)]),
        answer(name="a", partitions=[answer.OffsetCommitResponsePartition(partition_index=2,
                                                                          error_code=22)])])
    assert group.decode_offset_commit(answered_by_them(response), version) == {
        TP("b", 0): 0, TP("a", 2): 22}


@pytest.mark.parametrize("version", versions(protocol.OFFSET_FETCH))
def test_offset_fetch(version):
    body = group.offset_fetch_request("g", [TP("b", 0), TP("a", 2), TP("b", 1)], version)
    topic = OffsetFetchRequest.OffsetFetchRequestTopic
    theirs = OffsetFetchRequest[version](group_id="g", require_stable=True, topics=[
        topic(name="b", partition_indexes=[0, 1]), topic(name="a", partition_indexes=[2])])
    assert body == bytes(theirs.encode())
    answer = OffsetFetchResponse.OffsetFetchResponseTopic
    partition = answer.OffsetFetchResponsePartition
    response = OffsetFetchResponse[version](throttle_time_ms=0, error_code=0, topics=[
        answer(name="b", partitions=[
            partition(partition_index=0, committed_offset=12, committed_leader_epoch=-1,
                      metadata="", error_code=0),
            partition(partition_index=1, committed_offset=-1, committed_leader_epoch=-1,
                      metadata=None, error_code=0)])])
    assert group.decode_offset_fetch(answered_by_them(response), version) == (
        0, {TP("b", 0): (0, 12), TP("b", 1): (0, None)})


def _described(group_id: str, members: int, state="Stable", protocol_type="consumer",
               protocol="cooperative-sticky", error=0):
    member = DescribeGroupsResponse.DescribedGroup.DescribedGroupMember
    return DescribeGroupsResponse.DescribedGroup(
        error_code=error, group_id=group_id, group_state=state, protocol_type=protocol_type,
        protocol_data=protocol, members=[
            member(member_id=f"m-{i}", group_instance_id=None, client_id="c", client_host="/h",
                   member_metadata=b"subscription", member_assignment=b"assignment")
            for i in range(members)])


def test_describe_groups_v0_against_kafka_python():
    assert group.describe_groups_request("g") == bytes(DescribeGroupsRequest[0](
        groups=["g"]).encode())
    response = DescribeGroupsResponse[0](throttle_time_ms=0, groups=[
        _described("other", 1, protocol_type="connect"), _described("g", 2)])
    assert group.decode_describe_groups(answered_by_them(response), "g") == (
        group.DescribedGroup(0, "Stable", "consumer", "cooperative-sticky", 2))


def test_a_describe_groups_answer_without_the_group_or_cut_short_is_a_protocol_error():
    response = answered_by_them(DescribeGroupsResponse[0](throttle_time_ms=0, groups=[
        _described("other", 1)]))
    with pytest.raises(protocol.ProtocolError, match="does not describe group 'g'"):
        group.decode_describe_groups(response, "g")
    with pytest.raises(protocol.ProtocolError):
        group.decode_describe_groups(response[:-1], "other")
    memberless = answered_by_them(DescribeGroupsResponse[0](throttle_time_ms=0, groups=[
        _described("other", 0)]))
    too_many = memberless[:-4] + struct.pack(">i", 10 ** 6)  # the members' count ends it
    with pytest.raises(protocol.ProtocolError, match="announces 1000000 items"):
        group.decode_describe_groups(too_many, "other")


def test_an_answer_cut_short_is_a_protocol_error():
    response = answered_by_them(HeartbeatResponse[0](error_code=0))
    with pytest.raises(protocol.ProtocolError):
        group.decode_heartbeat(response[:-1], 0)

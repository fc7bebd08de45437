"""The requests the offset store, the offset readers and the log-offsets client add to the codec
(Metadata of every topic, OffsetFetch of every partition, ListGroups), against kafka-python's
implementation of Kafka's message specs; and the versions each broker address is spoken to in,
learned once per address (`cluster_versions`)."""

from __future__ import annotations

import pytest
from kafka.protocol.admin import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.consumer.group import OffsetFetchRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from support.kafka_answers import api_versions_answer

from zkconsumer.kafka.errors import ChannelError
from zkconsumer.kafka.io.cluster import Answers
from zkconsumer.kafka.io.cluster_calls import Coordinators, describe_groups, fetch_offsets
from zkconsumer.kafka.protocol import codec as protocol
from zkconsumer.kafka.protocol import group_codec as group
from zkconsumer.kafka.protocol.cluster_versions import (
    LEGACY_CLUSTER_VERSIONS,
    RememberedVersions,
    Spoken,
)
from zkconsumer.kafka.protocol.codec import ProtocolError
from zkconsumer.kafka.protocol.sasl import LEGACY_SASL
from zkconsumer.kafka.protocol.versions import NoCommonVersion
from zkconsumer.model import TopicPartition


def answered_by_them(response) -> bytes:
    response.with_header(correlation_id=9)
    return bytes(response.encode(header=True))


@pytest.mark.parametrize("version", range(protocol.IMPLEMENTED[protocol.METADATA][1] + 1))
def test_metadata_of_every_topic_and_the_internal_ones(version):
    theirs = MetadataRequest[version](topics=None if version >= 1 else [],
                                      allow_auto_topic_creation=True,
                                      include_cluster_authorized_operations=False,
                                      include_topic_authorized_operations=False)
    assert protocol.metadata_request(None, version) == bytes(theirs.encode())
    topic = MetadataResponse.MetadataResponseTopic
    partition = topic.MetadataResponsePartition

    def described(name, internal):
        return topic(error_code=0, name=name, is_internal=internal, authorized_operations=set(),
                     partitions=[partition(error_code=0, partition_index=0, leader_id=1,
                                           leader_epoch=0, replica_nodes=[1], isr_nodes=[1],
                                           offline_replicas=[])])

    answer = answered_by_them(MetadataResponse[version](
        throttle_time_ms=0, cluster_id="c", controller_id=1, authorized_operations=set(),
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="h", port=9092,
                                                         rack=None)],
        topics=[described("__consumer_offsets", True), described("t", False)]))
    metadata = protocol.decode_metadata(answer, version)
    assert set(metadata.leaders) == {protocol.TopicPartition("__consumer_offsets", 0),
                                     protocol.TopicPartition("t", 0)}
    assert metadata.internal == (frozenset() if version == 0 else {"__consumer_offsets"})


@pytest.mark.parametrize("version", range(2, group.GROUP_IMPLEMENTED[protocol.OFFSET_FETCH][1] + 1))
def test_offset_fetch_of_every_partition_a_group_has(version):
    theirs = OffsetFetchRequest[version](group_id="g", topics=None, require_stable=True)
    assert group.offset_fetch_request("g", None, version) == bytes(theirs.encode())


def test_offset_fetch_v1_cannot_ask_for_every_partition():
    with pytest.raises(ValueError, match="v1 cannot ask for every partition"):
        group.offset_fetch_request("g", None, 1)


@pytest.mark.parametrize("version", range(0, 5))
def test_list_groups(version):
    assert group.list_groups_request(version) == bytes(
        ListGroupsRequest[version](states_filter=[]).encode())
    listed = ListGroupsResponse.ListedGroup
    answer = answered_by_them(ListGroupsResponse[version](throttle_time_ms=0, error_code=0,
                                                          groups=[
        listed(group_id="a", protocol_type="consumer", group_state="Stable"),
        listed(group_id="b", protocol_type="", group_state="Empty")]))
    error, groups = group.decode_list_groups(answer, version)
    assert error == 0
    assert groups == [("a", "consumer", "Stable" if version >= 4 else None),
                      ("b", "", "Empty" if version >= 4 else None)]
    with pytest.raises(ProtocolError):
        group.decode_list_groups(answer[:-1], version)


def test_an_address_is_asked_its_versions_once_and_a_silent_one_is_spoken_to_as_0_9():
    versions = RememberedVersions(None)
    assert versions.known("a:9092") is None
    offered = {protocol.METADATA: (0, 9), protocol.LIST_OFFSETS: (0, 5),
               protocol.OFFSET_FETCH: (0, 6), protocol.OFFSET_COMMIT: (0, 7),
               protocol.FIND_COORDINATOR: (0, 2), protocol.LIST_GROUPS: (0, 2)}
    spoken = versions.answered("a:9092", api_versions_answer(offered))
    assert versions.known("a:9092") == spoken
    assert [spoken.version(key) for key in offered] == [9, 5, 6, 7, 2, 2]
    silent = versions.unanswered("b:9092", ChannelError("no answer", timed_out=True))
    assert versions.known("b:9092") == silent
    assert {key: silent.version(key) for key in LEGACY_CLUSTER_VERSIONS} == LEGACY_CLUSTER_VERSIONS
    with pytest.raises(ChannelError):
        versions.unanswered("c:9092", ChannelError("reset"))
    versions.forget("a:9092")
    assert versions.known("a:9092") is None
    told = RememberedVersions((0, 9)).known("d:9092")
    assert told is not None and told.offered is None, "kafka.api.version 0.9: never asked"


def test_a_broker_that_once_answered_is_never_taken_for_0_9_after_a_lost_connection():
    """A dropped connection forgets the versions, but a slow answer on the next one is the
    connection's trouble, not a broker grown old."""
    versions = RememberedVersions(None)
    versions.answered("a:9092", api_versions_answer({protocol.METADATA: (0, 9)}))
    versions.forget("a:9092")
    with pytest.raises(ChannelError, match="no answer"):
        versions.unanswered("a:9092", ChannelError("no answer", timed_out=True))
    assert versions.known("a:9092") is None


def test_a_broker_without_a_version_in_common_is_named():
    spoken = RememberedVersions(None).answered("a:9092", api_versions_answer(
        {protocol.OFFSET_COMMIT: (9, 10)}))
    with pytest.raises(NoCommonVersion, match="a:9092 speaks OffsetCommit v9-v10"):
        spoken.version(protocol.OFFSET_COMMIT)


@pytest.mark.parametrize("version", range(0, group.DESCRIBE_GROUPS_IMPLEMENTED[1] + 1))
def test_describe_groups_with_their_members(version):
    assert group.describe_many_groups_request(["a", "b"], version) == bytes(
        DescribeGroupsRequest[version](groups=["a", "b"],
                                       include_authorized_operations=False).encode())
    described = DescribeGroupsResponse.DescribedGroup
    member = described.DescribedGroupMember
    answer = answered_by_them(DescribeGroupsResponse[version](throttle_time_ms=0, groups=[
        described(error_code=0, error_message=None, group_id="a", group_state="Stable",
                  protocol_type="consumer", protocol_data="range", authorized_operations=set(),
                  members=[member(member_id="m-1", group_instance_id=None, client_id="c",
                                  client_host="/h", member_metadata=b"sub",
                                  member_assignment=b"asg")]),
        described(error_code=16, error_message="moved", group_id="b", group_state="",
                  protocol_type="", protocol_data="", authorized_operations=set(), members=[])]))
    assert group.decode_described_groups(answer, version) == [
        (0, "a", "Stable", "consumer", "range",
         [("m-1", None, "c", "/h", b"sub", b"asg")]),
        (16, "b", "", "", "", [])]
    with pytest.raises(ProtocolError):
        group.decode_described_groups(answer + b"\x00", version)


class _OneCoordinator:
    def find(self, specs):
        return dict.fromkeys(specs, ("a", 1)), {}

    def forget(self, groups=None):
        pass


class _AnsweringCluster:
    """Answers every request with `answer`, as a broker offering OffsetFetch v0-v7 would."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.dropped: list = []

    def exchange_many(self, per_broker):
        answered = {}
        for address, make in per_broker.items():
            spoken = Spoken("a:1", {protocol.OFFSET_FETCH: (0, 7)}, LEGACY_SASL)
            calls = make(spoken)
            answered[address] = Answers(spoken, calls, [bytearray(self.answer) for _ in calls])
        return answered

    def drop(self, address):
        self.dropped.append(address)


def test_an_every_partition_answer_that_leaves_out_the_topics_means_naming_them():
    """Tansu answers OffsetFetch v7 for every partition of a group with no topics array at
    all (these bytes); the reader then names the partitions, as it does for a 0.9 broker."""
    cluster = _AnsweringCluster(bytes.fromhex("000000020000000000000000"))
    with pytest.raises(NoCommonVersion, match="a:1 answered OffsetFetch for every partition"):
        fetch_offsets(cluster, _OneCoordinator(), {"g": None})
    assert cluster.dropped == [("a", 1)]
    found, errors = fetch_offsets(_AnsweringCluster(bytes.fromhex("000000020000000000000000")),
                                  _OneCoordinator(), {"g": [TopicPartition("t", 0)]})
    assert found == {} and "does not parse" in str(errors["g"])


class _MovingCoordinatorCluster:
    """A cluster whose group "g" is coordinated by broker old:1, then by new:2: FindCoordinator
    names them in turn, and old:1 describes the group with NOT_COORDINATOR (as a 0.9 broker
    that stayed up does once the offsets partition's leader moved away)."""

    def __init__(self) -> None:
        self.coordinators = [("old", 1, 1), ("new", 2, 2)]
        self.described_at: list = []

    def any_broker(self):
        return ("boot", 0)

    def exchange(self, address, make):
        return self.exchange_many({address: make})[address]

    def exchange_many(self, per_broker):
        answered = {}
        for address, make in per_broker.items():
            spoken = Spoken(f"{address[0]}:{address[1]}", None, LEGACY_SASL)
            calls = make(spoken)
            answered[address] = Answers(spoken, calls, [bytearray(self._answer(address, call))
                                                        for call in calls])
        return answered

    def _answer(self, address, call) -> bytes:
        if call.api_key == protocol.FIND_COORDINATOR:
            host, port, node = self.coordinators.pop(0)
            return answered_by_them(FindCoordinatorResponse[0](
                error_code=0, node_id=node, host=host, port=port))
        self.described_at.append(address)
        described = DescribeGroupsResponse.DescribedGroup
        if address == ("old", 1):
            group = described(error_code=16, group_id="g", group_state="", protocol_type="",
                              protocol_data="", members=[])
        else:
            group = described(error_code=0, group_id="g", group_state="Stable",
                              protocol_type="consumer", protocol_data="range", members=[])
        return answered_by_them(DescribeGroupsResponse[0](groups=[group]))

    def drop(self, address):
        raise AssertionError("no connection fails here")


def test_a_group_described_by_a_broker_no_longer_its_coordinator_is_found_at_the_next_read():
    """The coordinator-moved rule for DescribeGroups, said once in the cluster client: the
    moved group's coordinator is forgotten, so the next description asks the new one."""
    cluster = _MovingCoordinatorCluster()
    coordinators = Coordinators(cluster)
    assert describe_groups(cluster, coordinators, ["g"])["g"].error_code == 16
    again = describe_groups(cluster, coordinators, ["g"])["g"]
    assert (again.error_code, again.group_state, again.protocol_data) == (0, "Stable", "range")
    assert cluster.described_at == [("old", 1), ("new", 2)]

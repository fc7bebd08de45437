"""Groups on Kafka's group coordinator in the exporter: members' assignments decoded from
untrusted bytes, which groups are listed, how a group known to ZooKeeper and to the coordinator
is shown, what the exporter remembers between scans, and a Kafka-only group judged, published
under kafka_exporter's names and Burrow's paths (fakes for the brokers)."""

from __future__ import annotations

import json
import struct
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from kafka.protocol.admin import DescribeGroupsResponse
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment
from support.log_capture import captured_logs
from support.scrape import samples

from zkconsumer.cli import cli
from zkconsumer.config import kafka_only_settings
from zkconsumer.errors import ConfigError
from zkconsumer.exporter.kafka_groups import CoordinatorWatch, merged_states
from zkconsumer.exporter.service import ExporterSettings, LagExporter
from zkconsumer.kafka.errors import GroupMetadataError, KafkaConnectionError
from zkconsumer.kafka.protocol.consumer_protocol import (
    Subscription,
    decode_assignment,
    encode_subscription,
)
from zkconsumer.lag.report import GroupState, ZookeeperOffset
from zkconsumer.lag.status import WindowRules
from zkconsumer.logs import get_logger
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import GroupOffsets
from zkconsumer.offsets.coordinator_groups import (
    CoordinatorGroup,
    CoordinatorMember,
    described_group,
    listed_groups,
)
from zkconsumer.znodes.consumers import ConsumerRegistration

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
RULES = WindowRules(samples=3, span_s=30)


def assignment(version: int, topics: dict[str, list[int]], user_data: bytes = b"") -> bytes:
    """As kafka-python's consumers encode it, so the decoder is checked against a writer that
    is not ours."""
    return ConsumerProtocolAssignment(assigned_partitions=list(topics.items()),
                                      user_data=user_data, version=version).encode()


@pytest.mark.parametrize("version", [0, 1, 3])
def test_an_assignment_decodes_as_kafka_python_wrote_it(version):
    data = assignment(version, {"t": [0, 2], "u": [1]}, user_data=b"\x00\x01")
    assert decode_assignment(data, "kafka-python").partitions == (T0, T2, TopicPartition("u", 1))


@pytest.mark.parametrize("data", [
    b"\x00",                                               # ends inside the version
    struct.pack(">hi", 0, 1_000_000),                      # a million topics in 6 bytes
    struct.pack(">hih", 0, 1, 40) + b"t",                  # a name longer than what is left
    struct.pack(">hih", 0, 1, 1) + b"t" + struct.pack(">i", 5),  # 5 partitions, none there
    struct.pack(">hih", 0, 1, 1) + b"t" + struct.pack(">ii", 1, -3),  # a negative partition
    struct.pack(">hih", 0, 1, 2) + b"\xff\xfe" + struct.pack(">i", 0),  # not UTF-8
    struct.pack(">hi", -1, 0),                             # a negative version
    struct.pack(">hi", 0, -7),                             # a count below null's -1
])
def test_assignment_bytes_that_do_not_parse_are_one_group_metadata_error(data):
    with pytest.raises(GroupMetadataError, match="^the assignment written by someone does not"):
        decode_assignment(data, "someone")


_Group = DescribeGroupsResponse.DescribedGroup
_Member = _Group.DescribedGroupMember


def member(member_id: str, data: bytes, metadata: bytes = b"") -> _Member:
    return _Member(member_id=member_id, client_id="app", client_host="/10.0.0.1",
                   member_metadata=metadata, member_assignment=data)


def described(name: str, *members: _Member, error_code: int = 0) -> _Group:
    """A DescribeGroups v0 answer's group as kafka-python decodes it from the wire, the
    assignments left as bytes (as `group_codec` leaves them)."""
    response = DescribeGroupsResponse(version=0, groups=[_Group(
        error_code=error_code, group_id=name, group_state="Stable", protocol_type="consumer",
        protocol_data="range", members=list(members))])
    return DescribeGroupsResponse.decode(response.encode(), version=0).groups[0]


def test_a_described_group_names_each_members_partitions():
    group = described_group(described("g", member("m1", assignment(0, {"t": [0, 1]})),
                                      member("m2", assignment(0, {"t": [2]}))))
    assert group.owners() == {T0: "m1", T1: "m1", T2: "m2"}
    assert group.malformed is None
    assert (group.state, group.protocol_type, group.protocol) == ("Stable", "consumer", "range")
    assert {(m.client_id, m.client_host) for m in group.members} == {("app", "/10.0.0.1")}


def test_one_malformed_assignment_skips_that_groups_owners_but_keeps_its_members():
    group = described_group(described("g", member("m1", assignment(0, {"t": [0]})),
                                      member("m2", b"\x00\x00\x7f\xff\xff\xff")))
    assert [m.member_id for m in group.members] == ["m1", "m2"]
    assert group.owners() == {}
    assert group.malformed is not None and "m2" in group.malformed
    assert [m.client_id for m in group.members] == ["app", "app"]


def test_a_members_subscription_user_data_is_kept_and_bytes_that_do_not_parse_are_none():
    marked = encode_subscription(Subscription(0, ("t",), b"zkconsumer-fence-aware:c-1"))
    group = described_group(described("g", member("m1", assignment(0, {"t": [0]}), marked),
                                      member("m2", assignment(0, {"t": [1]}), b"\x00\x00\x7f"),
                                      member("m3", assignment(0, {"t": [2]}))))
    assert [m.user_data for m in group.members] == [b"zkconsumer-fence-aware:c-1", None, None]
    assert group.owners() == {T0: "m1", T1: "m2", T2: "m3"}, "the rest as before"


def test_a_group_its_coordinator_could_not_describe_says_why():
    group = described_group(described("g", error_code=16))
    assert group.error is not None and group.members == ()


def test_only_consumer_groups_are_listed_each_once():
    answer = [{"group_id": "a", "protocol_type": "consumer"},
              {"group_id": "b", "protocol_type": ""},
              {"group_id": "a", "protocol_type": "consumer"},
              {"group_id": "connect-cluster", "protocol_type": "connect"}]
    assert listed_groups(answer) == ["a", "b"]


def live(name: str, *owned: TopicPartition, member_id: str = "m1") -> CoordinatorGroup:
    return CoordinatorGroup(name, (CoordinatorMember(member_id, tuple(owned)),))


def test_a_group_in_zookeeper_and_on_the_coordinator_is_one_group():
    registration = ConsumerRegistration.static({"t": 1}, 0)
    in_zookeeper = GroupState("both", members={"zk-member": registration}, owners={T0: "zk-0"},
                              zookeeper_offsets={T0: ZookeeperOffset(4, 1.0)})
    states = merged_states([in_zookeeper, GroupState("zk-only")],
                           {"both": live("both", T0, T1), "kafka-only": live("kafka-only", T2)})
    assert [state.name for state in states] == ["both", "kafka-only", "zk-only"]
    both, kafka_only, zk_only = states
    assert both.owners == {T0: "zk-0", T1: "m1"}, "ZooKeeper's owner first, else Kafka's"
    assert both.coordinator_members == ("m1",) and list(both.members) == ["zk-member"]
    assert both.zookeeper_offsets == in_zookeeper.zookeeper_offsets
    assert kafka_only.owners == {T2: "m1"} and kafka_only.coordinator_members == ("m1",)
    assert zk_only.coordinator_members is None


class _Listing:
    """The coordinator's groups, as the brokers list them now."""

    def __init__(self, *groups: CoordinatorGroup) -> None:
        self.groups = {group.name: group for group in groups}
        self.failure: Exception | None = None

    def __call__(self, wanted) -> dict[str, CoordinatorGroup]:
        if self.failure is not None:
            raise self.failure
        self.described = [name for name in self.groups if wanted(name)]
        return {name: self.groups[name] for name in self.described}


def watch(listing: _Listing, regex: str | None = None) -> CoordinatorWatch:
    return CoordinatorWatch(listing, regex, get_logger("zkconsumer.tests.kafka_groups"))


def test_the_watch_takes_only_groups_matching_the_regex_and_describes_no_other():
    listing = _Listing(live("orders-1"), live("audit"))
    assert list(watch(listing, "orders-.*").groups()) == ["orders-1"]
    assert listing.described == ["orders-1"]


def test_a_failed_listing_serves_the_last_one_and_says_so_once_until_it_works_again():
    listing = _Listing(live("g", T0))
    watched = watch(listing)
    assert watched.groups()["g"].owners() == {T0: "m1"}
    listing.failure = KafkaConnectionError("brokers down")
    with captured_logs() as logs:
        assert watched.groups()["g"].owners() == {T0: "m1"}
        assert watched.groups()["g"].owners() == {T0: "m1"}
        listing.failure = None
        watched.groups()
    assert [(line["log_level"], line["event"][:24]) for line in logs] == [
        ("warning", "cannot list the groups o"), ("info", "listing the groups on Ka")]


def test_a_group_the_coordinator_could_not_describe_keeps_its_last_description():
    listing = _Listing(live("g", T0))
    watched = watch(listing)
    watched.groups()
    listing.groups["g"] = CoordinatorGroup("g", error="DescribeGroups error 16")
    assert watched.groups()["g"].owners() == {T0: "m1"}


def test_a_group_no_longer_listed_stays_while_kafka_holds_offsets_for_it():
    """As a 0.9 coordinator drops a group whose last member left: the group is still there to
    be seen stopping, without members, until its offsets are gone."""
    listing = _Listing(live("g", T0))
    watched = watch(listing)
    watched.groups()
    del listing.groups["g"]
    assert watched.groups()["g"].members == ()
    watched.forget_stopped({"g": {T0: 5}})
    assert "g" in watched.groups()
    watched.forget_stopped({"g": {}})
    assert watched.groups() == {}


def test_a_malformed_assignment_is_said_once_naming_the_group():
    malformed = CoordinatorGroup("g", (CoordinatorMember("m1", ()),),
                                 malformed="member m1: response ends early")
    watched = watch(_Listing(malformed))
    with captured_logs() as logs:
        for _ in range(3):
            watched.groups()
    warnings = [line for line in logs if line["log_level"] == "warning"]
    assert len(warnings) == 1 and warnings[0]["group"] == "g"


class _Brokers:
    """A topic t of 3 partitions whose log ends grow by 2 each scan, and a Kafka-only group
    whose consumer commits 1 more each scan on partition 0 and nothing on 1 (stopped there)."""

    def __init__(self) -> None:
        self.scans = 0
        self.listing = _Listing(live("kafka-group", T0))
        self.every_asked: list[tuple[list[str], int]] = []

    def topics(self):
        return SimpleNamespace(all_topics=("t",), partitions=lambda topic: [0, 1, 2])

    def log_ends(self, partitions):
        return dict.fromkeys(partitions, 10 + 2 * self.scans)

    def kafka_offsets(self, wanted):
        return GroupOffsets({}, {})

    def every_kafka_offset(self, groups, every_partition):
        self.scans += 1
        self.every_asked.append((list(groups), len(list(every_partition))))
        return GroupOffsets({"kafka-group": {T0: self.scans, T1: 3}}, {})

    def coordinator_groups(self, wanted):
        return self.listing(wanted)


def test_a_lagging_kafka_group_shows_warn_and_err_in_burrow_and_kafka_exporters_metrics():
    brokers = _Brokers()
    clock = [1000.0]
    exporter = LagExporter(_NoZookeeperGroups(), brokers,
                           ExporterSettings(10, RULES, kafka_groups=True), clock=lambda: clock[0])
    for _ in range(3):
        assert exporter.scan_once()
        clock[0] += 10
    report = exporter.reports()["kafka-group"]
    by_partition = {p.partition: p for p in report.partitions}
    assert by_partition[0].status.name == "WARN", "moving, lag never shrinking"
    assert by_partition[1].status.name == "OK", "its window is not older than the span yet"
    assert (by_partition[0].owner, by_partition[1].owner) == ("m1", None)
    assert brokers.every_asked[0] == (["kafka-group"], 3)
    status = json.loads(exporter.route("/v3/kafka/local/consumer/kafka-group/status").body)
    assert status["status"]["status"] == "WARN"
    for _ in range(2):
        assert exporter.scan_once()
        clock[0] += 10
    status = json.loads(exporter.route("/v3/kafka/local/consumer/kafka-group/status").body)
    assert status["status"]["status"] == "ERR"
    assert [(p["partition"], p["status"]) for p in status["status"]["partitions"]] == [
        (0, "WARN"), (1, "STOP")]

    found = samples(exporter.metrics_text().decode())
    labels = (("consumergroup", "kafka-group"), ("partition", "1"), ("topic", "t"))
    assert found[("kafka_consumergroup_lag", labels)] == 20 - 3
    assert found[("kafka_consumergroup_current_offset", labels)] == 3
    assert found[("kafka_consumergroup_lag_sum", (("consumergroup", "kafka-group"),
                                                  ("topic", "t")))] == (20 - 5) + (20 - 3)
    assert found[("kafka_consumergroup_current_offset_sum", (("consumergroup", "kafka-group"),
                                                             ("topic", "t")))] == 5 + 3
    assert found[("kafka_consumergroup_members", (("consumergroup", "kafka-group"),))] == 1
    assert found[("zkconsumer_group_members", (("group", "kafka-group"),))] == 1
    assert ("kafka_consumergroup_lag", (("consumergroup", "kafka-group"), ("partition", "2"),
                                        ("topic", "t"))) not in found, "no offset there"


def test_kafka_groups_are_not_asked_for_when_turned_off_or_without_kafka_offsets():
    for settings in (ExporterSettings(10, RULES), ExporterSettings(
            10, RULES, kafka_offsets=False, kafka_groups=True)):
        brokers = _Brokers()
        brokers.listing.failure = AssertionError("listed")
        exporter = LagExporter(_NoZookeeperGroups(), brokers, settings, clock=lambda: 1000.0)
        assert exporter.scan_once()
        assert exporter.reports() == {} and brokers.every_asked == []


class _NoZookeeperGroups:
    def groups(self) -> list[GroupState]:
        return []


def test_without_zookeeper_only_kafka_settings_are_taken():
    version, properties = kafka_only_settings(["kafka.api.version=0.10.2",
                                               "kafka.security.protocol=SSL"])
    assert version == (0, 10, 2) and properties == {"security.protocol": "SSL"}
    with pytest.raises(ConfigError, match="zookeeper.auth.digest"):
        kafka_only_settings(["zookeeper.auth.digest=u:p"])


@pytest.mark.parametrize(("args", "said"), [
    ([], "give --zookeeper, or --bootstrap-server"),
    (["--bootstrap-server", "127.0.0.1:1", "--no-kafka-groups"], "needs --kafka-groups and --kafka-offsets"),
])
def test_an_exporter_with_nothing_to_watch_is_refused_in_one_line(args, said):
    result = CliRunner().invoke(cli, ["exporter", *args], env={
        "ZKCONSUMER_ZOOKEEPER_CONNECT": "", "ZKCONSUMER_BOOTSTRAP_SERVER": ""})
    assert result.exit_code == 2 and said in result.output

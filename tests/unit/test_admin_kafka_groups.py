"""`group list` and `group describe` on groups Kafka's group coordinator knows, without a
cluster: the rows and views built from the coordinator's description (pure), and how a group
only Kafka knows is described, a malformed assignment included (a fake admin context)."""

from __future__ import annotations

import time
from contextlib import ExitStack

import pytest

from zkconsumer.admin.context import AdminContext, Silent
from zkconsumer.admin.group_view import (
    coordinator_view,
    cutover_of,
    kafka_only_partitions,
    list_row,
    look_once,
    uncommitted,
    uncommitted_note,
    where_of,
)
from zkconsumer.admin.groups import describe_group
from zkconsumer.errors import ZkConsumerError
from zkconsumer.exporter.kafka_groups import merged_states
from zkconsumer.lag.report import GroupState, ZookeeperOffset, with_offsets
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import GroupOffsets
from zkconsumer.offsets.coordinator_groups import CoordinatorGroup, CoordinatorMember
from zkconsumer.znodes.fence import Fence

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
U0 = TopicPartition("u", 0)
STABLE = CoordinatorGroup(
    "g", (CoordinatorMember("m-1", (T1, T0), "app", "/10.0.0.1"),
          CoordinatorMember("m-2", (U0,), "app", "/10.0.0.2")),
    state="Stable", protocol_type="consumer", protocol="range")


def test_where_a_group_lives():
    assert where_of(True, None) == "zookeeper"
    assert where_of(False, STABLE) == "kafka"
    assert where_of(False, None) == "kafka", "only offsets in Kafka"
    assert where_of(True, STABLE) == "both"


def test_a_kafka_groups_list_row_counts_its_coordinator_members_and_lag():
    [state] = merged_states([], {"g": STABLE})
    layout = {"g": with_offsets([T0, T1, U0], state)}
    [report] = look_once([state], layout, {T0: 10, T1: 10, U0: 4}, {"g": {T0: 7, U0: 4}},
                         window_s=60, now=time.time())
    row = list_row("g", "kafka", STABLE, state, report)
    assert row == {"group": "g", "where": "kafka", "state": "Stable", "members": 2,
                   "zookeeper_offsets": 0, "owned_partitions": 3, "storage": "kafka",
                   "lag": 3, "status": "OK", "cutover": None}


def test_a_consumed_partition_with_nothing_committed_yet_is_explained():
    """Right after a member starts, an owned partition shows '-' for offset and lag until the
    member's first commit; the note says so, and when that comes."""
    [state] = merged_states([], {"g": STABLE})
    [report] = look_once([state], {"g": with_offsets([T0, T1, U0], state)},
                         {T0: 10, T1: 10, U0: 4}, {"g": {T0: 7, U0: 4}}, window_s=60,
                         now=time.time())
    assert uncommitted(report) == ["t-1"]
    note = uncommitted_note("group g", uncommitted(report))
    assert note == ("group g: 1 owned partition(s) with nothing committed yet (t-1): offsets "
                    "and lag show '-' until the member commits, every auto.commit.interval.ms "
                    "(60 s by default) and when it stops")


def test_a_group_row_shows_where_its_cutover_stands():
    [state] = merged_states([], {"g": STABLE})
    draining, switched = Fence("kafka", "draining", 1), Fence("zookeeper", "switched", 1)
    assert list_row("g", "both", STABLE, state, None, draining)["cutover"] == "draining to kafka"
    assert cutover_of(switched) == "switched to zookeeper"
    assert cutover_of(None) is None


def test_a_zookeeper_group_has_no_coordinator_state_and_an_unread_one_no_figures():
    state = GroupState("z", zookeeper_offsets={T0: ZookeeperOffset(4, time.time())})
    [report] = look_once([state], {"z": [T0]}, {T0: 6}, {}, window_s=60, now=time.time())
    row = list_row("z", "zookeeper", None, state, report)
    assert (row["where"], row["state"], row["lag"], row["storage"]) == \
        ("zookeeper", None, 2, "zookeeper")
    unread = list_row("z", "both", STABLE, None, None)
    assert (unread["state"], unread["members"], unread["lag"]) == ("Stable", None, None)


def test_the_coordinators_view_gives_each_member_its_partitions_per_topic():
    view = coordinator_view(STABLE)
    assert (view["state"], view["protocol_type"], view["protocol"], view["malformed"]) == \
        ("Stable", "consumer", "range", None)
    assert view["members"] == [
        {"member_id": "m-1", "client_id": "app", "client_host": "/10.0.0.1",
         "assigned": {"t": [0, 1]}},
        {"member_id": "m-2", "client_id": "app", "client_host": "/10.0.0.2",
         "assigned": {"u": [0]}}]


def test_a_kafka_only_groups_partitions_are_those_assigned_and_those_committed():
    assert kafka_only_partitions([T0, U0], [T2, T0]) == [T0, T2, U0]
    assert kafka_only_partitions([T0, U0], [T2], topics=["t"]) == [T0, T2]


class KafkaOnly(AdminContext):
    """An admin context on brokers alone whose answers are given: a topic t of three
    partitions, a coordinator's group and the group's offsets in Kafka."""

    def __init__(self, coordinator: CoordinatorGroup | None,
                 offsets: dict[TopicPartition, int]) -> None:
        super().__init__(None, "broker:9092", None, {}, ExitStack(), Notes())
        self._coordinator = coordinator
        self._offsets = offsets

    def coordinator_group(self, name):
        return self._coordinator

    def every_kafka_offset(self, groups):
        return GroupOffsets({name: self._offsets for name in groups if self._offsets}, {})

    def partitions_of(self, topics):
        return [tp for tp in (T0, T1, T2) if tp.topic in set(topics)]

    def log_offsets(self):
        return type("Ends", (), {"latest": staticmethod(
            lambda partitions: {tp: 10 for tp in partitions})})()


class Notes(Silent):
    def __init__(self) -> None:
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        self.notes.append(text)


def test_a_kafka_only_group_is_described_with_its_owners_offsets_and_lag():
    found = describe_group(KafkaOnly(STABLE, {T0: 4}), "g", (), window_s=60)
    assert (found.where, found.members, found.coordinator["state"]) == ("kafka", [], "Stable")
    assert [(p["partition"], p["kafka_offset"], p["lag"], p["owner"])
            for p in found.partitions if p["topic"] == "t"] == \
        [(0, 4, 6, "m-1"), (1, None, None, "m-1"), (2, None, None, None)]
    assert found.missing_topics == ["u"], "assigned, but no such topic"


def test_a_malformed_assignment_is_one_note_naming_group_and_member_and_the_rest_shown():
    malformed = CoordinatorGroup(
        "g", (CoordinatorMember("m-1", (), "app", "/10.0.0.1"),),
        malformed="the assignment written by the leader of group 'g' for member 'm-1' does "
                  "not parse: it ends early", state="Stable", protocol_type="consumer",
        protocol="range")
    ctx = KafkaOnly(malformed, {T0: 4})
    found = describe_group(ctx, "g", (), window_s=60)
    [note] = ctx.reporter.notes
    assert "group g" in note and "'m-1'" in note
    assert found.coordinator["members"][0]["assigned"] == {}
    assert [(p["partition"], p["lag"], p["owner"]) for p in found.partitions] == \
        [(0, 6, None), (1, None, None), (2, None, None)]


def test_a_group_neither_on_the_coordinator_nor_with_offsets_is_unknown():
    with pytest.raises(ZkConsumerError, match="^no group g on Kafka's group coordinator$"):
        describe_group(KafkaOnly(None, {}), "g", (), window_s=60)


def test_a_group_the_coordinator_forgot_is_described_from_its_offsets():
    """A 0.9 coordinator forgets a group when its last member leaves; its offsets stay."""
    found = describe_group(KafkaOnly(None, {T1: 9}), "g", (), window_s=60)
    assert (found.where, found.coordinator) == ("kafka", None)
    assert [(p["partition"], p["lag"]) for p in found.partitions] == \
        [(0, None), (1, 1), (2, None)]


def test_without_zookeeper_an_operation_on_zookeeper_groups_is_one_line():
    with pytest.raises(ZkConsumerError, match="give --zookeeper"):
        KafkaOnly(None, {}).zk  # noqa: B018 - the property is the behaviour


def test_a_group_its_coordinator_could_not_describe_is_one_note_and_its_offsets_shown():
    ctx = KafkaOnly(CoordinatorGroup("g", error="DescribeGroups error 16"), {T0: 4})
    found = describe_group(ctx, "g", (), window_s=60)
    [note] = ctx.reporter.notes
    assert "could not describe" in note and "error 16" in note
    assert [(p["partition"], p["lag"]) for p in found.partitions][0] == (0, 6)

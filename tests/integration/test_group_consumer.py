"""The group consumer on the real cluster: consuming, owners, offsets, and sharing a group with
reference Scala consumers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.kafka import end_offsets, produce
from support.offset_checker import offset_checker_rows
from support.ownership import assignment_from_registrations, settled_ownership
from support.waiting import wait_until

from zkconsumer.zk.group_state import read_members, read_owners
from zkconsumer.znodes.consumers import decode_offset
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration


def _zk_offsets(zk, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    paths = GroupPaths(group)
    result = {}
    for p in range(partitions):
        path = paths.offset(topic, p)
        result[p] = decode_offset(path, zk.get(path)[0]) if zk.exists(path) else None
    return result


def _values(n: int, prefix: str = "m") -> list[bytes]:
    return [f"{prefix}-{i:06d}".encode() for i in range(n)]


def test_one_member_consumes_everything_owns_every_partition_and_leaves_cleanly(
        cluster, zk, topic_factory, unique_name, members):
    topic = topic_factory(partitions=4)
    sent = _values(200)
    produce(cluster, topic, sent, partitions=4)
    group = unique_name("solo")

    member = members(group, topics={topic: 2})
    wait_until(lambda: len(member.values()) >= 200, timeout=60, message="200 messages")

    assert sorted(member.values()) == sorted(sent)
    owners = read_owners(zk, group)
    assert {tp.partition for tp in owners} == {0, 1, 2, 3}
    assert set(owners.values()) == {f"{member.consumer_id}-0", f"{member.consumer_id}-1"}
    member.stop()
    assert _zk_offsets(zk, group, topic, 4) == end_offsets(cluster, topic, 4)
    assert read_owners(zk, group) == {}
    assert read_members(zk, group) == {}


def test_a_restarted_member_resumes_at_the_committed_offsets(cluster, topic_factory,
                                                             unique_name, members):
    topic = topic_factory(partitions=2)
    produce(cluster, topic, _values(50, "first"), partitions=2)
    group = unique_name("resume")
    first = members(group, topics={topic: 1})
    wait_until(lambda: len(first.values()) >= 50, timeout=60, message="first 50")
    first.stop()

    produce(cluster, topic, _values(30, "second"), partitions=2)
    second = members(group, topics={topic: 1})
    wait_until(lambda: len(second.values()) >= 30, timeout=60, message="next 30")
    assert sorted(second.values()) == sorted(_values(30, "second"))


def _reference_values(consumer) -> list[bytes]:
    lines = Path(consumer.output).read_bytes().splitlines()
    return [line for line in lines if re.fullmatch(rb"i-\d{6}", line)]


@pytest.mark.reference
@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_two_members_share_a_group_with_two_reference_consumers(
        cluster, zk, topic_factory, unique_name, members, reference_consumers, strategy):
    topic = topic_factory(partitions=12)
    group = unique_name(strategy)
    settings = {"partition.assignment.strategy": strategy, "auto.offset.reset": "smallest"}
    ours = [members(group, topics={topic: 1}, **settings) for _ in range(2)]
    theirs = [reference_consumers(group, topic=topic, properties=settings) for _ in range(2)]

    registered, owners = settled_ownership(zk, group, [topic], member_count=4)

    assert assignment_from_registrations(zk, strategy, registered) == owners
    assert {m.consumer_id for m in ours} <= set(registered)

    sent = [f"i-{i:06d}".encode() for i in range(1200)]
    produce(cluster, topic, sent, partitions=12)

    def everything_arrived():
        got = [v for m in ours for v in m.values()] + [v for r in theirs for v in _reference_values(r)]
        return got if len(got) >= len(sent) else None

    got = wait_until(everything_arrived, timeout=90, message="all 1200 messages")
    assert sorted(got) == sorted(sent), "some message was lost or consumed twice"
    assert all(m.values() for m in ours), "a zkconsumer member consumed nothing"


@pytest.mark.reference
def test_offsets_in_zookeeper_are_what_the_reference_offset_checker_reports(
        cluster, zk, topic_factory, unique_name, members, work_root):
    topic = topic_factory(partitions=3)
    produce(cluster, topic, _values(90), partitions=3)
    group = unique_name("checker")
    member = members(group, topics={topic: 1})
    wait_until(lambda: len(member.values()) >= 90, timeout=60, message="90 messages")
    member.connector.commit_offsets()

    rows = offset_checker_rows(cluster, group, topic, work_root / "tools")
    assert rows == {p: (30, 30, 0) for p in range(3)}

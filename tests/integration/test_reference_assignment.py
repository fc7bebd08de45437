"""Our assignors, fed the registrations real Scala consumers wrote, choose the owners they chose."""

from __future__ import annotations

import pytest
from support.waiting import wait_until

from zkconsumer.assignment import assign, consumer_of_thread, resolve_member_subscription
from zkconsumer.zk.group_state import read_members, read_owners
from zkconsumer.zk.registry import list_topics, read_topic
from zkconsumer.znodes.paths import GroupPaths

pytestmark = [pytest.mark.integration, pytest.mark.reference]

MEMBERS = 3


def _settled_ownership(zk, group: str, topics: list[str]):
    """A snapshot in which the rebalance that followed the last join has finished.

    All partitions are owned, only by registered members, every member owns something, and two
    reads a second apart agree.
    """
    partitions = {t: read_topic(zk, t).partition_numbers() for t in topics}
    expected = {(t, p) for t, ps in partitions.items() for p in ps}
    previous = None

    def probe():
        nonlocal previous
        members = read_members(zk, group)
        owners = read_owners(zk, group)
        owning = {consumer_of_thread(thread) for thread in owners.values()}
        complete = (len(members) == MEMBERS and set(owners) == expected
                    and owning == set(members))
        snapshot = (members, owners) if complete else None
        settled = snapshot is not None and snapshot == previous
        previous = snapshot
        return snapshot if settled else None

    return wait_until(probe, timeout=120, interval=1.0,
                      message=f"{MEMBERS} reference consumers to own all of {topics}")


def _our_assignment(zk, strategy: str, members) -> dict:
    all_topics = list_topics(zk)
    subscriptions = [
        resolve_member_subscription(consumer_id, registration.pattern, registration.subscription,
                                    all_topics, exclude_internal_topics=True)
        for consumer_id, registration in members.items()
    ]
    subscribed = {t for s in subscriptions for t in s.topic_streams}
    partitions = {t: read_topic(zk, t).partition_numbers() for t in subscribed}
    return assign(strategy, subscriptions, partitions)


def _assert_registrations_reencode_identically(zk, group, members):
    paths = GroupPaths(group)
    for consumer_id, registration in members.items():
        raw, _ = zk.get(paths.member(consumer_id))
        assert registration.encode() == raw


def test_range_assignment_matches_three_reference_consumers(zk, topic_factory, unique_name,
                                                            reference_consumers):
    topic = topic_factory(partitions=10)
    group = unique_name("range")
    for _ in range(MEMBERS):
        reference_consumers(group, topic=topic)

    members, owners = _settled_ownership(zk, group, [topic])

    assert _our_assignment(zk, "range", members) == owners
    assert sorted(len([o for o in owners.values() if consumer_of_thread(o) == m]) for m in members) \
        == [3, 3, 4]
    _assert_registrations_reencode_identically(zk, group, members)


def test_roundrobin_with_a_whitelist_matches_three_reference_consumers(zk, topic_factory,
                                                                       unique_name,
                                                                       reference_consumers):
    prefix = unique_name("rr")
    first = topic_factory(partitions=5, name=f"{prefix}-a")
    second = topic_factory(partitions=7, name=f"{prefix}-b")
    topic_factory(partitions=2, name=f"{prefix}x-other")
    group = unique_name("roundrobin")
    for _ in range(MEMBERS):
        reference_consumers(group, whitelist=f"{prefix}-.*",
                            properties={"partition.assignment.strategy": "roundrobin"})

    members, owners = _settled_ownership(zk, group, [first, second])

    assert all(r.pattern == "white_list" for r in members.values())
    assert _our_assignment(zk, "roundrobin", members) == owners
    _assert_registrations_reencode_identically(zk, group, members)

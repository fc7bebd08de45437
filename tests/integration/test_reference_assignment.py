"""Our assignors, fed the registrations real Scala consumers wrote, choose the owners they chose."""

from __future__ import annotations

import pytest
from support.ownership import assignment_from_registrations, settled_ownership

from zkconsumer.assignment import consumer_of_thread
from zkconsumer.znodes.paths import GroupPaths

pytestmark = [pytest.mark.integration, pytest.mark.reference]

MEMBERS = 3


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

    members, owners = settled_ownership(zk, group, [topic], MEMBERS)

    assert assignment_from_registrations(zk, "range", members) == owners
    per_member = sorted(sum(consumer_of_thread(o) == m for o in owners.values()) for m in members)
    assert per_member == [3, 3, 4]
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

    members, owners = settled_ownership(zk, group, [first, second], MEMBERS)

    assert all(r.pattern == "white_list" for r in members.values())
    assert assignment_from_registrations(zk, "roundrobin", members) == owners
    _assert_registrations_reencode_identically(zk, group, members)

"""`range` and `roundrobin` as the Java consumer (0.9 on) computes them for a group that Kafka
coordinates: the leader's function from every member's subscribed topics and the partition
counts to each member's partitions.

These are not the ZooKeeper consumer's strategies of the same names (`assignors`): there each
member deals to consumer *threads* and roundrobin orders partitions by a hash; here the group's
leader deals to *members*, ordered by member id as Java's `String.compareTo` orders them, and
roundrobin walks the partitions sorted by topic and number. A group shared with Java or
kafka-python members must split its partitions exactly as their leader would, whichever member
leads, so both follow the reference step by step. Pure, and independent of input order.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from zkconsumer.assignment.identity import java_string_sort_key
from zkconsumer.assignment.range_deal import deal_ranges
from zkconsumer.errors import AssignmentError
from zkconsumer.model import TopicPartition

GroupAssignment = dict[str, list[TopicPartition]]


def _members_in_order(subscriptions: Mapping[str, Collection[str]]) -> list[str]:
    return sorted(subscriptions, key=java_string_sort_key)


def range_assign(subscriptions: Mapping[str, Collection[str]],
                 partition_counts: Mapping[str, int]) -> GroupAssignment:
    """Per topic, the members subscribed to it in member id order each get a run of
    consecutive partitions, the first `count % members` one more than the rest. Topics with
    no known partitions are left out."""
    assignment: GroupAssignment = {member: [] for member in subscriptions}
    members = _members_in_order(subscriptions)
    for topic in sorted({topic for topics in subscriptions.values() for topic in topics}):
        partitions = range(partition_counts.get(topic, 0))
        subscribed = [member for member in members if topic in subscriptions[member]]
        for member, run in deal_ranges(partitions, subscribed):
            assignment[member].extend(TopicPartition(topic, partition) for partition in run)
    return assignment


def roundrobin_assign(subscriptions: Mapping[str, Collection[str]],
                      partition_counts: Mapping[str, int]) -> GroupAssignment:
    """Every partition of every subscribed topic, sorted by topic then number, dealt to the
    members in member id order, going round; a member not subscribed to a partition's topic
    is passed over for it (and keeps its turn for the next)."""
    assignment: GroupAssignment = {member: [] for member in subscriptions}
    members = _members_in_order(subscriptions)
    turn = 0
    for topic in sorted({topic for topics in subscriptions.values() for topic in topics}):
        for partition in range(partition_counts.get(topic, 0)):
            while topic not in subscriptions[members[turn % len(members)]]:
                turn += 1
            assignment[members[turn % len(members)]].append(TopicPartition(topic, partition))
            turn += 1
    return assignment


ASSIGNORS = {"range": range_assign, "roundrobin": roundrobin_assign}


def group_assign(strategy: str, subscriptions: Mapping[str, Collection[str]],
                 partition_counts: Mapping[str, int]) -> GroupAssignment:
    """The group's assignment by the strategy the coordinator chose."""
    try:
        assignor = ASSIGNORS[strategy]
    except KeyError:
        raise AssignmentError(f"unknown partition.assignment.strategy {strategy!r}; use range "
                              "or roundrobin") from None
    return assignor(subscriptions, partition_counts)

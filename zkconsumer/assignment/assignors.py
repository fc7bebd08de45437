"""`range` and `roundrobin`, exactly as the reference consumer computes them.

Each member computes the WHOLE group's assignment from the same registrations and partition
lists and keeps its own slice; the functions are pure, and their output must not depend on the
order of their inputs, or members would claim each other's partitions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from zkconsumer.assignment.identity import consumer_of_thread, java_string_sort_key, thread_ids
from zkconsumer.assignment.java_hash import java_string_hash
from zkconsumer.assignment.range_deal import deal_ranges
from zkconsumer.assignment.topic_filter import topic_filter_for
from zkconsumer.errors import AssignmentError
from zkconsumer.model import TopicPartition

STATIC = "static"


@dataclass(frozen=True)
class MemberSubscription:
    """The topics one member consumes (wildcards already resolved) and its streams per topic."""

    consumer_id: str
    topic_streams: Mapping[str, int]

    def __post_init__(self) -> None:
        object.__setattr__(self, "topic_streams", MappingProxyType(dict(self.topic_streams)))


def resolve_member_subscription(consumer_id: str, pattern: str, subscription: Mapping[str, int],
                                all_topics: Iterable[str],
                                exclude_internal_topics: bool = True) -> MemberSubscription:
    """A registration's topics: as written when static, else its filter applied to all topics."""
    if pattern == STATIC or not subscription:
        return MemberSubscription(consumer_id, dict(subscription))
    (regex, streams), = subscription.items()
    topic_filter = topic_filter_for(pattern, regex)
    return MemberSubscription(consumer_id, {
        topic: streams for topic in all_topics
        if topic_filter.allows(topic, exclude_internal_topics)
    })


def _threads_per_topic(members: Iterable[MemberSubscription]) -> dict[str, list[str]]:
    per_topic: dict[str, list[str]] = {}
    for member in members:
        for topic, streams in member.topic_streams.items():
            per_topic.setdefault(topic, []).extend(thread_ids(member.consumer_id, streams))
    return {topic: sorted(threads, key=java_string_sort_key)
            for topic, threads in per_topic.items()}


def range_assign(members: Iterable[MemberSubscription],
                 partitions_for_topic: Mapping[str, Sequence[int]],
                 consumer_id: str | None = None) -> dict[TopicPartition, str]:
    """Per topic, consecutive runs of partitions to threads in order; the first threads get one
    extra when the division is uneven. With `consumer_id`, only that consumer's runs (a member
    of a group of hundreds over thousands of partitions needs its own tens, not the whole
    assignment, at every rebalance attempt)."""
    assignment: dict[TopicPartition, str] = {}
    for topic, threads in _threads_per_topic(members).items():
        partitions = sorted(partitions_for_topic.get(topic, ()))
        if not partitions:
            continue
        for thread, run in deal_ranges(partitions, threads):
            if consumer_id is not None and consumer_of_thread(thread) != consumer_id:
                continue
            for partition in run:
                assignment[TopicPartition(topic, partition)] = thread
    return assignment


def roundrobin_assign(members: Iterable[MemberSubscription],
                      partitions_for_topic: Mapping[str, Sequence[int]],
                      consumer_id: str | None = None) -> dict[TopicPartition, str]:
    """All partitions of all topics, ordered by the Java hash of `[topic,partition]`, dealt to
    the sorted threads in turn.

    The reference sorts with a stable sort whose input order comes from a hash map, so true
    hash ties are ordered arbitrarily there; here they fall back to (topic, partition).
    """
    per_topic = _threads_per_topic(members)
    if not per_topic:
        return {}
    (first_topic, first_threads), *others = sorted(per_topic.items())
    for topic, threads in others:
        if set(threads) != set(first_threads):
            raise AssignmentError(
                "roundrobin needs every member to subscribe to the same topics with the same "
                f"number of streams, but topic {first_topic!r} is consumed by "
                f"{_describe(first_threads)} and topic {topic!r} by {_describe(threads)}; "
                "use partition.assignment.strategy=range"
            )
    partitions = sorted(
        (TopicPartition(topic, p) for topic in per_topic for p in partitions_for_topic.get(topic, ())),
        key=lambda tp: (java_string_hash(f"[{tp.topic},{tp.partition}]"), tp.topic, tp.partition),
    )
    threads = first_threads
    assignment = {tp: threads[i % len(threads)] for i, tp in enumerate(partitions)}
    return assignment if consumer_id is None else partitions_owned_by(assignment, consumer_id)


def _describe(threads: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for thread in threads:
        consumer = consumer_of_thread(thread)
        counts[consumer] = counts.get(consumer, 0) + 1
    return ", ".join(f"{c} ({n} stream{'s' if n > 1 else ''})" for c, n in sorted(counts.items()))


_STRATEGIES = {"range": range_assign, "roundrobin": roundrobin_assign}


def assign(strategy: str, members: Iterable[MemberSubscription],
           partitions_for_topic: Mapping[str, Sequence[int]],
           consumer_id: str | None = None) -> dict[TopicPartition, str]:
    """The group's assignment, or with `consumer_id` that consumer's slice of it."""
    try:
        assignor = _STRATEGIES[strategy]
    except KeyError:
        raise AssignmentError(
            f"unknown partition.assignment.strategy {strategy!r}; use range or roundrobin"
        ) from None
    return assignor(list(members), partitions_for_topic, consumer_id)


def partitions_owned_by(assignment: Mapping[TopicPartition, str],
                        consumer_id: str) -> dict[TopicPartition, str]:
    """One member's slice of the group's assignment."""
    return {tp: thread for tp, thread in assignment.items()
            if consumer_of_thread(thread) == consumer_id}

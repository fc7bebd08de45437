"""What one member must do in a rebalance, decided without any I/O.

Every member computes the whole group's assignment from the same ZooKeeper snapshot and takes its
own slice. Unlike the reference consumer, which releases everything and claims it all again, a
member here only releases what moves away and only claims what is new to it, so partitions that
stay keep flowing through the rebalance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from zkconsumer.assignment import (
    assign,
    resolve_member_subscription,
)
from zkconsumer.model import TopicPartition
from zkconsumer.znodes.consumers import ConsumerRegistration


@dataclass(frozen=True)
class GroupSnapshot:
    """The ZooKeeper state an assignment is computed from."""

    members: Mapping[str, ConsumerRegistration]
    all_topics: Sequence[str]
    partitions_for_topic: Mapping[str, Sequence[int]]

    def subscribed_topics(self, exclude_internal_topics: bool) -> set[str]:
        topics: set[str] = set()
        for consumer_id, registration in self.members.items():
            topics.update(resolve_member_subscription(
                consumer_id, registration.pattern, registration.subscription, self.all_topics,
                exclude_internal_topics).topic_streams)
        return topics


def target_for_member(snapshot: GroupSnapshot, consumer_id: str, strategy: str,
                      exclude_internal_topics: bool) -> dict[TopicPartition, str]:
    """This member's slice of the group assignment: partition -> owning thread id."""
    subscriptions = [
        resolve_member_subscription(member, registration.pattern, registration.subscription,
                                    snapshot.all_topics, exclude_internal_topics)
        for member, registration in snapshot.members.items()
    ]
    return assign(strategy, subscriptions, snapshot.partitions_for_topic, consumer_id)


@dataclass(frozen=True)
class RebalancePlan:
    """Partitions to release, to claim, and to keep (with an unchanged owning thread)."""

    release: Mapping[TopicPartition, str]
    claim: Mapping[TopicPartition, str]
    keep: Mapping[TopicPartition, str]

    @property
    def changes_anything(self) -> bool:
        return bool(self.release or self.claim)


def plan_rebalance(owned: Mapping[TopicPartition, str],
                   target: Mapping[TopicPartition, str]) -> RebalancePlan:
    """Compare what we own with our target slice.

    A partition that stays with this member but moves to another of its threads is released
    and claimed again, because its owner znode names the thread.
    """
    keep = {tp: thread for tp, thread in owned.items() if target.get(tp) == thread}
    release = {tp: thread for tp, thread in owned.items() if tp not in keep}
    claim = {tp: thread for tp, thread in target.items() if tp not in keep}
    return RebalancePlan(release=release, claim=claim, keep=keep)

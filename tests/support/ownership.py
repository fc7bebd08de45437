"""Reading a group's settled ownership and recomputing it from the members' registrations."""

from __future__ import annotations

from collections.abc import Callable

from support.waiting import wait_until
from zkconsumer.assignment import assign, consumer_of_thread, resolve_member_subscription
from zkconsumer.zk.group_state import read_members, read_owners
from zkconsumer.zk.registry import list_topics, read_topic


def settled_ownership(zk, group: str, topics: list[str], member_count: int,
                      timeout: float = 120, partitions: dict[str, list[int]] | None = None,
                      alive: Callable[[], None] = lambda: None):
    """(members, owners) once the rebalance that followed the last join has finished.

    All partitions are owned, only by registered members, every member owns something, and two
    reads a second apart agree. `partitions` (per topic) is for topics `zk` has no registry of;
    `alive` raises to end the wait early, e.g. when a member process died.
    """
    partitions = partitions or {t: read_topic(zk, t).partition_numbers() for t in topics}
    expected = {(t, p) for t, ps in partitions.items() for p in ps}
    previous = None

    def probe():
        nonlocal previous
        alive()
        members = read_members(zk, group)
        owners = read_owners(zk, group)
        owning = {consumer_of_thread(thread) for thread in owners.values()}
        complete = (len(members) == member_count and set(owners) == expected
                    and owning == set(members))
        snapshot = (members, owners) if complete else None
        settled = snapshot is not None and snapshot == previous
        previous = snapshot
        return snapshot if settled else None

    return wait_until(probe, timeout=timeout, interval=1.0,
                      message=f"{member_count} members to own all of {topics}")


def assignment_from_registrations(zk, strategy: str, members,
                                  partitions: dict[str, list[int]] | None = None) -> dict:
    """What the assignor computes from the registrations the members wrote; `partitions` (per
    topic) is for topics `zk` has no registry of."""
    all_topics = sorted(partitions) if partitions else list_topics(zk)
    subscriptions = [
        resolve_member_subscription(consumer_id, registration.pattern, registration.subscription,
                                    all_topics, exclude_internal_topics=True)
        for consumer_id, registration in members.items()
    ]
    subscribed = {t for s in subscriptions for t in s.topic_streams}
    if partitions is None:
        partitions = {t: read_topic(zk, t).partition_numbers() for t in subscribed}
    return assign(strategy, subscriptions, {t: partitions[t] for t in subscribed})

"""Groups on Kafka's group coordinator watched beside ZooKeeper's: which ones, and how a group
known to both is shown.

Watched: every consumer group the brokers list (ListGroups; see `coordinator_groups` for which
protocols count), with its members and their partitions from its coordinator (DescribeGroups),
and its lag counted from every offset it committed in Kafka (OffsetFetch). A group whose
assignments do not parse is still watched, without owners, and said once.

A group in both places (under /consumers and on the coordinator: members committing to both
with dual commit, or a group moving from ZooKeeper's consumer to Kafka's under the same name) is
one group: its ZooKeeper members and the coordinator's both count, a partition's owner is its
ZooKeeper owner or else the coordinator's, and its lag counts from the larger offset, as for
any dual-commit group.

A 0.9 broker lists a group only while it has members (the coordinator drops a group the moment
its last member leaves; later brokers keep it, Empty, while it has offsets). So a group once
listed stays watched while Kafka holds any offset for it: one that stops is seen stopping
(STOP) rather than vanishing. A group already without members when the exporter starts is not
seen on 0.9, unless ZooKeeper knows it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from zkconsumer.errors import ZkConsumerError, describe_error
from zkconsumer.lag.report import GroupState
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.coordinator_groups import CoordinatorGroup
from zkconsumer.throttled_log import RepeatedCondition, RetryWarnings
from zkconsumer.znodes.fence import Fence


class NoZookeeper:
    """The ZooKeeper groups of an exporter given no ZooKeeper (only `--bootstrap-server`):
    none, so it watches the coordinator's groups alone."""

    def start(self, timeout_s: float, stop: object = None) -> bool:
        return True

    def groups(self) -> list[GroupState]:
        return []

    def fences(self) -> dict[str, Fence]:
        return {}

    def close(self) -> None:
        pass


def merged_states(zookeeper: Iterable[GroupState], coordinator: Mapping[str, CoordinatorGroup]
                  ) -> list[GroupState]:
    """ZooKeeper's groups and the coordinator's, a name in both as one group (see the module's
    doc), sorted by name."""
    states = {state.name: state for state in zookeeper}
    for name, group in coordinator.items():
        state = states.get(name) or GroupState(name)
        states[name] = replace(state, owners={**group.owners(), **state.owners},
                               coordinator_members=tuple(m.member_id for m in group.members))
    return [states[name] for name in sorted(states)]


class CoordinatorWatch:
    """The coordinator's groups from one scan to the next: what the brokers list now, what they
    listed before and Kafka still holds offsets for, and, when listing fails, the last
    listing (a group then keeps its owners, so one failed request is not taken for every
    member gone)."""

    def __init__(self, read: Callable[[Callable[[str], bool]], Mapping[str, CoordinatorGroup]],
                 group_regex: str | None, logger: Any) -> None:
        """`read(wanted)` lists the coordinator's groups and describes those `wanted`."""
        self._read = read
        self._wanted = re.compile(group_regex) if group_regex else None
        self._unlisted = RepeatedCondition(
            logger, "cannot list the groups on Kafka's group coordinator; the last listing is "
            "used", "listing the groups on Kafka's group coordinator again")
        # A malformed assignment stays until its group rebalances: said once.
        self._malformed = RetryWarnings(logger, every_s=math.inf)
        self._known: dict[str, CoordinatorGroup] = {}
        self._listed: set[str] = set()

    def groups(self) -> dict[str, CoordinatorGroup]:
        try:
            fresh = {name: group for name, group in self._read(self._watched).items()
                     if self._watched(name)}
        except ZkConsumerError as exc:  # the cluster client's errors among them
            self._unlisted.occurred(error=describe_error(exc))
            return dict(self._known)
        self._unlisted.cleared()
        for name, group in fresh.items():
            if group.malformed is not None:
                self._malformed.report((name, group.malformed), "a group's member assignments "
                                       "do not parse; its partitions are shown without owners",
                                       group=name, error=group.malformed)
            if group.error is not None and name in self._known:
                fresh[name] = self._known[name]  # undescribed this time: as last described
        stopped = {name: CoordinatorGroup(name) for name in self._known if name not in fresh}
        self._known = {**stopped, **fresh}
        self._listed = set(fresh)
        return dict(self._known)

    def _watched(self, name: str) -> bool:
        return self._wanted is None or self._wanted.fullmatch(name) is not None

    def forget_stopped(self, kafka_offsets: Mapping[str, Mapping[TopicPartition, int]]) -> None:
        """Groups no longer listed go once Kafka holds no offset for them."""
        self._known = {name: group for name, group in self._known.items()
                       if name in self._listed or kafka_offsets.get(name)}

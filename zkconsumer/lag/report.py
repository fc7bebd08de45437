"""One scan's view of every group: lag, owners and status per partition (pure).

The numbers come from elsewhere (ZooKeeper's cache, the brokers); this module only decides
which partitions belong to a group, which offset its lag is counted from, and what the window
says about it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from zkconsumer.assignment.assignors import resolve_member_subscription
from zkconsumer.lag.history import Key, OffsetHistory
from zkconsumer.lag.status import Observation, Status, group_status, partition_status
from zkconsumer.model import TopicPartition
from zkconsumer.znodes.consumers import ConsumerRegistration


@dataclass(frozen=True)
class ZookeeperOffset:
    offset: int
    written_at: float  # the znode's mtime, seconds since the epoch


@dataclass(frozen=True)
class GroupState:
    """What ZooKeeper holds for one group under /consumers/<group>, and, for a group Kafka's
    group coordinator knows, the member ids it lists (None: the coordinator does not know the
    group); `owners` are then those of either."""

    name: str
    members: Mapping[str, ConsumerRegistration] = field(default_factory=dict)
    owners: Mapping[TopicPartition, str] = field(default_factory=dict)
    zookeeper_offsets: Mapping[TopicPartition, ZookeeperOffset] = field(default_factory=dict)
    coordinator_members: tuple[str, ...] | None = None

    def topics(self, all_topics: Iterable[str]) -> set[str]:
        """Topics the group has anything for: offsets, owners, and what its members subscribe
        to (a wildcard member's filter applied to `all_topics`, as its rebalance does)."""
        all_topics = list(all_topics)
        topics = {tp.topic for tp in self.owners} | {tp.topic for tp in self.zookeeper_offsets}
        for consumer_id, registration in self.members.items():
            topics.update(resolve_member_subscription(
                consumer_id, registration.pattern, registration.subscription,
                all_topics).topic_streams)
        return topics


@dataclass(frozen=True)
class PartitionReport:
    topic: str
    partition: int
    zookeeper_offset: int | None
    kafka_offset: int | None
    log_end: int | None
    # Log end minus the offset a member would resume at; None: no committed offset, or no log
    # end. Negative when the offset is past the log end (a truncated log), as the reference's
    # ConsumerOffsetChecker shows it: the member will reset, and that is worth seeing.
    lag: int | None
    owner: str | None
    status: Status
    window: tuple[Observation, ...]
    completeness: float  # how much of a full window has been seen (Burrow's `complete`)


@dataclass(frozen=True)
class GroupReport:
    group: str
    members: int  # registered in ZooKeeper, or in Kafka's group coordinator
    partitions: tuple[PartitionReport, ...]
    status: Status  # the worst partition status
    completeness: float  # the share of its judged partitions whose window is full (Burrow's)
    coordinator_members: int | None = None  # None: a group Kafka's coordinator does not know

    @property
    def total_lag(self) -> int:
        return sum(max(0, p.lag) for p in self.partitions if p.lag is not None)


@dataclass(frozen=True)
class ScanInputs:
    """Everything one scan read: ZooKeeper's groups, each group's partitions (see
    `group_partitions`), the log ends and the offsets Kafka holds per group."""

    groups: Iterable[GroupState]
    partitions: Mapping[str, list[TopicPartition]]
    log_ends: Mapping[TopicPartition, int]
    kafka_offsets: Mapping[str, Mapping[TopicPartition, int]]


def group_partitions(state: GroupState, all_topics: Iterable[str],
                     partitions_of: Callable[[str], list[int] | None]) -> list[TopicPartition]:
    """Every partition of the group's topics that exists, plus any it has an offset for."""
    return with_offsets(registered_partitions(state, all_topics, partitions_of), state)


def registered_partitions(state: GroupState, all_topics: Iterable[str],
                          partitions_of: Callable[[str], list[int] | None]
                          ) -> list[TopicPartition]:
    """Every partition of the group's topics that exists: those the brokers can give log ends
    and offsets for."""
    return sorted({TopicPartition(topic, partition) for topic in state.topics(all_topics)
                   for partition in partitions_of(topic) or ()})


def with_offsets(partitions: Iterable[TopicPartition], state: GroupState
                 ) -> list[TopicPartition]:
    """The partitions and any the group has a ZooKeeper offset for (an offset outlives a
    deleted topic)."""
    return sorted(set(partitions) | set(state.zookeeper_offsets))


def resume_offset(zookeeper: ZookeeperOffset | None, kafka: int | None
                  ) -> tuple[int, float | None] | None:
    """The offset a member would resume at (the larger of the two, as with dual commit) and
    when it was written, if ZooKeeper's copy is that offset and so has an mtime."""
    if zookeeper is not None and (kafka is None or zookeeper.offset >= kafka):
        return zookeeper.offset, zookeeper.written_at
    return None if kafka is None else (kafka, None)


def scan(inputs: ScanInputs, history: OffsetHistory, now: float) -> list[GroupReport]:
    """Record this scan's observations in `history` and judge every partition of every group."""
    groups = sorted(inputs.groups, key=lambda state: state.name)
    seen: dict[Key, tuple[int, int, float | None]] = {}
    for state in groups:
        kafka = inputs.kafka_offsets.get(state.name, {})
        for tp in inputs.partitions.get(state.name, ()):
            resume = resume_offset(state.zookeeper_offsets.get(tp), kafka.get(tp))
            log_end = inputs.log_ends.get(tp)
            if resume is not None and log_end is not None:
                seen[(state.name, tp)] = (resume[0], log_end, resume[1])
    history.record(now, seen, {state.name for state in groups})
    return [_judge(state, inputs.partitions.get(state.name, []), inputs, history, now)
            for state in groups]


def _judge(state: GroupState, partitions: list[TopicPartition], inputs: ScanInputs,
           history: OffsetHistory, now: float) -> GroupReport:
    kafka = inputs.kafka_offsets.get(state.name, {})
    reports = []
    for tp in partitions:
        key = (state.name, tp)
        # A partition this scan read no offset or log end for has no lag now, but keeps its
        # window and the verdict it gives: one unread scan (a malformed znode, a leader gone
        # for a moment) must not turn a stopped group OK, and back again at the next scan.
        window = history.window(key)
        zookeeper = state.zookeeper_offsets.get(tp)
        owner = state.owners.get(tp)
        status = partition_status(window, history.rules, now=now, owned=owner is not None,
                                  commits=history.commits(key))
        seen = history.rules.completeness(window)
        reports.append(PartitionReport(
            tp.topic, tp.partition, None if zookeeper is None else zookeeper.offset,
            kafka.get(tp), inputs.log_ends.get(tp),
            window[-1].log_end - window[-1].offset
            if window and history.read_last_scan(key) else None,
            owner, status, window, seen))
    judged = [p for p in reports if p.status != Status.NOTFOUND]
    coordinator = state.coordinator_members
    return GroupReport(state.name, len(state.members) + len(coordinator or ()), tuple(reports),
                       group_status(p.status for p in judged),
                       sum(p.completeness == 1.0 for p in judged) / len(judged) if judged else 1.0,
                       None if coordinator is None else len(coordinator))

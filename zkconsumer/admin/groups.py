"""Groups listed with their lag and one described per partition, whether ZooKeeper holds them
(legacy groups), Kafka's group coordinator, or both; a legacy group deleted.

Listing and describing take one look and keep going without what they cannot read (a group's
unparsable znodes, a topic's log ends, Kafka's offsets, the coordinator's groups): the rest is
still worth showing, and the reporter is told what is missing and why.

A group only Kafka knows is shown with every partition it has an offset for (OffsetFetch for
all of them; a 0.9 broker answers only partitions named, so it is asked about every partition
of the cluster) and those its members are assigned. A 0.9 coordinator forgets a group when
its last member leaves: such a group is still described from its offsets, but not listed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from kazoo.exceptions import NoNodeError

from zkconsumer.admin.context import AdminContext
from zkconsumer.admin.group_view import (
    coordinator_view,
    cutover_view,
    group_status_name,
    kafka_only_partitions,
    list_row,
    look_once,
    member_rows,
    partition_rows,
    uncommitted,
    uncommitted_note,
    where_of,
)
from zkconsumer.errors import ZkConsumerError, ZnodeDataError
from zkconsumer.exporter.kafka_groups import merged_states
from zkconsumer.fetch.log_offsets import log_ends_of_each_topic
from zkconsumer.lag.report import GroupState, with_offsets
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import GroupOffsets, KafkaReadError
from zkconsumer.offsets.coordinator_groups import CoordinatorGroup
from zkconsumer.zk.group_state import (
    committed_partitions,
    list_groups,
    read_fences,
    read_group_state,
    read_group_states,
    read_members,
)
from zkconsumer.znodes.fence import Fence
from zkconsumer.znodes.paths import GroupPaths


class LiveGroupError(ZkConsumerError):
    """The command would change a group that has registered members."""


class UnknownGroupError(ZkConsumerError):
    """The group named exists nowhere: not under /consumers, not on Kafka's group
    coordinator, and it has no offsets in Kafka."""

    @classmethod
    def of(cls, ctx: AdminContext, name: str) -> UnknownGroupError:
        """The one line every command says it in."""
        return cls(f"no group {name} under /consumers or on Kafka's group coordinator"
                   if ctx.has_zookeeper else f"no group {name} on Kafka's group coordinator")


def require_group(ctx: AdminContext, name: str) -> None:
    """The rule every command that reads or moves one group follows (describe, delete,
    cutover, offsets diff, spark-json, export and migrate of named groups): a group exists if
    ZooKeeper has /consumers/<group> or members of it, Kafka's group coordinator knows it, or
    it has offsets in Kafka; otherwise UnknownGroupError. (`offsets reset` and `import` may
    write a group's first offsets, so they do not ask.)"""
    if ctx.has_zookeeper and ctx.zk.exists(GroupPaths(name).root):  # its members' too
        return
    if ctx.coordinator_group(name) is None and not _every_offset_of(ctx, name):
        raise UnknownGroupError.of(ctx, name)


@dataclass(frozen=True)
class GroupDescription:
    group: str
    where: str                  # `where_of`
    status: str | None
    partitions: list[dict]      # `partition_rows`
    members: list[dict]         # `member_rows`: those registered in ZooKeeper
    coordinator: dict | None    # `coordinator_view`; None for a group the coordinator lacks
    missing_topics: list[str]   # asked for or subscribed to, but not in the topic registry
    cutover: dict | None = None  # `cutover_view` of the group's fence; None: none


@dataclass(frozen=True)
class GroupDeletion:
    root: str
    offsets: int    # committed offsets removed (or that would be, in a dry run)
    deleted: bool


def list_groups_with_lag(ctx: AdminContext, window_s: float) -> list[dict]:
    """A `list_row` for every group under /consumers, in ZooKeeper's order, then for every
    group only Kafka's group coordinator knows, by name."""
    names = list_groups(ctx.zk) if ctx.has_zookeeper else []
    read = _read_groups(ctx, names)
    in_zookeeper = [state for state, _fence in read.values() if state is not None]
    coordinator, kafka_reachable = _listed_on_coordinator(ctx)
    for group in coordinator.values():
        _note_trouble(ctx, group)
    kafka_only = sorted(set(coordinator) - set(names))
    states = {state.name: state for state in merged_states(in_zookeeper, coordinator)}
    registered = _registered_partitions(ctx, states)
    kafka = _kafka_offsets(ctx, {name: partitions for name, partitions in registered.items()
                                 if name not in kafka_only}, kafka_only) \
        if kafka_reachable else {}
    for name in kafka_only:  # and every partition it has an offset for, if it exists
        registered[name] = kafka_only_partitions(registered[name],
                                                 _existing(ctx, kafka.get(name, {})))
    layout = {name: with_offsets(registered[name], state) for name, state in states.items()}
    log_ends = _readable_log_ends(ctx, registered)
    reports = {report.group: report for report in look_once(
        states.values(), layout, log_ends, kafka, window_s, time.time())}
    for report in reports.values():
        if partitions := uncommitted(report):
            ctx.reporter.note(uncommitted_note(f"group {report.group}", partitions))
    return [list_row(name, where_of(name in names, coordinator.get(name)),
                     coordinator.get(name), states.get(name), reports.get(name),
                     read[name][1] if name in read else None)
            for name in [*names, *kafka_only]]


def _listed_on_coordinator(ctx: AdminContext) -> tuple[dict[str, CoordinatorGroup], bool]:
    """The coordinator's groups, none (with a note) when they cannot be listed; and whether
    Kafka could be asked at all (if not, the group offsets are not asked for either). Without
    ZooKeeper there is nothing else to list: the error is the answer."""
    try:
        return ctx.coordinator_groups(), True
    except ZkConsumerError as exc:
        if not ctx.has_zookeeper:
            raise
        reachable = not isinstance(exc, KafkaReadError)
        ctx.reporter.note(f"no groups of Kafka's group coordinator"
                          f"{'' if reachable else ' and no Kafka offsets'}: {exc}")
        return {}, reachable


def _read_groups(ctx: AdminContext, names: list[str]
                 ) -> dict[str, tuple[GroupState | None, Fence | None]]:
    """Every group's state and cutover fence, all groups read together (a few pipelined
    rounds of ZooKeeper requests for all of them, not a few per group). A group whose znodes
    do not parse (edited by hand, say) is listed without figures, with a note; the others are
    still worth listing."""
    if not names:
        return {}
    with ctx.reporter.progress(len(names), "reading groups") as step:
        states = read_group_states(ctx.zk, names)
        fences = read_fences(ctx.zk, names)
        step(len(names))
    read = {}
    for name in names:
        state = states[name]
        if isinstance(state, ZnodeDataError):
            ctx.reporter.note(f"group {name} is listed without figures: {state}")
        read[name] = (None if isinstance(state, ZnodeDataError) else state,
                      _noted_fence(ctx, name, fences[name]))
    return read


def _readable_fence(ctx: AdminContext, name: str) -> Fence | None:
    """The group's cutover fence; one that does not parse is left out, with a note."""
    return _noted_fence(ctx, name, read_fences(ctx.zk, [name])[name])


def _noted_fence(ctx: AdminContext, name: str, fence: Fence | ZnodeDataError | None
                 ) -> Fence | None:
    if isinstance(fence, ZnodeDataError):
        ctx.reporter.note(f"group {name} is shown without its cutover fence: {fence}")
        return None
    return fence


def _registered_partitions(ctx: AdminContext, states: dict[str, GroupState]
                           ) -> dict[str, list[TopicPartition]]:
    """The partitions of every topic each group has anything for."""
    try:
        # Every group's topics read at once; each group's are then at hand.
        ctx.partitions_of({topic for state in states.values() for topic in state.topics(())})
        return {name: ctx.partitions_of(state.topics(())) for name, state in states.items()}
    except ZkConsumerError as exc:
        ctx.reporter.note(f"no lag, since the topics could not be read: {exc}")
        return {name: [] for name in states}


def _existing(ctx: AdminContext, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    """Those of the partitions whose topic has them now (none when topics cannot be read,
    which `_registered_partitions` has said already)."""
    partitions = list(partitions)
    try:
        return sorted(set(partitions) & set(ctx.partitions_of({tp.topic for tp in partitions})))
    except ZkConsumerError:
        return []


def _kafka_offsets(ctx: AdminContext, named: dict[str, list[TopicPartition]],
                   kafka_only: list[str]) -> dict[str, dict[TopicPartition, int]]:
    """The groups' Kafka offsets: of the partitions `named`, and every offset of the groups
    only Kafka knows. Read before the log ends, so a consumer committing in between cannot show
    a lag below zero. A group Kafka cannot answer for is listed with ZooKeeper's offsets alone,
    with a note."""
    try:
        answers = [ctx.kafka_offsets_of_groups(named), ctx.every_kafka_offset(kafka_only)]
    except ZkConsumerError as exc:
        ctx.reporter.note(f"lag from ZooKeeper's offsets only: {exc}")
        return {}
    answer = GroupOffsets({name: offsets for one in answers for name, offsets in one.found.items()},
                          {name: why for one in answers for name, why in one.failed.items()})
    if answer.failed:
        names = ", ".join(sorted(answer.failed)[:5])
        ctx.reporter.note(f"lag from ZooKeeper's offsets only for {len(answer.failed)} group(s) "
                          f"Kafka could not answer for ({names}): "
                          f"{next(iter(answer.failed.values()))}")
    return answer.found


def _readable_log_ends(ctx: AdminContext, registered: dict[str, list[TopicPartition]]
                       ) -> dict[TopicPartition, int]:
    """Log ends of the partitions that exist (an offset outlives a deleted topic, and the
    brokers know nothing of it). Without them (no broker answers) the list is still worth
    having, with a note saying why lag is missing."""
    existing = sorted({tp for partitions in registered.values() for tp in partitions})
    try:
        return _log_ends(ctx, existing)
    except ZkConsumerError as exc:
        ctx.reporter.note(f"no lag, since the log ends could not be read: {exc}")
        return {}


def _log_ends(ctx: AdminContext, partitions: list[TopicPartition]
              ) -> dict[TopicPartition, int]:
    """The partitions' log ends; those of a topic whose log ends cannot be read (no leader,
    say) are left out, with a note, rather than costing every other topic its lag."""
    ends = log_ends_of_each_topic(ctx.log_offsets().latest, partitions)
    if ends.unread_topics:
        ctx.reporter.note(f"no lag for topic {', '.join(ends.unread_topics[:5])}, whose log "
                          f"ends could not be read: {ends.error}")
    return ends.found


def describe_group(ctx: AdminContext, name: str, topics: tuple[str, ...] | list[str],
                   window_s: float) -> GroupDescription:
    """Every partition of the group's topics (or of `topics`), and those it has offsets for
    whose topic is gone; Kafka is asked about all of them, for groups whose offsets live only
    there. A group under /consumers is shown with what the coordinator says of it too, if
    anything; one that is not, from the coordinator and Kafka's offsets alone."""
    in_zookeeper, zookeeper_state = _zookeeper_side(ctx, name)
    coordinator = _coordinator_side(ctx, name, in_zookeeper)
    [state] = merged_states([zookeeper_state], {} if coordinator is None
                            else {name: coordinator})
    if in_zookeeper:
        wanted = set(topics) or state.topics(())
        registered = ctx.partitions_of(wanted)
        partitions = sorted(set(registered) | {tp for tp in state.zookeeper_offsets
                                               if tp.topic in wanted})
        kafka = ctx.kafka_offsets(name, partitions)
    else:
        kafka = _every_offset_of(ctx, name)
        if coordinator is None and not kafka:
            raise UnknownGroupError.of(ctx, name)
        wanted = set(topics) or state.topics(()) | {tp.topic for tp in kafka}
        registered = ctx.partitions_of(wanted)
        partitions = kafka_only_partitions(registered, kafka, wanted)
    if coordinator is not None:
        _note_trouble(ctx, coordinator)
    [report] = look_once([state], {name: partitions}, _log_ends(ctx, registered),
                         {name: kafka}, window_s, time.time())
    rows = partition_rows(report)
    if pending := uncommitted(report):
        ctx.reporter.note(uncommitted_note(f"group {name}", pending))
    missing = sorted(wanted - {tp.topic for tp in registered})
    if topics and not rows:
        raise ZkConsumerError(f"no topic {', '.join(missing)} in {ctx.topics_from} "
                              f"and no offsets of group {name} for it")
    if missing:
        ctx.reporter.note(f"no topic {', '.join(missing)} in {ctx.topics_from}, so no "
                          "log end or lag for it; members subscribed to it wait until it is "
                          "created")
    return GroupDescription(name, where_of(in_zookeeper, coordinator), group_status_name(report),
                            rows, member_rows(zookeeper_state),
                            None if coordinator is None else coordinator_view(coordinator),
                            missing,
                            cutover_view(_readable_fence(ctx, name)) if in_zookeeper else None)


def _note_trouble(ctx: AdminContext, group: CoordinatorGroup) -> None:
    """One line for a group whose assignments do not parse (the error names the member), or
    that its coordinator could not describe this time; the rest of it is still shown."""
    if group.malformed is not None:
        ctx.reporter.note(f"group {group.name}: {group.malformed}; its members are shown "
                          "without their partitions")
    if group.error is not None:
        ctx.reporter.note(f"group {group.name} is shown without its members: its coordinator "
                          f"could not describe it ({group.error})")


def _zookeeper_side(ctx: AdminContext, name: str) -> tuple[bool, GroupState]:
    """Whether ZooKeeper has the group (members or a znode), and what it holds of it."""
    if not ctx.has_zookeeper:
        return False, GroupState(name)
    state = read_group_state(ctx.zk, name)
    return bool(state.members or ctx.zk.exists(GroupPaths(name).root)), state


def _coordinator_side(ctx: AdminContext, name: str, in_zookeeper: bool
                      ) -> CoordinatorGroup | None:
    """The coordinator's description of the group. A group ZooKeeper has is described without
    it (with a note) when Kafka cannot be asked; any other fails, as nothing else would tell
    whether it exists."""
    try:
        return ctx.coordinator_group(name)
    except ZkConsumerError as exc:
        if not in_zookeeper:
            raise
        ctx.reporter.note(f"not described by Kafka's group coordinator: {exc}")
        return None


def _every_offset_of(ctx: AdminContext, name: str) -> dict[TopicPartition, int]:
    answer = ctx.every_kafka_offset([name])
    if name in answer.failed:
        raise ZkConsumerError(f"reading the Kafka offsets of group {name} failed: "
                              f"{answer.failed[name]}")
    return answer.found.get(name, {})


def delete_group(ctx: AdminContext, name: str, dry_run: bool) -> GroupDeletion:
    """Remove /consumers/<group>, offsets and all; refused while members are registered, as
    their registrations and claims would be taken from under them."""
    members = read_members(ctx.zk, name)
    if members:
        raise LiveGroupError(f"group {name} has {len(members)} registered member(s) "
                             f"({', '.join(list(members)[:3])}); stop them first")
    root = GroupPaths(name).root
    if not ctx.zk.exists(root):
        require_group(ctx, name)  # refused alike if nowhere, and said where it is if not
        raise ZkConsumerError(f"group {name} is not under /consumers (it lives on Kafka's "
                              "group coordinator, which `group delete` does not change)")
    offsets = len(committed_partitions(ctx.zk, name))
    if not dry_run:
        try:
            ctx.zk.delete(root, recursive=True)
        except NoNodeError:
            pass
    return GroupDeletion(root, offsets, deleted=not dry_run)

"""Legacy groups as ZooKeeper holds them: listed with their lag, one described per partition,
one deleted.

Listing and describing take one look and keep going without what they cannot read (a group's
unparsable znodes, a topic's log ends, Kafka's offsets): the rest is still worth showing, and
the reporter is told what is missing and why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kazoo.exceptions import NoNodeError

from zkconsumer.admin.context import AdminContext
from zkconsumer.admin.group_view import (
    group_status_name,
    list_row,
    look_once,
    member_rows,
    partition_rows,
)
from zkconsumer.errors import ZkConsumerError, ZnodeDataError
from zkconsumer.fetch.log_offsets import log_ends_of_each_topic
from zkconsumer.lag.report import GroupState, with_offsets
from zkconsumer.model import TopicPartition
from zkconsumer.zk.group_state import (
    committed_partitions,
    list_groups,
    read_group_state,
    read_members,
)
from zkconsumer.znodes.paths import GroupPaths


class LiveGroupError(ZkConsumerError):
    """The command would change a group that has registered members."""


@dataclass(frozen=True)
class GroupDescription:
    group: str
    status: str | None
    partitions: list[dict]      # `partition_rows`
    members: list[dict]         # `member_rows`
    missing_topics: list[str]   # asked for or subscribed to, but not in the topic registry


@dataclass(frozen=True)
class GroupDeletion:
    root: str
    offsets: int    # committed offsets removed (or that would be, in a dry run)
    deleted: bool


def list_groups_with_lag(ctx: AdminContext, window_s: float) -> list[dict]:
    """A `list_row` for every group under /consumers, in ZooKeeper's order."""
    names = list_groups(ctx.zk)
    read = ctx.for_each_group(names, lambda name: _readable_state(ctx, name), "reading groups")
    states = {name: state for name, state in read.items() if state is not None}
    registered = _registered_partitions(ctx, states)
    layout = {name: with_offsets(registered[name], state) for name, state in states.items()}
    log_ends, kafka = _kafka_figures(ctx, registered)
    reports = {report.group: report for report in look_once(
        states.values(), layout, log_ends, kafka, window_s, time.time())}
    return [list_row(name, states.get(name), reports.get(name)) for name in names]


def _readable_state(ctx: AdminContext, name: str) -> GroupState | None:
    """A group whose znodes do not parse (edited by hand, say) is listed without figures,
    with a note; the others are still worth listing."""
    try:
        return read_group_state(ctx.zk, name)
    except ZnodeDataError as exc:
        ctx.reporter.note(f"group {name} is listed without figures: {exc}")
        return None


def _registered_partitions(ctx: AdminContext, states: dict[str, GroupState]
                           ) -> dict[str, list[TopicPartition]]:
    try:
        return {name: ctx.partitions_of(state.topics(())) for name, state in states.items()}
    except ZkConsumerError as exc:
        ctx.reporter.note(f"no lag, since the topics could not be read: {exc}")
        return {name: [] for name in states}


def _kafka_figures(ctx: AdminContext, registered: dict[str, list[TopicPartition]]
                   ) -> tuple[dict[TopicPartition, int], dict[str, dict[TopicPartition, int]]]:
    """Log ends and the groups' Kafka offsets, of the partitions that exist (an offset outlives
    a deleted topic, and the brokers know nothing of it). Without them (no broker answers) the
    list is still worth having, with a note saying why lag is missing."""
    existing = sorted({tp for partitions in registered.values() for tp in partitions})
    try:
        log_ends = _log_ends(ctx, existing)
    except ZkConsumerError as exc:
        ctx.reporter.note(f"no lag, since the log ends could not be read: {exc}")
        return {}, {}
    try:
        answer = ctx.kafka_offsets_of_groups(registered)
    except ZkConsumerError as exc:
        ctx.reporter.note(f"lag from ZooKeeper's offsets only: {exc}")
        return log_ends, {}
    if answer.failed:
        names = ", ".join(sorted(answer.failed)[:5])
        ctx.reporter.note(f"lag from ZooKeeper's offsets only for {len(answer.failed)} group(s) "
                          f"Kafka could not answer for ({names}): "
                          f"{next(iter(answer.failed.values()))}")
    return log_ends, answer.found


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
    there."""
    state = read_group_state(ctx.zk, name)
    if not state.members and not ctx.zk.exists(GroupPaths(name).root):
        raise ZkConsumerError(f"no group {name} under /consumers")
    wanted = set(topics) or state.topics(())
    registered = ctx.partitions_of(wanted)
    partitions = sorted(set(registered) | {tp for tp in state.zookeeper_offsets
                                           if tp.topic in wanted})
    [report] = look_once([state], {name: partitions}, _log_ends(ctx, registered),
                         {name: ctx.kafka_offsets(name, partitions)}, window_s, time.time())
    rows = partition_rows(report)
    missing = sorted(wanted - {tp.topic for tp in registered})
    if topics and not rows:
        raise ZkConsumerError(f"no topic {', '.join(missing)} in {ctx.topics_from} "
                              f"and no offsets of group {name} for it")
    if missing:
        ctx.reporter.note(f"no topic {', '.join(missing)} in {ctx.topics_from}, so no "
                          "log end or lag for it; members subscribed to it wait until it is "
                          "created")
    return GroupDescription(name, group_status_name(report), rows, member_rows(state), missing)


def delete_group(ctx: AdminContext, name: str, dry_run: bool) -> GroupDeletion:
    """Remove /consumers/<group>, offsets and all; refused while members are registered, as
    their registrations and claims would be taken from under them."""
    members = read_members(ctx.zk, name)
    if members:
        raise LiveGroupError(f"group {name} has {len(members)} registered member(s) "
                             f"({', '.join(list(members)[:3])}); stop them first")
    root = GroupPaths(name).root
    if not ctx.zk.exists(root):
        raise ZkConsumerError(f"no group {name} under /consumers")
    offsets = len(committed_partitions(ctx.zk, name))
    if not dry_run:
        try:
            ctx.zk.delete(root, recursive=True)
        except NoNodeError:
            pass
    return GroupDeletion(root, offsets, deleted=not dry_run)

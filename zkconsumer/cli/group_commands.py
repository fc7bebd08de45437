"""`zkconsumer group list|describe|delete`: what is in ZooKeeper for legacy groups."""

from __future__ import annotations

import time
from typing import Any

import click
from kazoo.exceptions import NoNodeError

from zkconsumer.admin.group_view import (
    group_status_name,
    look_once,
    partition_rows,
    storage_of,
)
from zkconsumer.cli.admin_context import AdminContext, admin_context, admin_options
from zkconsumer.cli.duration_option import Duration
from zkconsumer.cli.output import emit_json, emit_table
from zkconsumer.errors import ZkConsumerError, ZnodeDataError
from zkconsumer.fetch.log_offsets import log_ends_of_each_topic
from zkconsumer.lag.report import GroupReport, GroupState, with_offsets
from zkconsumer.lag.status import DEFAULT_WINDOW_S
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


@click.group()
def group() -> None:
    """Inspect and delete legacy consumer groups (/consumers/<group>)."""


def _status_window_option(command):
    return click.option(
        "--status-window", type=Duration(), default=f"{DEFAULT_WINDOW_S:g}s",
        show_default=True,
        help="A partition with lag whose ZooKeeper offset has not changed for longer than this "
             "is STOP (nobody owns it) or STALL (a member owns it).")(command)


@group.command("list")
@_status_window_option
@admin_options
def list_command(status_window, zookeeper_connect, bootstrap_server, properties,
                 as_json) -> None:
    """Groups under /consumers: members, offsets, owned partitions, total lag and status."""
    with admin_context(zookeeper_connect, bootstrap_server, properties) as ctx:
        names = list_groups(ctx.zk)
        read = ctx.for_each_group(names, lambda name: _readable_state(ctx, name),
                                  "reading groups")
        states = {name: state for name, state in read.items() if state is not None}
        registered = _registered_partitions(ctx, states)
        layout = {name: with_offsets(registered[name], state) for name, state in states.items()}
        log_ends, kafka = _kafka_figures(ctx, registered)
        reports = {report.group: report for report in look_once(
            states.values(), layout, log_ends, kafka, status_window, time.time())}
    rows = [_list_row(name, states.get(name), reports.get(name)) for name in names]
    if as_json:
        emit_json(rows)
    else:
        emit_table(("group", "members", "zk offsets", "owned", "storage", "lag", "status"),
                   [tuple("-" if v is None else v for v in r.values()) for r in rows])


def _readable_state(ctx: AdminContext, name: str) -> GroupState | None:
    """A group whose znodes do not parse (edited by hand, say) is listed without figures,
    with a note; the others are still worth listing."""
    try:
        return read_group_state(ctx.zk, name)
    except ZnodeDataError as exc:
        click.echo(f"note: group {name} is listed without figures: {exc}", err=True)
        return None


def _registered_partitions(ctx: AdminContext, states: dict[str, GroupState]
                           ) -> dict[str, list[TopicPartition]]:
    try:
        return {name: ctx.partitions_of(state.topics(())) for name, state in states.items()}
    except ZkConsumerError as exc:
        click.echo(f"note: no lag, since the topics could not be read: {exc}", err=True)
        return {name: [] for name in states}


def _list_row(name: str, state: GroupState | None, report: GroupReport | None) -> dict:
    if state is None or report is None:
        return {"group": name, "members": None, "zookeeper_offsets": None,
                "owned_partitions": None, "storage": None, "lag": None, "status": None}
    return {"group": name, "members": report.members,
            "zookeeper_offsets": len(state.zookeeper_offsets),
            "owned_partitions": len(state.owners), "storage": storage_of(report),
            "lag": report.total_lag if any(p.lag is not None for p in report.partitions)
            else None,
            "status": group_status_name(report)}


def _kafka_figures(ctx: AdminContext, registered: dict[str, list[TopicPartition]]
                   ) -> tuple[dict[TopicPartition, int], dict[str, dict[TopicPartition, int]]]:
    """Log ends and the groups' Kafka offsets, of the partitions that exist (an offset outlives
    a deleted topic, and the brokers know nothing of it). Without them (no broker answers) the
    list is still worth printing, with a note on stderr saying why lag is missing."""
    existing = sorted({tp for partitions in registered.values() for tp in partitions})
    try:
        log_ends = _log_ends(ctx, existing)
    except ZkConsumerError as exc:
        click.echo(f"note: no lag, since the log ends could not be read: {exc}", err=True)
        return {}, {}
    try:
        answer = ctx.kafka_offsets_of_groups(registered)
    except ZkConsumerError as exc:
        click.echo(f"note: lag from ZooKeeper's offsets only: {exc}", err=True)
        return log_ends, {}
    if answer.failed:
        names = ", ".join(sorted(answer.failed)[:5])
        click.echo(f"note: lag from ZooKeeper's offsets only for {len(answer.failed)} group(s) "
                   f"Kafka could not answer for ({names}): {next(iter(answer.failed.values()))}",
                   err=True)
    return log_ends, answer.found


def _log_ends(ctx: AdminContext, partitions: list[TopicPartition]
              ) -> dict[TopicPartition, int]:
    """The partitions' log ends; those of a topic whose log ends cannot be read (no leader,
    say) are left out, with a note on stderr, rather than costing every other topic its lag."""
    ends = log_ends_of_each_topic(ctx.log_offsets().latest, partitions)
    if ends.unread_topics:
        click.echo(f"note: no lag for topic {', '.join(ends.unread_topics[:5])}, whose log "
                   f"ends could not be read: {ends.error}", err=True)
    return ends.found


@group.command("describe")
@click.option("--group", "name", required=True, envvar="ZKCONSUMER_GROUP_ID")
@click.option("--topic", "topics", multiple=True,
              help="Only this topic (repeatable); Kafka is asked about it too, for groups whose "
                   "offsets live only there.")
@_status_window_option
@admin_options
def describe_command(name, topics, status_window, zookeeper_connect, bootstrap_server,
                     properties, as_json) -> None:
    """Per partition: ZooKeeper and Kafka offsets, log end, lag, owner, status; and the live
    members."""
    with admin_context(zookeeper_connect, bootstrap_server, properties) as ctx:
        state = read_group_state(ctx.zk, name)
        if not state.members and not ctx.zk.exists(GroupPaths(name).root):
            raise ZkConsumerError(f"no group {name} under /consumers")
        wanted = set(topics) or state.topics(())
        registered = ctx.partitions_of(wanted)
        partitions = sorted(set(registered) | {tp for tp in state.zookeeper_offsets
                                               if tp.topic in wanted})
        [report] = look_once([state], {name: partitions}, _log_ends(ctx, registered),
                             {name: ctx.kafka_offsets(name, partitions)}, status_window,
                             time.time())
    rows = partition_rows(report)
    missing = sorted(wanted - {tp.topic for tp in registered})
    if topics and not rows:
        raise ZkConsumerError(f"no topic {', '.join(missing)} in {ctx.topics_from} "
                              f"and no offsets of group {name} for it")
    if missing:
        click.echo(f"note: no topic {', '.join(missing)} in {ctx.topics_from}, so no "
                   "log end or lag for it; members subscribed to it wait until it is created",
                   err=True)
    member_rows: list[dict[str, Any]] = [
        {"consumer_id": consumer_id, "pattern": registration.pattern,
         "subscription": dict(registration.subscription)}
        for consumer_id, registration in state.members.items()]
    if as_json:
        emit_json({"group": name, "status": group_status_name(report),
                   "partitions": rows, "members": member_rows, "missing_topics": missing})
        return
    emit_table(("topic", "partition", "zk offset", "kafka offset", "log end", "lag", "owner",
                "status"),
               [tuple("-" if v is None else v for v in r.values()) for r in rows])
    click.echo()
    emit_table(("member", "pattern", "subscription"),
               [(m["consumer_id"], m["pattern"],
                 ",".join(f"{t}:{n}" for t, n in m["subscription"].items()))
                for m in member_rows])


@group.command("delete")
@click.option("--group", "name", required=True, envvar="ZKCONSUMER_GROUP_ID")
@click.option("--dry-run", is_flag=True, help="Show what would be removed; remove nothing.")
@admin_options
def delete_command(name, dry_run, zookeeper_connect, bootstrap_server, properties,
                   as_json) -> None:
    """Remove /consumers/<group> (offsets, owners, ids); refused while members are registered."""
    with admin_context(zookeeper_connect, bootstrap_server, properties) as ctx:
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
    result = {"group": name, "deleted": not dry_run, "offsets": offsets}
    if as_json:
        emit_json(result)
    else:
        verb = "would remove" if dry_run else "removed"
        click.echo(f"{verb} {root} ({offsets} offset(s))")

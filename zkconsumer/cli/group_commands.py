"""`zkconsumer group list|describe|delete`: options in, the admin service's answers out."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from zkconsumer.admin.cutover_plan import DEFAULT_TIMEOUT_S, CutoverRequest
from zkconsumer.cli.admin_options import (
    TERMINAL,
    admin_options,
    group_view_options,
    one_group_option,
    table_cells,
)
from zkconsumer.cli.duration_option import Duration
from zkconsumer.cli.output import emit_json, emit_table
from zkconsumer.lag.status import DEFAULT_WINDOW_S
from zkconsumer.znodes.fence import COORDINATIONS
from zkconsumer.znodes.paths import check_name

if TYPE_CHECKING:
    from zkconsumer.admin.cutover import CutoverReport


@click.group()
def group() -> None:
    """Inspect consumer groups (under /consumers and on Kafka's group coordinator), delete
    legacy ones (/consumers/<group>), and move them between ZooKeeper and Kafka's group
    coordinator."""


def _status_window_option(command):
    return click.option(
        "--status-window", type=Duration(), default=f"{DEFAULT_WINDOW_S:g}s",
        show_default=True,
        help="A partition with lag whose ZooKeeper offset has not changed for longer than this "
             "is STOP (nobody owns it) or STALL (a member owns it).")(command)


@group.command("list")
@_status_window_option
@group_view_options
def list_command(status_window, zookeeper_connect, bootstrap_server, properties,
                 as_json) -> None:
    """Groups under /consumers and on Kafka's group coordinator: where each lives, the
    coordinator's state, members, offsets, owned partitions, total lag and status."""
    from zkconsumer.admin.context import admin_context
    from zkconsumer.admin.groups import list_groups_with_lag

    with admin_context(zookeeper_connect, bootstrap_server, properties, TERMINAL) as ctx:
        rows = list_groups_with_lag(ctx, status_window)
    if as_json:
        emit_json(rows)
    else:
        emit_table(("group", "where", "state", "members", "zk offsets", "owned", "storage",
                    "lag", "status", "cutover"), table_cells(rows))


@group.command("describe")
@one_group_option()
@click.option("--topic", "topics", multiple=True,
              help="Only this topic (repeatable); Kafka is asked about it too, for groups whose "
                   "offsets live only there.")
@_status_window_option
@group_view_options
def describe_command(name, topics, status_window, zookeeper_connect, bootstrap_server,
                     properties, as_json) -> None:
    """Per partition: ZooKeeper and Kafka offsets, log end, lag, owner, status; the members
    registered in ZooKeeper; and the group as Kafka's group coordinator describes it (state,
    protocol, members and their partitions)."""
    from zkconsumer.admin.context import admin_context
    from zkconsumer.admin.groups import describe_group

    with admin_context(zookeeper_connect, bootstrap_server, properties, TERMINAL) as ctx:
        found = describe_group(ctx, name, topics, status_window)
    if as_json:
        emit_json({"group": found.group, "where": found.where, "status": found.status,
                   "partitions": found.partitions, "members": found.members,
                   "coordinator": found.coordinator, "missing_topics": found.missing_topics,
                   "cutover": found.cutover})
        return
    emit_table(("topic", "partition", "zk offset", "kafka offset", "log end", "lag", "owner",
                "status"), table_cells(found.partitions))
    if found.members or found.coordinator is None:  # ZooKeeper's members
        click.echo()
        emit_table(("member", "pattern", "subscription"),
                   [(m["consumer_id"], m["pattern"],
                     ",".join(f"{t}:{n}" for t, n in m["subscription"].items()))
                    for m in found.members])
    if found.coordinator is not None:
        _echo_coordinator(found.coordinator)
    if found.cutover is not None:
        click.echo()
        click.echo(f"cutover: {found.cutover['phase']} to {found.cutover['to']}, started "
                   f"{_utc(found.cutover['started_ms'])}")


def _utc(epoch_ms: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(epoch_ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _echo_coordinator(coordinator: dict) -> None:
    """The coordinator's view under the ZooKeeper one: a line for the group, a table of its
    members."""
    protocol = "/".join(part for part in (coordinator["protocol_type"],
                                          coordinator["protocol"]) if part)
    click.echo()
    click.echo(f"on Kafka's group coordinator: {coordinator['state']}"
               + (f", protocol {protocol}" if protocol else ""))
    emit_table(("member", "client id", "host", "assigned"),
               [(m["member_id"], m["client_id"], m["client_host"],
                 " ".join(f"{t}:{','.join(map(str, ps))}" for t, ps in m["assigned"].items()))
                for m in coordinator["members"]])


@group.command("delete")
@one_group_option()
@click.option("--dry-run", is_flag=True, help="Show what would be removed; remove nothing.")
@admin_options
def delete_command(name, dry_run, zookeeper_connect, bootstrap_server, properties,
                   as_json) -> None:
    """Remove /consumers/<group> (offsets, owners, ids); refused while members are registered."""
    from zkconsumer.admin.context import admin_context
    from zkconsumer.admin.groups import delete_group

    with admin_context(zookeeper_connect, bootstrap_server, properties, TERMINAL) as ctx:
        done = delete_group(ctx, name, dry_run)
    if as_json:
        emit_json({"group": name, "deleted": done.deleted, "offsets": done.offsets})
    else:
        verb = "removed" if done.deleted else "would remove"
        click.echo(f"{verb} {done.root} ({done.offsets} offset(s))")


def _group_name(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """A name that cannot be a znode name is a usage error, before anything is read."""
    try:
        return check_name("group", value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@group.command("cutover")
@one_group_option(callback=_group_name)
@click.option("--to", "target", type=click.Choice(COORDINATIONS), required=True,
              help="The coordination to move the group to; the other one while its fence is "
                   "still draining rolls the move back.")
@click.option("--execute", is_flag=True, help="Move the group (otherwise a dry run: the next "
                                              "step and the offsets it would copy).")
@click.option("--force", is_flag=True,
              help="Move even with members that cannot honour the fence (the reference "
                   "consumer, an older zkconsumer): they keep consuming on the old "
                   "coordination, so their partitions may be delivered twice.")
@click.option("--skip-missing-topics", is_flag=True,
              help="Leave the offsets of topics that no longer exist where they are, and move "
                   "the group without them.")
@click.option("--timeout", "timeout_s", type=Duration(), default=f"{DEFAULT_TIMEOUT_S:g}s",
              show_default=True,
              help="How long to wait for the members to leave the old coordination, and then "
                   "for the moved ones to take every partition on the new one.")
@admin_options
def cutover_command(name, target, execute, force, skip_missing_topics, timeout_s,
                    zookeeper_connect, bootstrap_server, properties, as_json) -> None:
    """Move a group between ZooKeeper and Kafka's group coordinator: fence it, wait for its
    members to leave, copy its offsets forward and read them back, switch. A dry run unless
    --execute; run again to resume."""
    from zkconsumer.admin.context import admin_context
    from zkconsumer.admin.cutover import cut_over, cutover_json

    request = CutoverRequest(name, target, force, skip_missing_topics)
    with admin_context(zookeeper_connect, bootstrap_server, properties, TERMINAL) as ctx:
        report = cut_over(ctx, request, execute, timeout_s)
    if as_json:
        emit_json(cutover_json(report))
        return
    _echo_cutover(report)


def _echo_cutover(report: CutoverReport) -> None:
    from zkconsumer.admin.cutover_plan import copy_summary, copy_words

    done = report.outcome != "dry run"
    if report.plan is not None:
        emit_table(("topic", "partition", f"{report.target} now", "new", "copy"),
                   [(r.partition.topic, r.partition.partition,
                     "-" if r.current is None else r.current, r.new,
                     copy_words(report.plan.change_of(r), done)) for r in report.plan.rows])
    if not done:
        if report.plan is not None:
            click.echo(copy_summary(report.plan, done), err=True)
        click.echo(f"next: {report.next_step}", err=True)
        click.echo("dry run: nothing written; add --execute to move the group", err=True)
        return
    click.echo(f"group {report.group}: {report.outcome}"
               + (f" ({report.next_step})" if report.next_step else "")
               + f", {report.source} -> {report.target}")
    if report.outcome != "switched":
        return
    click.echo(f"members moved: {', '.join(report.members_moved) or 'none'}")
    if report.plan is not None:
        click.echo(copy_summary(report.plan, done))
    click.echo(f"offsets verified: {report.offsets_verified}, partitions: {report.partitions}")
    if report.pauses:
        emit_table(("topic", "partition", "pause ms", "since"),
                   [(p.partition.topic, p.partition.partition, p.pause_ms, p.since)
                    for p in report.pauses])

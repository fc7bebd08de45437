"""`zkconsumer group list|describe|delete`: what is in ZooKeeper for legacy groups."""

from __future__ import annotations

import click
from kazoo.exceptions import NoNodeError

from zkconsumer.admin.group_view import describe_partitions
from zkconsumer.cli.admin_context import admin_context, admin_options
from zkconsumer.cli.output import emit_json, emit_table
from zkconsumer.errors import ZkConsumerError
from zkconsumer.zk.group_state import (
    committed_partitions,
    group_topics,
    list_groups,
    read_members,
    read_owners,
)
from zkconsumer.znodes.paths import GroupPaths


class LiveGroupError(ZkConsumerError):
    """The command would change a group that has registered members."""


@click.group()
def group() -> None:
    """Inspect and delete legacy consumer groups (/consumers/<group>)."""


@group.command("list")
@admin_options
def list_command(zookeeper_connect, bootstrap_server, properties, as_json) -> None:
    """Groups under /consumers, with members and what ZooKeeper holds for each."""
    with admin_context(zookeeper_connect, bootstrap_server, properties) as ctx:
        rows = []
        for name in list_groups(ctx.zk):
            offsets = committed_partitions(ctx.zk, name)
            rows.append({"group": name, "members": len(read_members(ctx.zk, name)),
                         "zookeeper_offsets": len(offsets),
                         "owned_partitions": len(read_owners(ctx.zk, name)),
                         "storage_hint": "zookeeper" if offsets else "kafka or none"})
    if as_json:
        emit_json(rows)
    else:
        emit_table(("group", "members", "zk offsets", "owned", "storage hint"),
                   [tuple(r.values()) for r in rows])


@group.command("describe")
@click.option("--group", "name", required=True, envvar="ZKCONSUMER_GROUP_ID")
@click.option("--topic", "topics", multiple=True,
              help="Only this topic (repeatable); Kafka is asked about it too, for groups whose "
                   "offsets live only there.")
@admin_options
def describe_command(name, topics, zookeeper_connect, bootstrap_server, properties,
                     as_json) -> None:
    """Per partition: ZooKeeper and Kafka offsets, log end, lag, owner; and the live members."""
    with admin_context(zookeeper_connect, bootstrap_server, properties) as ctx:
        members = read_members(ctx.zk, name)
        if not members and not ctx.zk.exists(GroupPaths(name).root):
            raise ZkConsumerError(f"no group {name} under /consumers")
        wanted = set(topics) or group_topics(ctx.zk, name)
        registered = ctx.partitions_of(wanted)
        zookeeper = {tp: offset for tp, offset in ctx.read_offsets("zookeeper", name).items()
                     if tp.topic in wanted}
        partitions = set(registered) | set(zookeeper)
        rows = describe_partitions(
            partitions, zookeeper, ctx.kafka_offsets(name, partitions),
            ctx.log_offsets().latest(registered),
            {tp: owner for tp, owner in read_owners(ctx.zk, name).items() if tp.topic in wanted})
    missing = sorted(wanted - {tp.topic for tp in registered})
    if topics and not rows:
        raise ZkConsumerError(f"no topic {', '.join(missing)} in {ctx.topics_from} "
                              f"and no offsets of group {name} for it")
    if missing:
        click.echo(f"note: no topic {', '.join(missing)} in {ctx.topics_from}, so no "
                   "log end or lag for it; members subscribed to it wait until it is created",
                   err=True)
    member_rows = [{"consumer_id": consumer_id, "pattern": registration.pattern,
                    "subscription": dict(registration.subscription)}
                   for consumer_id, registration in members.items()]
    if as_json:
        emit_json({"group": name, "partitions": rows, "members": member_rows,
                   "missing_topics": missing})
        return
    emit_table(("topic", "partition", "zk offset", "kafka offset", "log end", "lag", "owner"),
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

"""`zkconsumer offsets export|import|migrate|diff|reset`: moving and fixing committed offsets.

Each command that writes shows its plan first (and only that with --dry-run, or for reset
without --execute), refuses to touch a group with live members, and reads back what it wrote.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import click

from zkconsumer.admin.group_view import offsets_differ
from zkconsumer.admin.offset_files import (
    format_json,
    format_text,
    offsets_to_json,
    read_offsets_file,
)
from zkconsumer.admin.plans import (
    Change,
    Plan,
    ResetSpec,
    merge_plans,
    plan_migration,
    plan_reset,
    reset_targets,
)
from zkconsumer.cli.admin_context import STORAGES, AdminContext, admin_context, admin_options
from zkconsumer.cli.group_commands import LiveGroupError
from zkconsumer.cli.output import emit_json, emit_table
from zkconsumer.errors import ZkConsumerError
from zkconsumer.kafka.protocol.codec import EARLIEST, LATEST
from zkconsumer.zk.group_state import list_groups, read_members

ROLLING_PROCEDURE = (
    "to migrate a running group without stopping it, roll its members instead: restart each "
    "with offsets.storage=kafka and dual.commit.enabled=true, then (once all have rolled) with "
    "dual.commit.enabled=false; roll back the same way in reverse. Use --force to write anyway.")


class OffsetsDifferError(ZkConsumerError):
    """Not a failure but an answer, so scripts get their own exit status for it."""

    exit_code = 3


@click.group()
def offsets() -> None:
    """Export, import, migrate, compare and reset committed offsets of legacy groups."""


def _chosen_groups(ctx: AdminContext, groups: tuple[str, ...], every: bool) -> list[str]:
    if every and groups:
        raise click.UsageError("give --group or --all, not both")
    if every:
        return list_groups(ctx.zk)
    if not groups:
        raise click.UsageError("give --group (repeatable) or --all")
    return list(groups)


def _refuse_live_groups(ctx: AdminContext, groups: list[str], force: bool) -> None:
    if force:
        return
    live = {g: len(read_members(ctx.zk, g)) for g in groups}
    live = {g: n for g, n in live.items() if n}
    if live:
        names = ", ".join(f"{g} ({n} member(s))" for g, n in sorted(live.items())[:5])
        raise LiveGroupError(f"refusing to write offsets of live group(s) {names}; "
                             f"{ROLLING_PROCEDURE}")


def _show_plan(plan: Plan, headers: tuple[str, ...], as_json: bool, extra: dict) -> None:
    rows = [{"group": r.group, "topic": r.partition.topic, "partition": r.partition.partition,
             "current": r.current, "new": r.new, "change": plan.change_of(r).value}
            for r in plan.rows]
    if as_json:
        emit_json({**extra, "rows": rows, "summary": plan.counts()})
        return
    changed = [r for r in rows if r["change"] != Change.UNCHANGED.value]
    emit_table(headers, [("-" if v is None else v for v in r.values()) for r in changed])
    counts = plan.counts()
    click.echo(", ".join(f"{n} {change}" for change, n in counts.items() if n) or "nothing to do",
               err=True)


def _dry_run_done(how_to_write: str) -> None:
    """Every command that can write says so when it did not, the same way."""
    click.echo(f"dry run: nothing written; {how_to_write}", err=True)


def _write_and_verify(ctx: AdminContext, storage: str, plan: Plan) -> None:
    writes = plan.writes()

    def write_and_read_back(name: str) -> dict:
        offsets = writes[name]
        ctx.write_offsets(storage, name, offsets)
        stored = (ctx.zookeeper_store(name) if storage == "zookeeper"
                  else ctx.kafka_store(name)).fetch(offsets)
        return {tp: (offset, stored.get(tp)) for tp, offset in offsets.items()
                if stored.get(tp) != offset}

    wrong = ctx.for_each_group(sorted(writes), write_and_read_back, f"writing to {storage}")
    for name, mismatches in wrong.items():
        if mismatches:
            tp, (wanted, found) = sorted(mismatches.items())[0]
            raise ZkConsumerError(f"verification failed for group {name}: {len(mismatches)} "
                                  f"offset(s) differ after writing, e.g. {tp} wrote {wanted}, "
                                  f"read {found}")


# -- export / import ----------------------------------------------------------------------------

@offsets.command("export")
@click.option("--group", "groups", multiple=True, help="A group to export; repeatable.")
@click.option("--all", "every", is_flag=True, help="Every group under /consumers (the default).")
@click.option("--storage", type=click.Choice(STORAGES), default="zookeeper", show_default=True)
@click.option("--topic", "topics", multiple=True,
              help="With --storage kafka: also ask about this topic; repeatable.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path),
              help="File to write (default: standard output).")
@click.option("--format", "file_format", type=click.Choice(["text", "json"]),
              help="text: the reference ExportZkOffsets format; default from the file name.")
@admin_options
def export_command(groups, every, storage, topics, output, file_format, zookeeper_connect,
                   bootstrap_server, properties, as_json) -> None:
    """Write committed offsets in the reference text format (or JSON)."""
    file_format = file_format or ("json" if as_json or (output and output.suffix == ".json")
                                  else "text")
    with admin_context(zookeeper_connect, bootstrap_server, properties) as ctx:
        chosen = list(groups) if groups else list_groups(ctx.zk)
        found = ctx.for_each_group(chosen, lambda name: ctx.read_offsets(storage, name, topics),
                                   "reading offsets")
        exported = {name: offsets for name, offsets in found.items() if offsets}
    document = format_json(exported) if file_format == "json" else format_text(exported)
    if output:
        output.write_text(document)
        click.echo(f"exported {sum(map(len, exported.values()))} offset(s) of "
                   f"{len(exported)} group(s) to {output}", err=True)
    else:
        click.echo(document, nl=False)


@offsets.command("import")
@click.option("--input", "input_file", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A file in the reference text format or zkconsumer JSON.")
@click.option("--storage", type=click.Choice(STORAGES), default="zookeeper", show_default=True)
@click.option("--dry-run", is_flag=True, help="Show the plan; write nothing.")
@click.option("--force", is_flag=True, help="Write even to groups with live members.")
@admin_options
def import_command(input_file, storage, dry_run, force, zookeeper_connect, bootstrap_server,
                   properties, as_json) -> None:
    """Write offsets from a file, as the file says (moving backwards is shown, not refused)."""
    wanted = read_offsets_file(input_file)
    with admin_context(zookeeper_connect, bootstrap_server, properties) as ctx:
        _refuse_live_groups(ctx, sorted(wanted), force)
        plans = ctx.for_each_group(
            sorted(wanted), lambda name: plan_reset(name, wanted[name], ctx.read_offsets(
                storage, name, {tp.topic for tp in wanted[name]})), "reading offsets")
        plan = merge_plans(plans.values(), allow_rewind=True)
        _show_plan(plan, ("group", "topic", "partition", "current", "new", "change"), as_json,
                   {"storage": storage, "dry_run": dry_run})
        if dry_run:
            _dry_run_done("drop --dry-run to write")
            return
        _write_and_verify(ctx, storage, plan)


# -- migrate / diff -----------------------------------------------------------------------------

@offsets.command("migrate")
@click.option("--group", "groups", multiple=True, help="A group to migrate; repeatable.")
@click.option("--all", "every", is_flag=True, help="Every group under /consumers.")
@click.option("--to", "target", type=click.Choice(STORAGES), required=True)
@click.option("--topic", "topics", multiple=True,
              help="With --to zookeeper: also read this topic from Kafka; repeatable.")
@click.option("--dry-run", is_flag=True, help="Show the plan; write nothing.")
@click.option("--force", is_flag=True, help="Migrate even groups with live members.")
@click.option("--allow-rewind", is_flag=True, help="Let target offsets move backwards.")
@admin_options
def migrate_command(groups, every, target, topics, dry_run, force, allow_rewind,
                    zookeeper_connect, bootstrap_server, properties, as_json) -> None:
    """Copy offsets from the other storage to --to, then read them back and verify."""
    source = "zookeeper" if target == "kafka" else "kafka"
    with admin_context(zookeeper_connect, bootstrap_server, properties) as ctx:
        chosen = _chosen_groups(ctx, groups, every)
        _refuse_live_groups(ctx, chosen, force)
        plans = ctx.for_each_group(
            chosen, lambda name: plan_migration(name, ctx.read_offsets(source, name, topics),
                                                ctx.read_offsets(target, name, topics),
                                                allow_rewind), "reading offsets")
        plan = merge_plans(plans.values(), allow_rewind)
        _show_plan(plan, ("group", "topic", "partition", f"{target} now", source, "change"), as_json,
                   {"from": source, "to": target, "dry_run": dry_run})
        refused = plan.refused()
        if refused:
            row = refused[0]
            raise ZkConsumerError(
                f"{len(refused)} offset(s) in {target} are ahead of {source} and would move "
                f"backwards (e.g. {row.group} {row.partition}: {row.current} -> {row.new}); "
                "nothing was written; --allow-rewind writes them anyway")
        if dry_run:
            _dry_run_done("drop --dry-run to write")
            return
        _write_and_verify(ctx, target, plan)


@offsets.command("diff")
@click.option("--group", "name", required=True, envvar="ZKCONSUMER_GROUP_ID")
@click.option("--topic", "topics", multiple=True, help="Also compare this topic; repeatable.")
@admin_options
def diff_command(name, topics, zookeeper_connect, bootstrap_server, properties, as_json) -> None:
    """ZooKeeper versus Kafka offsets; exit status 3 when they differ."""
    with admin_context(zookeeper_connect, bootstrap_server, properties) as ctx:
        zookeeper = ctx.read_offsets("zookeeper", name, topics)
        kafka = ctx.read_offsets("kafka", name, set(topics) | {tp.topic for tp in zookeeper})
    differing = offsets_differ(zookeeper, kafka)
    if as_json:
        emit_json({"group": name, "differ": differing})
    elif differing:
        emit_table(("topic", "partition", "zk offset", "kafka offset"),
                   [tuple("-" if v is None else v for v in r.values()) for r in differing])
    if differing:
        raise OffsetsDifferError(f"{len(differing)} partition(s) of {name} differ between "
                                 "ZooKeeper and Kafka")
    if not as_json:
        click.echo(f"ZooKeeper and Kafka agree on {len(zookeeper)} offset(s) of {name}",
                   err=True)


@offsets.command("spark-json")
@click.option("--group", "name", required=True, envvar="ZKCONSUMER_GROUP_ID")
@click.option("--topic", "topics", multiple=True,
              help="Only this topic (repeatable); default: every topic of the group.")
@click.option("--storage", type=click.Choice((*STORAGES, "both")), default="zookeeper",
              show_default=True, help="both: the larger of the two, as with dual commit.")
@click.option("--reset", type=click.Choice(["smallest", "largest"]), default="largest",
              show_default=True, help="For partitions with no offset: -2 (earliest) or -1.")
@admin_options
def spark_json_command(name, topics, storage, reset, zookeeper_connect, bootstrap_server,
                       properties, as_json) -> None:
    """The group's offsets as `startingOffsets` JSON for Spark's native Kafka source."""
    with admin_context(zookeeper_connect, bootstrap_server, properties) as ctx:
        chosen_topics, partitions = ctx.group_partitions(name, topics)
        found: dict = {}
        for chosen in (STORAGES if storage == "both" else (storage,)):
            for tp, offset in ctx.read_offsets(chosen, name, chosen_topics).items():
                found[tp] = max(offset, found.get(tp, offset))
    missing = EARLIEST if reset == "smallest" else LATEST
    click.echo(offsets_to_json({tp: found.get(tp, missing) for tp in partitions}))


# -- reset ----------------------------------------------------------------------------------------

@offsets.command("reset")
@click.option("--group", "name", required=True, envvar="ZKCONSUMER_GROUP_ID")
@click.option("--topic", "topics", multiple=True,
              help="Reset only this topic (repeatable); default: every topic of the group.")
@click.option("--to-earliest", "mode", flag_value="earliest")
@click.option("--to-latest", "mode", flag_value="latest")
@click.option("--to-offset", type=int, help="This offset, clamped to the log.")
@click.option("--shift-by", type=int, help="Move the committed offset by N (negative: back).")
@click.option("--to-datetime",
              help="The first offset at or after this ISO 8601 time (UTC unless it has an offset).")
@click.option("--storage", type=click.Choice((*STORAGES, "both")), default="zookeeper",
              show_default=True)
@click.option("--execute", is_flag=True, help="Write the offsets (otherwise a dry run).")
@admin_options
def reset_command(name, topics, mode, to_offset, shift_by, to_datetime, storage, execute,
                  zookeeper_connect, bootstrap_server, properties, as_json) -> None:
    """Point a stopped group at new offsets. A dry run unless --execute."""
    spec = _reset_spec(mode, to_offset, shift_by, to_datetime)
    storages = STORAGES if storage == "both" else (storage,)
    with admin_context(zookeeper_connect, bootstrap_server, properties) as ctx:
        _refuse_live_groups(ctx, [name], force=False)
        chosen_topics, partitions = ctx.group_partitions(name, topics)
        log = ctx.log_offsets()
        earliest, latest = log.earliest(partitions), log.latest(partitions)
        by_time = log.at_time(partitions, spec.given_value()) if spec.mode == "datetime" else None
        plans = []
        for chosen in storages:
            current = ctx.read_offsets(chosen, name, chosen_topics)
            current = {tp: o for tp, o in current.items() if tp.topic in chosen_topics}
            targets = reset_targets(spec, partitions, current, earliest, latest, by_time)
            plans.append((chosen, plan_reset(name, targets, current)))
        for chosen, plan in plans:
            _show_plan(plan, ("group", "topic", "partition", "current", "new", "change"),
                       as_json, {"storage": chosen, "dry_run": not execute})
        if not execute:
            _dry_run_done("add --execute to write")
            return
        for chosen, plan in plans:
            _write_and_verify(ctx, chosen, plan)


def _reset_spec(mode, to_offset, shift_by, to_datetime) -> ResetSpec:
    given = [m for m, v in (("earliest", mode == "earliest"), ("latest", mode == "latest"),
                            ("offset", to_offset is not None), ("shift", shift_by is not None),
                            ("datetime", to_datetime is not None)) if v]
    if len(given) != 1:
        raise click.UsageError("give exactly one of --to-earliest, --to-latest, --to-offset, "
                               "--shift-by, --to-datetime")
    if given[0] == "offset":
        return ResetSpec("offset", to_offset)
    if given[0] == "shift":
        return ResetSpec("shift", shift_by)
    if given[0] == "datetime":
        try:
            moment = datetime.fromisoformat(to_datetime)
        except ValueError:
            raise click.BadParameter(f"not an ISO 8601 time: {to_datetime!r}",
                                     param_hint="--to-datetime") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return ResetSpec("datetime", int(moment.timestamp() * 1000))
    return ResetSpec(given[0])

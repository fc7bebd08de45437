"""`zkconsumer offsets export|import|migrate|diff|spark-json|reset`: options in, the admin
service's plans and answers out.

Each command that writes shows its plan first (and only that with --dry-run, or for reset
without --execute); the service refuses live groups and reads back what it wrote.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import click

from zkconsumer.admin.plans import BOTH, STORAGES, Change, ResetSpec
from zkconsumer.cli.admin_options import (
    TERMINAL,
    admin_options,
    one_group_option,
    table_cells,
)
from zkconsumer.cli.output import emit_json, emit_table

if TYPE_CHECKING:
    from zkconsumer.admin.context import AdminContext, admin_context
    from zkconsumer.admin.offset_writes import OffsetWrite
else:
    def admin_context(*args, **kwargs):
        """zkconsumer.admin.context's, imported when a command runs (a name of this module, so
        that tests can replace it)."""
        from zkconsumer.admin import context

        return context.admin_context(*args, **kwargs)

PLAN_HEADERS = ("group", "topic", "partition", "current", "new", "change")


@click.group()
def offsets() -> None:
    """Export, import, migrate, compare and reset committed offsets of legacy groups."""


def _chosen_groups(groups: tuple[str, ...], every: bool) -> list[str] | None:
    """The groups named, or None for --all."""
    if every and groups:
        raise click.UsageError("give --group or --all, not both")
    if not every and not groups:
        raise click.UsageError("give --group (repeatable) or --all")
    return None if every else list(groups)


def _require_groups(ctx: AdminContext, groups: Iterable[str]) -> None:
    """Every group named must exist somewhere, by the rule every command follows."""
    from zkconsumer.admin.groups import require_group

    for name in groups:
        require_group(ctx, name)


def _show_plan(write: OffsetWrite, headers: tuple[str, ...], as_json: bool, extra: dict) -> None:
    plan = write.plan
    rows = [{"group": r.group, "topic": r.partition.topic, "partition": r.partition.partition,
             "current": r.current, "new": r.new, "change": plan.change_of(r).value}
            for r in plan.rows]
    if as_json:
        emit_json({**extra, "rows": rows, "summary": plan.counts()})
        return
    emit_table(headers, table_cells([r for r in rows if r["change"] != Change.UNCHANGED.value]))
    counts = plan.counts()
    click.echo(", ".join(f"{n} {change}" for change, n in counts.items() if n) or "nothing to do",
               err=True)


def _dry_run_done(how_to_write: str) -> None:
    """Every command that can write says so when it did not, the same way."""
    click.echo(f"dry run: nothing written; {how_to_write}", err=True)


# -- export / import ----------------------------------------------------------------------------

@offsets.command("export")
@click.option("--group", "groups", multiple=True, help="A group to export; repeatable.")
@click.option("--all", "every", is_flag=True, help="Every group under /consumers (the default).")
@click.option("--storage", type=click.Choice(STORAGES), default="zookeeper", show_default=True,
              help="Which storage's offsets to export.")
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
    from zkconsumer.admin.offset_files import format_json, format_text
    from zkconsumer.admin.offset_reads import export_offsets

    file_format = file_format or ("json" if as_json or (output and output.suffix == ".json")
                                  else "text")
    with admin_context(zookeeper_connect, bootstrap_server, properties, TERMINAL) as ctx:
        _require_groups(ctx, groups)
        exported = export_offsets(ctx, storage, list(groups) or None, topics)
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
@click.option("--storage", type=click.Choice(STORAGES), default="zookeeper", show_default=True,
              help="Which storage to write the offsets to.")
@click.option("--dry-run", is_flag=True, help="Show the plan; write nothing.")
@click.option("--force", is_flag=True, help="Write even to groups with live members.")
@admin_options
def import_command(input_file, storage, dry_run, force, zookeeper_connect, bootstrap_server,
                   properties, as_json) -> None:
    """Write offsets from a file, as the file says (moving backwards is shown, not refused)."""
    from zkconsumer.admin.offset_files import read_offsets_file
    from zkconsumer.admin.offset_writes import planned_import, write_and_verify

    wanted = read_offsets_file(input_file)
    with admin_context(zookeeper_connect, bootstrap_server, properties, TERMINAL) as ctx:
        write = planned_import(ctx, storage, wanted, force)
        _show_plan(write, PLAN_HEADERS, as_json, {"storage": storage, "dry_run": dry_run})
        if dry_run:
            _dry_run_done("drop --dry-run to write")
            return
        write_and_verify(ctx, write)


# -- migrate / diff -----------------------------------------------------------------------------

@offsets.command("migrate")
@click.option("--group", "groups", multiple=True, help="A group to migrate; repeatable.")
@click.option("--all", "every", is_flag=True, help="Every group under /consumers.")
@click.option("--to", "target", type=click.Choice(STORAGES), required=True,
              help="The storage to copy the offsets to (from the other one).")
@click.option("--topic", "topics", multiple=True,
              help="With --to zookeeper: also read this topic from Kafka; repeatable.")
@click.option("--dry-run", is_flag=True, help="Show the plan; write nothing.")
@click.option("--force", is_flag=True, help="Migrate even groups with live members.")
@click.option("--allow-rewind", is_flag=True, help="Let target offsets move backwards.")
@admin_options
def migrate_command(groups, every, target, topics, dry_run, force, allow_rewind,
                    zookeeper_connect, bootstrap_server, properties, as_json) -> None:
    """Copy offsets from the other storage to --to, then read them back and verify."""
    from zkconsumer.admin.offset_writes import planned_migration, write_and_verify

    chosen = _chosen_groups(groups, every)
    with admin_context(zookeeper_connect, bootstrap_server, properties, TERMINAL) as ctx:
        _require_groups(ctx, groups)
        write = planned_migration(ctx, chosen, target, topics, force, allow_rewind)
        _show_plan(write, ("group", "topic", "partition", f"{target} now", write.source,
                           "change"), as_json,
                   {"from": write.source, "to": target, "dry_run": dry_run})
        write.refuse_rewinds()
        if dry_run:
            _dry_run_done("drop --dry-run to write")
            return
        write_and_verify(ctx, write)


@offsets.command("diff")
@one_group_option()
@click.option("--topic", "topics", multiple=True, help="Also compare this topic; repeatable.")
@admin_options
def diff_command(name, topics, zookeeper_connect, bootstrap_server, properties, as_json) -> None:
    """ZooKeeper versus Kafka offsets; exit status 3 when they differ."""
    from zkconsumer.admin.offset_reads import diff_offsets

    with admin_context(zookeeper_connect, bootstrap_server, properties, TERMINAL) as ctx:
        _require_groups(ctx, [name])
        diff = diff_offsets(ctx, name, topics)
    if as_json:
        emit_json({"group": name, "differ": diff.differing})
    elif diff.differing:
        emit_table(("topic", "partition", "zk offset", "kafka offset"),
                   table_cells(diff.differing))
    diff.raise_if_differ()
    if not as_json:
        click.echo(f"ZooKeeper and Kafka agree on {diff.compared} offset(s) of {name}",
                   err=True)


@offsets.command("spark-json")
@one_group_option()
@click.option("--topic", "topics", multiple=True,
              help="Only this topic (repeatable); default: every topic of the group.")
@click.option("--storage", type=click.Choice((*STORAGES, BOTH)), default="zookeeper",
              show_default=True, help="both: the larger of the two, as with dual commit.")
@click.option("--reset", type=click.Choice(["smallest", "largest"]), default="largest",
              show_default=True, help="For partitions with no offset: -2 (earliest) or -1.")
@admin_options
def spark_json_command(name, topics, storage, reset, zookeeper_connect, bootstrap_server,
                       properties, as_json) -> None:
    """The group's offsets as `startingOffsets` JSON for Spark's native Kafka source."""
    from zkconsumer.admin.offset_files import offsets_to_json
    from zkconsumer.admin.offset_reads import spark_starting_offsets

    with admin_context(zookeeper_connect, bootstrap_server, properties, TERMINAL) as ctx:
        _require_groups(ctx, [name])
        starting = spark_starting_offsets(ctx, name, topics, storage, reset)
    click.echo(offsets_to_json(starting))


# -- reset ----------------------------------------------------------------------------------------

@offsets.command("reset")
@one_group_option(help="The consumer group (group.id); one with no offsets yet gets its first "
                       "ones (with --topic).")
@click.option("--topic", "topics", multiple=True,
              help="Reset only this topic (repeatable); default: every topic of the group.")
# Two flags of one parameter: not from the environment, where one variable could not say which.
@click.option("--to-earliest", "mode", flag_value="earliest", allow_from_autoenv=False,
              help="The log start (the earliest offset still kept).")
@click.option("--to-latest", "mode", flag_value="latest", allow_from_autoenv=False,
              help="The log end (skip everything not consumed yet).")
@click.option("--to-offset", type=int, help="This offset, clamped to the log.")
@click.option("--shift-by", type=int, help="Move the committed offset by N (negative: back).")
@click.option("--to-datetime",
              help="The first offset at or after this ISO 8601 time (UTC unless it has an offset).")
@click.option("--storage", type=click.Choice((*STORAGES, BOTH)), default="zookeeper",
              show_default=True, help="Which storage's offsets to reset (both: each of them).")
@click.option("--execute", is_flag=True, help="Write the offsets (otherwise a dry run).")
@admin_options
def reset_command(name, topics, mode, to_offset, shift_by, to_datetime, storage, execute,
                  zookeeper_connect, bootstrap_server, properties, as_json) -> None:
    """Point a stopped group at new offsets. A dry run unless --execute."""
    from zkconsumer.admin.context import storages_named
    from zkconsumer.admin.offset_writes import planned_resets, write_and_verify

    spec = _reset_spec(mode, to_offset, shift_by, to_datetime)
    with admin_context(zookeeper_connect, bootstrap_server, properties, TERMINAL) as ctx:
        writes = planned_resets(ctx, name, topics, spec, storages_named(storage))
        for write in writes:
            _show_plan(write, PLAN_HEADERS, as_json,
                       {"storage": write.storage, "dry_run": not execute})
        if not execute:
            _dry_run_done("add --execute to write")
            return
        for write in writes:
            write_and_verify(ctx, write)


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

"""Operations that write committed offsets: import from a file, migration between the
storages, reset.

Each is planned first, and the plan is what a dry run shows and what the write then writes, so
the two cannot drift apart. A group with registered members is refused (unless forced, where
that is offered): a member commits its own offsets and would overwrite ours, or act on them
half-way. Everything written is read back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from zkconsumer.admin.context import AdminContext
from zkconsumer.admin.groups import LiveGroupError
from zkconsumer.admin.plans import (
    Plan,
    ResetSpec,
    merge_plans,
    plan_migration,
    plan_reset,
    reset_targets,
)
from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import TopicPartition
from zkconsumer.zk.group_state import list_groups, read_members

ROLLING_PROCEDURE = (
    "to migrate a running group without stopping it, roll its members instead: restart each "
    "with offsets.storage=kafka and dual.commit.enabled=true, then (once all have rolled) with "
    "dual.commit.enabled=false; roll back the same way in reverse. Use --force to write anyway.")


@dataclass(frozen=True)
class OffsetWrite:
    """A plan for one storage; `source` is where its new offsets come from, as a refusal
    names it."""

    storage: str
    source: str
    plan: Plan

    def refuse_rewinds(self) -> None:
        """Called before a dry run ends too, so that it fails as the write would."""
        refused = self.plan.refused()
        if refused:
            row = refused[0]
            raise ZkConsumerError(
                f"{len(refused)} offset(s) in {self.storage} are ahead of {self.source} and "
                f"would move backwards (e.g. {row.group} {row.partition}: {row.current} -> "
                f"{row.new}); nothing was written; --allow-rewind writes them anyway")


def refuse_live_groups(ctx: AdminContext, groups: list[str], force: bool) -> None:
    if force:
        return
    live = {g: len(read_members(ctx.zk, g)) for g in groups}
    live = {g: n for g, n in live.items() if n}
    if live:
        names = ", ".join(f"{g} ({n} member(s))" for g, n in sorted(live.items())[:5])
        raise LiveGroupError(f"refusing to write offsets of live group(s) {names}; "
                             f"{ROLLING_PROCEDURE}")


def planned_import(ctx: AdminContext, storage: str,
                   wanted: Mapping[str, Mapping[TopicPartition, int]], force: bool
                   ) -> OffsetWrite:
    """The file's offsets as they are: an import that moves backwards is shown, not refused,
    since restoring an older export is what an import is for."""
    groups = sorted(wanted)
    refuse_live_groups(ctx, groups, force)
    plans = ctx.for_each_group(
        groups, lambda name: plan_reset(name, wanted[name], ctx.read_offsets(
            storage, name, {tp.topic for tp in wanted[name]})), "reading offsets")
    return OffsetWrite(storage, "the file", merge_plans(plans.values(), allow_rewind=True))


def planned_migration(ctx: AdminContext, groups: list[str] | None, target: str,
                      topics: tuple[str, ...], force: bool, allow_rewind: bool) -> OffsetWrite:
    """Every offset of the other storage copied to `target`, for these groups (None: every
    group under /consumers)."""
    source = "zookeeper" if target == "kafka" else "kafka"
    chosen = list_groups(ctx.zk) if groups is None else groups
    refuse_live_groups(ctx, chosen, force)
    plans = ctx.for_each_group(
        chosen, lambda name: plan_migration(name, ctx.read_offsets(source, name, topics),
                                            ctx.read_offsets(target, name, topics),
                                            allow_rewind), "reading offsets")
    return OffsetWrite(target, source, merge_plans(plans.values(), allow_rewind))


def planned_resets(ctx: AdminContext, group: str, topics: tuple[str, ...], spec: ResetSpec,
                   storages: tuple[str, ...]) -> list[OffsetWrite]:
    """One plan per storage, each from that storage's current offsets, all within the log as
    it is now. A reset is never forced onto a live group: its members would commit over it."""
    refuse_live_groups(ctx, [group], force=False)
    chosen_topics, partitions = ctx.group_partitions(group, topics)
    log = ctx.log_offsets()
    earliest, latest = log.earliest(partitions), log.latest(partitions)
    by_time = log.at_time(partitions, spec.given_value()) if spec.mode == "datetime" else None
    writes = []
    for storage in storages:
        current = {tp: offset for tp, offset in ctx.read_offsets(storage, group, chosen_topics)
                   .items() if tp.topic in chosen_topics}
        targets = reset_targets(spec, partitions, current, earliest, latest, by_time)
        writes.append(OffsetWrite(storage, f"the reset ({spec.mode})",
                                  plan_reset(group, targets, current)))
    return writes


def write_and_verify(ctx: AdminContext, write: OffsetWrite) -> None:
    """Writes the plan's offsets and reads each group's back: a store that accepted a commit
    without keeping it (ACLs, a broker losing it) must not pass for a done migration."""
    write.refuse_rewinds()
    writes = write.plan.writes()

    def write_and_read_back(name: str) -> dict:
        offsets = writes[name]
        store = ctx.store(write.storage, name)
        store.commit(offsets)
        stored = store.fetch(offsets)
        return {tp: (offset, stored.get(tp)) for tp, offset in offsets.items()
                if stored.get(tp) != offset}

    wrong = ctx.for_each_group(sorted(writes), write_and_read_back,
                               f"writing to {write.storage}")
    for name, mismatches in wrong.items():
        if mismatches:
            tp, (wanted, found) = sorted(mismatches.items())[0]
            raise ZkConsumerError(f"verification failed for group {name}: {len(mismatches)} "
                                  f"offset(s) differ after writing, e.g. {tp} wrote {wanted}, "
                                  f"read {found}")

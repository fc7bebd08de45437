"""What the exporter's page tells about a group beyond one scan's report (pure): the status
changes the exporter saw, and where the group lives and is going.

A group's changes are kept from the first scan that saw it, at most `KEPT_CHANGES` of them,
newest last; a group the scan no longer sees is forgotten (as its windows are), so a group
made again under the same name starts a fresh story.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from zkconsumer.lag.report import GroupReport
from zkconsumer.lag.status import Status

KEPT_CHANGES = 20


@dataclass(frozen=True)
class StatusChange:
    """The group's status turned `after` at `at` (seconds since the epoch, the scan's end);
    `before` is None at the first scan that saw it."""

    at: float
    before: Status | None
    after: Status


Changes = Mapping[str, tuple[StatusChange, ...]]


def status_changes(known: Changes, reports: Iterable[GroupReport], at: float,
                   kept: int = KEPT_CHANGES) -> dict[str, tuple[StatusChange, ...]]:
    """Each group's changes after a scan that ended at `at` and judged `reports`."""
    found: dict[str, tuple[StatusChange, ...]] = {}
    for report in reports:
        changes = known.get(report.group, ())
        before = changes[-1].after if changes else None
        if before != report.status:
            changes = (*changes, StatusChange(at, before, report.status))[-kept:]
        found[report.group] = changes
    return found


@dataclass(frozen=True)
class Place:
    """Where a group lives: which coordination its members are on (`zookeeper`, `kafka`, both
    or `none` with no member), and where its offsets are kept (the same words)."""

    members_on: str
    offsets_in: str


def place_of(report: GroupReport) -> Place:
    on_coordinator = report.coordinator_members or 0
    on_zookeeper = report.members - on_coordinator
    in_zookeeper = any(p.zookeeper_offset is not None for p in report.partitions)
    in_kafka = any(p.kafka_offset is not None for p in report.partitions)
    return Place(_where(on_zookeeper > 0, on_coordinator > 0),
                 _where(in_zookeeper, in_kafka))


def _where(zookeeper: bool, kafka: bool) -> str:
    if zookeeper and kafka:
        return "both"
    return "zookeeper" if zookeeper else "kafka" if kafka else "none"


def lag_points(report: GroupReport) -> list[tuple[float, int]]:
    """The group's total lag at each scan of its window, oldest first: every partition's
    observation of that scan added up."""
    totals: dict[float, int] = {}
    for partition in report.partitions:
        for seen in partition.window:
            totals[seen.observed_at] = totals.get(seen.observed_at, 0) + seen.lag
    return sorted(totals.items())


def worst_first(reports: Mapping[str, GroupReport]) -> list[GroupReport]:
    """The worst status first, then the most lag, then by name."""
    return sorted(reports.values(), key=lambda r: (-r.status, -r.total_lag, r.group))

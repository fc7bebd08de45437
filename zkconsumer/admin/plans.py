"""What a migration or a reset would write, decided before anything is written.

Both produce rows an operator reads in a dry run, and the same rows drive the write, so what is
shown is exactly what happens. An offset that would move backwards re-delivers messages that
were already processed, so it is refused unless the operator asked for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import OffsetMove, TopicPartition, offset_move

# Where a group's offsets can be written (`both`: each, as a member with dual commit does).
STORAGES = ("zookeeper", "kafka")
BOTH = "both"


class Change(str, Enum):
    WRITE = "write"            # the target moves forward, or gets its first offset
    UNCHANGED = "unchanged"    # already there: a second run is a no-op
    REWIND = "rewind"          # backwards, and allowed
    REFUSED = "refused"        # backwards, not allowed


@dataclass(frozen=True)
class PlanRow:
    group: str
    partition: TopicPartition
    current: int | None   # the target's offset now (None: none committed)
    new: int


@dataclass(frozen=True)
class Plan:
    rows: tuple[PlanRow, ...]
    allow_rewind: bool

    def change_of(self, row: PlanRow) -> Change:
        return _classify(row.current, row.new, self.allow_rewind)

    def writes(self) -> dict[str, dict[TopicPartition, int]]:
        """Per group, the offsets to write; empty when anything is refused."""
        if self.refused():
            return {}
        out: dict[str, dict[TopicPartition, int]] = {}
        for row in self.rows:
            if self.change_of(row) in (Change.WRITE, Change.REWIND):
                out.setdefault(row.group, {})[row.partition] = row.new
        return out

    def refused(self) -> list[PlanRow]:
        return [row for row in self.rows if self.change_of(row) is Change.REFUSED]

    def counts(self) -> dict[str, int]:
        counts = {change.value: 0 for change in Change}
        for row in self.rows:
            counts[self.change_of(row).value] += 1
        return counts


def _classify(current: int | None, new: int, allow_rewind: bool) -> Change:
    move = offset_move(current, new)
    if move is OffsetMove.FORWARD:
        return Change.WRITE
    if move is OffsetMove.SAME:
        return Change.UNCHANGED
    return Change.REWIND if allow_rewind else Change.REFUSED


def plan_migration(group: str, source: Mapping[TopicPartition, int],
                   target: Mapping[TopicPartition, int], allow_rewind: bool = False) -> Plan:
    """Copy every source offset to the target. Partitions only the target has are left alone."""
    rows = tuple(PlanRow(group, tp, target.get(tp), offset) for tp, offset in sorted(source.items()))
    return Plan(rows, allow_rewind)


def merge_plans(plans: Iterable[Plan], allow_rewind: bool) -> Plan:
    """One plan over many groups, shown and written as one."""
    return Plan(tuple(row for plan in plans for row in plan.rows), allow_rewind)


# -- resets -----------------------------------------------------------------------------------

class ResetError(ZkConsumerError):
    """A reset that cannot be computed (e.g. no offset for a time, no current offset to shift)."""


@dataclass(frozen=True)
class ResetSpec:
    """Exactly one of the reset modes of `zkconsumer offsets reset`."""

    mode: str                  # earliest | latest | offset | shift | datetime
    value: int | None = None   # the offset, the shift, or epoch millis

    def given_value(self) -> int:
        """For the modes that need a value (offset, shift, datetime): a spec made without one
        fails here, naming its mode, rather than in arithmetic on None."""
        if self.value is None:
            raise ResetError(f"reset mode {self.mode} needs a value")
        return self.value


def reset_targets(spec: ResetSpec, partitions: list[TopicPartition],
                  current: Mapping[TopicPartition, int], earliest: Mapping[TopicPartition, int],
                  latest: Mapping[TopicPartition, int],
                  by_time: Mapping[TopicPartition, int | None] | None = None
                  ) -> dict[TopicPartition, int]:
    """New offsets, always within [earliest, latest] so the group never points outside the log.

    A time after the last message resets to the log end, as the reference tools do.
    """
    targets = {}
    for tp in partitions:
        low, high = earliest[tp], latest[tp]
        if spec.mode == "earliest":
            wanted = low
        elif spec.mode == "latest":
            wanted = high
        elif spec.mode == "offset":
            wanted = spec.given_value()
        elif spec.mode == "shift":
            if tp not in current:
                raise ResetError(f"{tp} has no committed offset to shift; "
                                 "reset it to an offset, a time, earliest or latest first")
            wanted = current[tp] + spec.given_value()
        elif spec.mode == "datetime":
            found = (by_time or {}).get(tp)
            wanted = high if found is None else found
        else:
            raise ValueError(f"unknown reset mode {spec.mode!r}")
        targets[tp] = min(max(wanted, low), high)
    return targets


def plan_reset(group: str, targets: Mapping[TopicPartition, int],
               current: Mapping[TopicPartition, int]) -> Plan:
    """A reset is asked for, so moving backwards is its point: it is always allowed."""
    rows = tuple(PlanRow(group, tp, current.get(tp), offset) for tp, offset in sorted(targets.items()))
    return Plan(rows, allow_rewind=True)

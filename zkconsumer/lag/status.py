"""Burrow's consumer status, judged over a sliding window of offset observations (pure).

Burrow reads a commit from `__consumer_offsets` every time a consumer makes one, so "no commit
for longer than the window" is something it sees. A legacy group shows less: the Scala consumer
rewrites an offset znode only when the offset changed, so an offset that stopped moving looks
the same whether its consumer stopped committing or keeps committing the same number. What a
ZooKeeper group does show is who is alive: the owner znodes of registered members. So:

- the offset has not changed for longer than the window, with lag, and nobody owns the
  partition: STOP (no consumer is there to move it);
- the same, but a registered member owns it: STALL (a consumer is there and does not move);
- an idle topic never gets either: with no lag the partition is OK whatever the offset's age,
  and lag that was zero at some point of the window (a burst on an idle topic being worked
  through) is OK as well.

The age of an offset is taken from the first scan that saw it at that value. An offset already
there when the exporter starts is dated by its znode's mtime where ZooKeeper holds it (never
later than that first scan), so the ZooKeeper server's clock matters only then; one only
Kafka holds is dated by that first scan, so a restart of the exporter never invents a STOP
for it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise


class Status(enum.IntEnum):
    """Burrow's status codes and their order of severity (its `StatusConstant`)."""

    NOTFOUND = 0
    OK = 1
    WARN = 2
    ERR = 3
    STOP = 4
    STALL = 5
    REWIND = 6


# What a partition can be: ERR is only ever a group's status (any partition beyond WARN).
# The exporter's defaults: a scan every 30 s, a window of 10 scans; the group commands judge
# from one look over the same span.
DEFAULT_INTERVAL_S = 30.0
DEFAULT_WINDOW_SAMPLES = 10
DEFAULT_WINDOW_S = DEFAULT_INTERVAL_S * DEFAULT_WINDOW_SAMPLES

PARTITION_STATUSES = (Status.OK, Status.WARN, Status.STOP, Status.STALL, Status.REWIND)


@dataclass(frozen=True)
class Observation:
    """A committed offset as seen at one moment, beside the log end seen at the same moment.
    Times are seconds since the epoch; `committed_at` is when this offset value was written
    (None where that cannot be known, which turns the age rules off)."""

    observed_at: float
    offset: int
    log_end: int
    committed_at: float | None

    @property
    def lag(self) -> int:
        """Never negative: the log end and the offset are read at slightly different moments."""
        return max(0, self.log_end - self.offset)


@dataclass(frozen=True)
class WindowRules:
    """A full window holds `samples` observations, one per scan, and covers `span_s` seconds
    (the scan interval times the samples). STOP and STALL need an offset older than the span;
    STALL and WARN need a full window, as Burrow judges only complete ones, and STOP two
    observations at least, so that one scan meeting a rebalance (owner znodes gone for a
    moment) cannot give it. `samples=1` is a judgement from one look (`group describe`)."""

    samples: int
    span_s: float

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise ValueError(f"a status window needs at least 1 sample, got {self.samples}")
        if self.span_s <= 0:
            raise ValueError(f"a status window must span some time, got {self.span_s}")

    def completeness(self, window: Sequence[Observation]) -> float:
        """Burrow's `complete`: how much of a full window has been seen (1.0 = full)."""
        return min(1.0, len(window) / self.samples)

    def is_full(self, window: Sequence[Observation]) -> bool:
        return len(window) >= self.samples


def partition_status(window: Sequence[Observation], rules: WindowRules, *, now: float,
                     owned: bool) -> Status:
    """The status of one partition from its window, oldest observation first."""
    if not window:
        return Status.NOTFOUND
    if any(observation.lag == 0 for observation in window):
        return Status.OK  # caught up now, or lag that appeared within the window
    offsets = [observation.offset for observation in window]
    if any(later < earlier for earlier, later in pairwise(offsets)):
        return Status.REWIND
    latest = window[-1]
    unchanged_too_long = (latest.committed_at is not None
                          and now - latest.committed_at > rules.span_s)
    if unchanged_too_long and not owned and len(window) >= min(2, rules.samples):
        return Status.STOP
    if unchanged_too_long and rules.is_full(window) and len(set(offsets)) == 1:
        return Status.STALL
    if rules.is_full(window) and _lag_never_shrank(window) and offsets[-1] > offsets[0]:
        return Status.WARN
    return Status.OK


def group_status(partitions: Iterable[Status]) -> Status:
    """The worst partition status, so the metric names the trouble (STOP, STALL, REWIND)."""
    return max(partitions, default=Status.OK)


def burrow_group_status(worst: Status) -> Status:
    """What Burrow itself answers for a group: OK, WARN, or ERR for anything worse."""
    return min(worst, Status.ERR)


def _lag_never_shrank(window: Sequence[Observation]) -> bool:
    lags = [observation.lag for observation in window]
    return all(later >= earlier for earlier, later in pairwise(lags))

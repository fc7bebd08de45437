"""Burrow 1.2.1's verdict on one partition, from the commits it would see: the judge of the
exporter's timing in the tests (Burrow itself is not run in the suite).

Its `kafka_zk` consumer module sends a commit for every write of an offset znode, dated by the
znode's mtime; its in-memory storage keeps the last `intervals` in a ring, a commit less than
`min-distance` after the last one kept taking that one's place (at that one's time), each with
the lag at that moment; its caching evaluator judges the ring as it is, full or not: with lag
now and in every commit kept, REWIND if an offset went back, STOP if the time since the last
commit is longer than the ring spans, STALL if every commit is of one offset, WARN if the lag
never shrank, OK otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise

from zkconsumer.lag.status import Status

MOMENT_S = 0.001


@dataclass(frozen=True)
class ConsumerOffset:
    """An entry of Burrow's ring (its `protocol.ConsumerOffset`), in seconds."""

    at: float
    offset: int
    lag: int


@dataclass
class BurrowPartition:
    intervals: int
    min_distance_s: float
    ring: list[ConsumerOffset] = field(default_factory=list)

    def commit(self, at: float, offset: int, log_end: int) -> None:
        lag = max(0, log_end - offset)
        if self.ring and at - self.ring[-1].at < self.min_distance_s:
            self.ring[-1] = ConsumerOffset(self.ring[-1].at, offset, lag)
        else:
            self.ring = [*self.ring, ConsumerOffset(at, offset, lag)][-self.intervals:]

    def status(self, now: float, log_end: int) -> Status:
        ring = self.ring
        if not ring or log_end - ring[-1].offset <= 0 or any(c.lag == 0 for c in ring):
            return Status.OK
        if any(later.offset < earlier.offset for earlier, later in pairwise(ring)):
            return Status.REWIND
        if now - ring[-1].at > ring[-1].at - ring[0].at:
            return Status.STOP
        if all(c.offset == ring[0].offset for c in ring):
            return Status.STALL
        if all(later.lag >= earlier.lag for earlier, later in pairwise(ring)):
            return Status.WARN
        return Status.OK


def first_burrow_stall(commits: Iterable[tuple[float, int, int]], intervals: int,
                       min_distance_s: float) -> float | None:
    """When Burrow first says STALL, from (time, offset, log end then) of each commit: a
    stall only ever starts at a commit, so each is judged a moment after it is stored (one
    commit alone is STOP then; Burrow, whose clock counts whole seconds, says STALL for the
    rest of that second, a verdict no one can act on)."""
    partition = BurrowPartition(intervals, min_distance_s)
    for at, offset, log_end in commits:
        partition.commit(at, offset, log_end)
        if partition.status(at + MOMENT_S, log_end) is Status.STALL:
            return at
    return None

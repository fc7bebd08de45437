"""Whether a partition was delivered by two members at once, judged from delivery times.

A member delivering a partition does so in stints: deliveries no further apart than `gap_s`
(a fetch's wait, a quiet producer) belong to one stint, from its first delivery to its last.
A handover ends one member's stint before the next member's begins, however quickly it goes
and whatever the next member delivers again; two members' stints of one partition that
intersect mean both handed it out at once. `gap_s` only has to be shorter than a rebalance, so
that no handover is taken for an overlap; what it cannot see is two members each delivering a
partition more sparsely than `gap_s` (every stint a single delivery, never inside another's),
so the deliveries judged must come more often than that: the fault runner's producer writes
every partition many times a second.

A delivery is timed a moment after it was handed out (by the handler it is given to; for a
client that polls, when its poll returns a whole batch), so a quick handover can look a few
milliseconds late: two stints that meet by no more than `tolerance_s` (a span shared that
briefly, or a delivery that close to an end of the other's span) are not counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Stint:
    member: str
    partition: int
    start: float
    end: float
    deliveries: int


@dataclass(frozen=True)
class Overlap:
    partition: int
    members: tuple[str, str]
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


def stints(member: str, deliveries: Iterable[tuple[int, float]], gap_s: float) -> list[Stint]:
    """`deliveries`: (partition, time) of one member's deliveries."""
    times: dict[int, list[float]] = defaultdict(list)
    for partition, at in deliveries:
        times[partition].append(at)
    found = []
    for partition, moments in times.items():
        moments.sort()
        start = previous = moments[0]
        count = 0
        for at in moments:
            if at - previous > gap_s:
                found.append(Stint(member, partition, start, previous, count))
                start, count = at, 0
            previous = at
            count += 1
        found.append(Stint(member, partition, start, previous, count))
    return found


def overlaps(deliveries: Mapping[str, Iterable[tuple[int, float]]], gap_s: float,
             tolerance_s: float = 0.0) -> list[Overlap]:
    """Every intersection of two members' stints of a partition deeper than `tolerance_s`,
    by time; `deliveries`: member -> its (partition, time) deliveries."""
    by_partition: dict[int, list[Stint]] = defaultdict(list)
    for member, theirs in deliveries.items():
        for stint in stints(member, theirs, gap_s):
            by_partition[stint.partition].append(stint)
    found = []
    for partition, all_stints in sorted(by_partition.items()):
        all_stints.sort(key=lambda stint: stint.start)
        for i, first in enumerate(all_stints):
            for second in all_stints[i + 1:]:
                if second.start > first.end:
                    break
                if second.member != first.member and _depth(first, second) > tolerance_s:
                    found.append(Overlap(partition, (first.member, second.member),
                                         second.start, min(first.end, second.end)))
    return found


def _depth(first: Stint, second: Stint) -> float:
    """How far two stints meet: the length of the span they share, or, for a single delivery
    inside the other's span, its distance to the nearer end; -1 when they do not meet (stints
    that only touch at an end meet by 0)."""
    low, high = max(first.start, second.start), min(first.end, second.end)
    if low < high:
        return high - low
    if low > high:
        return -1.0
    for point, span in ((first, second), (second, first)):
        if point.start == point.end and span.start < low < span.end:
            return min(low - span.start, span.end - low)
    return -1.0

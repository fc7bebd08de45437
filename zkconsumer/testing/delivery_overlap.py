"""Whether a partition was delivered by two members at once, judged from delivery times.

A member delivering a partition does so in stints: deliveries no further apart than `gap_s`
(a fetch's wait, a quiet producer) belong to one stint, from its first delivery to its last.
A handover ends one member's stint before the next member's begins, however quickly it goes
and whatever the next member delivers again; two members' stints of one partition that
intersect mean both handed it out at once. `gap_s` only has to be longer than a fetch's wait
and shorter than most rebalances; what it cannot see is two members each delivering a
partition more sparsely than `gap_s` (every stint a single delivery, never inside another's),
so the deliveries judged must come more often than that: the fault runner's producer writes
every partition many times a second.

A partition can also go to another member and come back quicker than `gap_s` (two rebalances
in a row, as members arrive one by one). The offsets tell that apart from two members at once:
the member it came back to resumes after what the other delivered meanwhile (its own offsets
skip the other's), where a member still holding the partition would have delivered those
offsets itself. Such a skip ends a stint as a gap does.

A delivery is timed a moment after it was handed out (by the handler it is given to; for a
client that polls, when its poll returns a whole batch), so a quick handover can look a few
milliseconds late: two stints that meet by no more than `tolerance_s` (a span shared that
briefly, or a delivery that close to an end of the other's span) are not counted.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
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


Delivery = tuple[int, int, float]  # (partition, offset, time) of one delivery


def stints(deliveries: Mapping[str, Iterable[Delivery]], gap_s: float) -> list[Stint]:
    """Every member's stints of every partition; `deliveries`: member -> its deliveries."""
    by_partition: dict[int, list[tuple[float, int, str]]] = defaultdict(list)
    for member, theirs in deliveries.items():
        for partition, offset, at in theirs:
            by_partition[partition].append((at, offset, member))
    found = []
    for partition, everyones in sorted(by_partition.items()):
        everyones.sort()
        by_member: dict[str, list[tuple[float, int]]] = defaultdict(list)
        for at, offset, member in everyones:
            by_member[member].append((at, offset))
        times = [at for at, _offset, _member in everyones]
        for member, moments in by_member.items():
            found.extend(_stints_of(member, partition, moments, everyones, times, gap_s))
    return found


def _stints_of(member: str, partition: int, moments: list[tuple[float, int]],
               everyones: list[tuple[float, int, str]], times: list[float],
               gap_s: float) -> list[Stint]:
    """One member's (time, offset) deliveries of one partition, in time order, cut into
    stints wherever they pause longer than `gap_s` or the partition went elsewhere and back
    (`everyones`: every member's (time, offset, member) deliveries of it, in time order;
    `times`: their times)."""

    def handed_back(before: tuple[float, int], after: tuple[float, int]) -> bool:
        """Whether another member delivered, between two consecutive deliveries of this
        member's, an offset this member skipped."""
        first, last = bisect_left(times, before[0]), bisect_right(times, after[0])
        return any(other != member and before[1] < offset < after[1]
                   for _at, offset, other in everyones[first:last])

    found = []
    start, previous, count = moments[0][0], moments[0], 0
    for moment in moments:
        if moment[0] - previous[0] > gap_s or handed_back(previous, moment):
            found.append(Stint(member, partition, start, previous[0], count))
            start, count = moment[0], 0
        previous = moment
        count += 1
    found.append(Stint(member, partition, start, previous[0], count))
    return found


def overlaps(deliveries: Mapping[str, Iterable[Delivery]], gap_s: float,
             tolerance_s: float = 0.0) -> list[Overlap]:
    """Every intersection of two members' stints of a partition deeper than `tolerance_s`,
    by time; `deliveries`: member -> its deliveries."""
    by_partition: dict[int, list[Stint]] = defaultdict(list)
    for stint in stints(deliveries, gap_s):
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

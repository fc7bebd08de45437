"""Burrow's consumer status, judged over a sliding window of offset observations (pure).

Burrow reads a commit from `__consumer_offsets` every time a consumer makes one, so "no commit
for longer than the window" is something it sees. A legacy group shows less: the Scala consumer
rewrites an offset znode only when the offset changed, so an offset that stopped moving looks
the same whether its consumer stopped committing or keeps committing the same number. What a
ZooKeeper group does show is who is alive: the owner znodes of registered members. So:

- the offset has been silent too long (below), with lag, and nobody owns the partition: STOP
  (no consumer is there to move it);
- the same, but a registered member owns it: STALL (a consumer is there and does not move);
- a consumer that does write the same number again is seen doing it (each write changes the
  znode's mtime, read with the offset): two commits or more of one offset, with lag at each,
  are STALL as in Burrow's rule, at the first scan after the second commit, owner or not;
- an idle topic never gets either: with no lag the partition is OK whatever the offset's age,
  and lag that was zero at some point of the window (a burst on an idle topic being worked
  through) is OK as well.

A verdict comes as soon as the evidence is there, as Burrow gives one from the commits it has
before its ring of `intervals` is full, but only from evidence that rules out what a healthy
consumer shows. Burrow with a partial ring judges from as little as one commit (one commit with
lag is already STOP, two with the lag not shrinking WARN); this takes its rules, in its order,
with these amounts of evidence:

- OK if the lag was zero in any observation of the window (Burrow's first rule), first of all;
- REWIND from two observations: an offset lower than an earlier one is a fact at once, and
  observations a scan could not read (a malformed offset znode) leave no gap in the comparison;
- silent too long (Burrow's "stopped": no commit for longer than its kept commits span): once
  the scans have seen three of the partition's commits, longer than the time from the
  first of its last `samples` commits to the latest, as Burrow measures over its ring: two
  waits between commits at least, so a consumer that commits in big jumps every few seconds
  is never silent between two of them. Before three are seen, longer than the window
  (`span_s`), and STALL then also needs a full window with one offset throughout. Never
  longer than `span_s` either way;
- STALL from the commits (above): Burrow's rule 4, from two commits, as Burrow judges a ring
  that is not full yet;
- WARN over a full window when the offset moved and the lag never shrank (Burrow's rule); from
  three observations on, when the lag grew at every scan and by more in all than the offset
  moved in any one scan. A consumer that keeps up but commits in jumps shows a lag that rises
  between commits and falls back at each, by no more than a commit moves it; where the scans
  are further apart than its commits each lag is a fresh draw, and three rising ones alone
  would come by chance to one such consumer in six.

The age of an offset is taken from its znode's mtime where ZooKeeper holds it, bounded by the
scans: never before the last scan that saw the previous offset, never after the first that saw
this one, so the ZooKeeper server's clock counts for at most an interval, except for an offset
already there when the exporter starts (never later than that first scan). One only Kafka
holds is dated by the first scan that saw it, and at the exporter's start counts as no offset
seen arriving, so a restart of the exporter never invents a STOP for it.
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

# The evidence an early verdict needs (see the module's docstring).
EARLY_SILENCE_CHANGES = 3
EARLY_WARN_OBSERVATIONS = 3

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
class Commit:
    """One commit of a partition's offset as Burrow keeps it in its ring: when it was made,
    the offset, and the lag at that moment (the log end then, less the offset)."""

    at: float
    offset: int
    lag: int


@dataclass(frozen=True)
class WindowRules:
    """A full window holds `samples` observations, one per scan, and covers `span_s` seconds
    (the scan interval times the samples): the most an offset may stay silent, with lag, before
    STOP or STALL. STOP needs two observations at least, so that one scan meeting a rebalance
    (owner znodes gone for a moment) cannot give it. `samples=1` is a judgement from one look
    (`group describe`), which the early rules never apply to: they need three observations or
    three offsets seen arriving."""

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
                     owned: bool, commits: Sequence[Commit] = ()) -> Status:
    """The status of one partition from its window, oldest observation first, and `commits`,
    its last commits seen, oldest first (`OffsetHistory.commits`)."""
    if not window:
        return Status.NOTFOUND
    if any(observation.lag == 0 for observation in window):
        return Status.OK  # caught up now, or lag that appeared within the window
    offsets = [observation.offset for observation in window]
    if any(later < earlier for earlier, later in pairwise(offsets)):
        return Status.REWIND
    latest = window[-1]
    early = len(commits) >= EARLY_SILENCE_CHANGES
    quiet_limit = min(rules.span_s, commits[-1].at - commits[0].at) if early else rules.span_s
    last_commit = commits[-1].at if commits else latest.committed_at
    silent = last_commit is not None and now - last_commit > quiet_limit
    if silent and not owned:
        if len(window) >= min(2, rules.samples):  # one look may meet a rebalance
            return Status.STOP
    elif silent and (early or (rules.is_full(window) and len(set(offsets)) == 1)):
        return Status.STALL
    if _committing_without_moving(commits, latest.offset):
        return Status.STALL
    if rules.is_full(window) and _lag_never_shrank(window) and offsets[-1] > offsets[0]:
        return Status.WARN
    if len(window) >= EARLY_WARN_OBSERVATIONS and _falling_behind(window):
        return Status.WARN
    return Status.OK


def group_status(partitions: Iterable[Status]) -> Status:
    """The worst partition status, so the metric names the trouble (STOP, STALL, REWIND)."""
    return max(partitions, default=Status.OK)


def burrow_group_status(worst: Status) -> Status:
    """What Burrow itself answers for a group: OK, WARN, or ERR for anything worse."""
    return min(worst, Status.ERR)


def _committing_without_moving(commits: Sequence[Commit], offset: int) -> bool:
    """Burrow's stall: two commits or more, every one of the same offset and with lag (a
    consumer there, committing, and not moving)."""
    return len(commits) >= 2 and all(commit.offset == offset and commit.lag > 0
                                     for commit in commits)


def _lag_never_shrank(window: Sequence[Observation]) -> bool:
    lags = [observation.lag for observation in window]
    return all(later >= earlier for earlier, later in pairwise(lags))


def _falling_behind(window: Sequence[Observation]) -> bool:
    """The lag grew at every scan, and by more in all than the offset moved in any one: more
    than a consumer that keeps up but commits in jumps can show between two commits."""
    lags = [observation.lag for observation in window]
    steps = [later.offset - earlier.offset for earlier, later in pairwise(window)]
    return (all(later > earlier for earlier, later in pairwise(lags)) and sum(steps) > 0
            and lags[-1] - lags[0] > max(steps))

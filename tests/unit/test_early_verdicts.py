"""Verdicts as early as the evidence allows, and none that a full window would call OK: scans
fed to the window kept between them at injected times, the verdict read after each."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from support.burrow_rules import first_burrow_stall

from zkconsumer.lag.history import OffsetHistory
from zkconsumer.lag.status import Commit, Observation, Status, WindowRules, partition_status
from zkconsumer.model import TopicPartition

KEY = ("g", TopicPartition("t", 0))
INTERVAL = 10.0
SAMPLES = 10
RULES = WindowRules(SAMPLES, INTERVAL * SAMPLES)

# One scan: its time, and what it read (committed offset, log end), or None if it read nothing.
Scan = tuple[float, tuple[int, int] | None]


def verdicts(scans: Iterable[Scan], *, owned: bool = True, written_at: float | None = None,
             rules: WindowRules = RULES) -> list[tuple[float, Status]]:
    """The status after each scan; the first offset's znode written at `written_at`, each
    later one just before the scan that reads it (None: offsets only Kafka holds)."""
    history = OffsetHistory(rules)
    found = []
    mtime, offset = written_at, None
    for at, read in scans:
        if read is not None and offset is not None and read[0] != offset:
            mtime = None if written_at is None else at
        offset = offset if read is None else read[0]
        seen = {} if read is None else {KEY: (*read, mtime)}
        history.record(at, seen, {KEY[0]})
        window = history.window(KEY) if history.read_last_scan(KEY) else ()
        found.append((at, partition_status(window, rules, now=at, owned=owned,
                                           commits=history.commits(KEY))))
    return found


def first(status: Status, found: list[tuple[float, Status]]) -> float | None:
    return next((at for at, seen in found if seen == status), None)


def every(count: int, read: Callable[[float], tuple[int, int]], start: float = 0.0,
          interval: float = INTERVAL) -> list[Scan]:
    return [(start + interval * n, read(start + interval * n)) for n in range(count)]


def test_a_consumer_falling_behind_is_warn_at_the_third_scan_not_the_tenth():
    """It reads 5 records a second while 20 arrive: the lag grows 150 a scan, the offset 50."""
    found = verdicts(every(SAMPLES, lambda t: (5 * int(t), 20 * int(t) + 100)))
    assert first(Status.WARN, found) == 2 * INTERVAL
    assert {seen for _, seen in found[2:]} == {Status.WARN}


def test_a_consumer_slightly_behind_needs_more_scans_before_warn():
    """It reads 16 a second while 20 arrive: the lag grows 40 a scan and the offset 160, so it
    takes five rises (six scans) to outgrow one step; a full window would say WARN anyway."""
    found = verdicts(every(SAMPLES, lambda t: (16 * int(t), 20 * int(t) + 100)))
    assert first(Status.WARN, found) == 5 * INTERVAL


def hangs_at_20_s(t: float) -> tuple[int, int]:
    """A consumer keeping up with 20 records a second, 100 behind, until it hangs at 20 s."""
    return (20 * int(min(t, 20.0)), 20 * int(t) + 100)


def test_a_hung_member_is_stall_once_silent_longer_than_the_offsets_it_was_seen_to_commit():
    """Offsets seen arriving at 0, 10 and 20 s (the first dated by its znode's mtime), then
    none: silent longer than those 20 s at the scan of 50 s, not a window (100 s) later."""
    found = verdicts(every(8, hangs_at_20_s), written_at=0.0)
    assert first(Status.STALL, found) == 50.0
    assert [seen for _, seen in found[:5]] == [Status.OK] * 5


def test_a_member_gone_is_stop_as_early():
    found = verdicts(every(8, hangs_at_20_s), owned=False, written_at=0.0)
    assert first(Status.STOP, found) == 50.0


def test_an_offset_only_kafka_holds_dates_no_commit_at_the_first_scan():
    """Its write time unknown, the first offset is no commit seen: two seen arriving are too
    few to measure a silence by, so STALL waits for a full window of the offset unchanged for
    longer than the window (20 s + 100 s)."""
    found = verdicts(every(SAMPLES + 4, hangs_at_20_s), written_at=None)
    assert first(Status.STALL, found) == 130.0


def test_an_offset_unchanged_since_the_start_waits_for_the_window():
    """Nothing seen arriving: the consumer's pace is unknown, so STALL takes a full window of
    one offset older than the window (written at 0 s, so at the scan after 100 s), as before."""
    found = verdicts(every(SAMPLES + 2, lambda t: (40, 20 * int(t) + 100)), written_at=0.0)
    assert first(Status.STALL, found) == 110.0


def test_a_consumer_committing_big_jumps_every_10_s_is_never_stall_or_warn_when_scanned_often():
    """Scanned every second with a window of 30 s, its offset stays still for nine scans while
    the lag grows, then jumps: silent for less than its commits are apart, and a lag that
    falls back at every commit."""
    def read(t: float) -> tuple[int, int]:
        return (20 * int(10 * (t // 10)), 20 * int(t) + 30)

    found = verdicts(every(120, read, interval=1.0), written_at=0.0,
                     rules=WindowRules(30, 30.0))
    assert {seen for _, seen in found} == {Status.OK}


def test_a_consumer_keeping_up_with_scans_slower_than_its_commits_is_not_warn_by_chance():
    """Each scan meets it at a different point between two commits: three lags rising by
    chance, but by less than one step of the offset."""
    lags = iter([12, 25, 38, 7, 19, 33, 11, 24, 35, 9, 22, 30])
    found = verdicts(every(12, lambda t: (40 * int(t), 40 * int(t) + next(lags))),
                     written_at=0.0)
    assert {seen for _, seen in found} == {Status.OK}


def test_lag_zero_anywhere_in_the_window_is_ok_whatever_the_early_evidence():
    """Caught up at the first scan, then falling behind fast and silent after three offsets:
    OK while the zero is in the window, STALL once it has left it."""
    def read(t: float) -> tuple[int, int]:
        return (10 * int(min(t, 20.0)), 50 * int(t))

    found = verdicts(every(SAMPLES + 1, read), written_at=0.0)
    assert {seen for _, seen in found[:SAMPLES]} == {Status.OK}
    assert found[SAMPLES] == (SAMPLES * INTERVAL, Status.STALL)


def test_a_rewind_after_an_unreadable_offset_is_seen():
    """The scan in the middle could not read the offset (its znode held -5): that scan's
    place is empty, and the next offset is still compared with the one before it."""
    found = verdicts([(0.0, (120, 200)), (10.0, None), (20.0, (80, 200))], written_at=0.0)
    assert found == [(0.0, Status.OK), (10.0, Status.NOTFOUND), (20.0, Status.REWIND)]


def test_an_unreadable_offset_keeps_the_window_until_it_holds_only_empty_places():
    history = OffsetHistory(WindowRules(3, 30))
    history.record(0.0, {KEY: (5, 9, 0.0)}, {"g"})
    history.record(10.0, {}, {"g"})
    history.record(20.0, {}, {"g"})
    assert [o.offset for o in history.window(KEY)] == [5] and [c.at for c in history.commits(KEY)] == [0.0]
    assert not history.read_last_scan(KEY)
    history.record(30.0, {}, {"g"})
    assert history.window(KEY) == () and history.commits(KEY) == ()


def test_one_observation_after_a_long_unread_spell_is_never_stop():
    """Three offsets seen arriving, then scans that read nothing (a broker outage) until one
    observation is left in the window: one look meeting a rebalance (no owner for a moment) is
    no evidence of a stop, whatever the early rule's silence says."""
    window = [Observation(1000.0, 40, 90, 700.0)]
    commits = (Commit(600.0, 30, 20), Commit(650.0, 35, 30), Commit(700.0, 40, 40))
    assert partition_status(window, RULES, now=1000.0, owned=False,
                            commits=commits) is Status.OK
    two = [Observation(990.0, 40, 90, 700.0), *window]
    assert partition_status(two, RULES, now=1000.0, owned=False,
                            commits=commits) is Status.STOP


# -- commits as Burrow takes them: a rewrite of the same offset is one ---------------------------

# The setup Burrow was compared in by hand: a scan every 10 s over 6 samples beside Burrow's
# ring of 6 intervals with a min-distance of 9 s.
SIDE_BY_SIDE = WindowRules(6, 60.0)
BURROW_INTERVALS, BURROW_MIN_DISTANCE = 6, 9.0


def log_grows(t: float) -> int:
    return 200 + 5 * int(t)


def side_by_side(commits: list[tuple[float, int]], log_end: Callable[[float], int] = log_grows,
                 until: float = 150.0) -> tuple[list[tuple[float, Status]], float | None]:
    """The exporter's verdict at each scan, each reading the last commit written before it
    (its offset, and its mtime, which the cache reads with it), and when Burrow's rules first
    say STALL on the same commits."""
    history = OffsetHistory(SIDE_BY_SIDE)
    found = []
    for n in range(int(until // INTERVAL) + 1):
        at = n * INTERVAL
        written = [commit for commit in commits if commit[0] <= at]
        if written:
            mtime, offset = written[-1]
            history.record(at, {KEY: (offset, log_end(at), mtime)}, {KEY[0]})
            found.append((at, partition_status(history.window(KEY), SIDE_BY_SIDE, now=at,
                                               owned=True, commits=history.commits(KEY))))
    burrow = first_burrow_stall([(at, offset, log_end(at)) for at, offset in commits],
                                BURROW_INTERVALS, BURROW_MIN_DISTANCE)
    return found, burrow


def rewrites_every_11_s(offset: int, start: float = 3.0, count: int = 14
                        ) -> list[tuple[float, int]]:
    return [(start + 11.0 * n, offset) for n in range(count)]


def test_a_member_rewriting_one_offset_is_stall_within_a_scan_of_burrow():
    """The log grows while the member rewrites offset 100 every 11 s: Burrow says STALL at the
    second commit (14 s); so does the exporter at the first scan after it, not after a full
    window of silence, and never before Burrow."""
    found, burrow = side_by_side(rewrites_every_11_s(100))
    assert burrow == 14.0
    stall = first(Status.STALL, found)
    assert stall is not None and burrow <= stall <= burrow + INTERVAL
    assert {seen for at, seen in found if at >= stall} == {Status.STALL}


def test_a_member_that_stops_moving_but_keeps_committing_is_stall_once_burrows_ring_is():
    """It keeps up 10 behind until 47 s, then rewrites the same offset: Burrow's ring holds only
    that offset at its sixth commit of it, and the exporter says STALL within a scan of that."""
    commits = [(at, log_grows(at) - 10 if at <= 47.0 else log_grows(47.0) - 10)
               for at, _ in rewrites_every_11_s(0, count=14)]
    found, burrow = side_by_side(commits)
    assert burrow == 3.0 + 11.0 * 9  # the commit at 47 s, then 5 more of the same offset
    stall = first(Status.STALL, found)
    assert stall is not None and burrow <= stall <= burrow + INTERVAL


def test_rewrites_with_no_lag_or_a_moving_offset_are_never_stall():
    """Caught up on an idle topic and committing the same offset, or moving at every commit:
    Burrow says no STALL, nor does the exporter."""
    caught_up, burrow = side_by_side(rewrites_every_11_s(200), log_end=lambda t: 200)
    assert burrow is None and {seen for _, seen in caught_up} == {Status.OK}
    moving = [(at, log_grows(at) - 10) for at, _ in rewrites_every_11_s(0)]
    found, burrow = side_by_side(moving)
    assert burrow is None and first(Status.STALL, found) is None


def test_a_rewrite_is_a_commit_dated_by_its_mtime_within_the_scans():
    history = OffsetHistory(RULES)
    for at, mtime in ((10.0, 3.0), (20.0, 3.0), (30.0, 24.0), (40.0, 99.0)):
        history.record(at, {KEY: (7, 50, mtime)}, {KEY[0]})
    assert history.commits(KEY) == (Commit(3.0, 7, 43), Commit(24.0, 7, 43),
                                    Commit(40.0, 7, 43))
    assert [o.committed_at for o in history.window(KEY)] == [3.0, 3.0, 24.0, 40.0]

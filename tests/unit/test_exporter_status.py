"""Burrow's status rules over a window, and the window kept between scans."""

from __future__ import annotations

import pytest

from zkconsumer.lag.history import OffsetHistory
from zkconsumer.lag.status import (
    Observation,
    Status,
    WindowRules,
    burrow_group_status,
    group_status,
    partition_status,
)
from zkconsumer.model import TopicPartition

RULES = WindowRules(samples=4, span_s=40)
NOW = 1_000_000.0


def window(*points: tuple[int, int], committed_at: float | None = None,
           step: float = 10) -> list[Observation]:
    """Observations (offset, log end) one `step` apart, ending at NOW; each offset dated by
    `committed_at` or, by default, by the first observation that showed it."""
    start = NOW - step * (len(points) - 1)
    found = []
    first_seen: dict[int, float] = {}
    for index, (offset, log_end) in enumerate(points):
        at = start + step * index
        first_seen.setdefault(offset, at)
        written = committed_at if committed_at is not None else first_seen[offset]
        found.append(Observation(at, offset, log_end, written))
    return found


def status(observations, owned=True) -> Status:
    return partition_status(observations, RULES, now=NOW, owned=owned)


def test_no_lag_is_ok_whatever_the_age_of_the_offset():
    """An idle topic: the consumer is caught up and has not written for hours."""
    assert status(window((50, 50), committed_at=NOW - 36_000), owned=False) == Status.OK
    assert status(window((50, 50), committed_at=NOW - 36_000), owned=True) == Status.OK


def test_lag_and_an_old_offset_with_no_owner_is_stop():
    assert status(window((10, 50), (10, 55), committed_at=NOW - 41), owned=False) == Status.STOP


def test_stop_waits_for_the_offset_to_be_older_than_the_window():
    assert status(window((10, 50), (10, 55), committed_at=NOW - 39), owned=False) == Status.OK


def test_one_observation_without_an_owner_is_not_yet_stop():
    """One scan may meet a rebalance, when the old consumer has deleted its owner znodes."""
    assert status(window((10, 50), committed_at=NOW - 100), owned=False) == Status.OK


def test_lag_zero_earlier_in_the_window_is_ok_even_with_nobody_owning():
    """A sparse topic: a message just arrived while a rebalance had the owners away."""
    observations = window((10, 10), (10, 10), (10, 11), committed_at=NOW - 3_600)
    assert status(observations, owned=False) == Status.OK


def test_lag_and_an_old_offset_with_a_live_owner_over_a_full_window_is_stall():
    observations = window((10, 40), (10, 45), (10, 50), (10, 52), committed_at=NOW - 100)
    assert status(observations, owned=True) == Status.STALL


def test_stall_needs_a_full_window():
    """A consumer working through a burst commits every auto.commit.interval.ms: a few scans
    with the offset unchanged prove nothing."""
    observations = window((10, 40), (10, 45), (10, 50), committed_at=NOW - 100)
    assert status(observations, owned=True) == Status.OK


def test_one_look_judges_stop_and_stall_from_the_offsets_age():
    """`group describe`: a window of one sample is full."""
    rules = WindowRules(samples=1, span_s=40)
    [old] = window((10, 50), committed_at=NOW - 41)
    assert partition_status([old], rules, now=NOW, owned=False) == Status.STOP
    assert partition_status([old], rules, now=NOW, owned=True) == Status.STALL


def test_a_burst_on_an_idle_topic_being_worked_through_is_not_stall():
    """The owner committed long ago (nothing to do), lag appeared in the window and was zero
    before it: OK, not STALL, although the offset's znode is old."""
    observations = window((10, 10), (10, 30), (10, 60), committed_at=NOW - 3_600)
    assert status(observations, owned=True) == Status.OK


def test_an_offset_that_went_back_is_rewind():
    assert status(window((30, 80), (35, 90), (20, 95))) == Status.REWIND


def test_moving_with_lag_never_shrinking_over_a_full_window_is_warn():
    assert status(window((10, 50), (20, 65), (30, 80), (40, 95))) == Status.WARN


def test_warn_needs_a_full_window():
    assert status(window((10, 50), (20, 65), (30, 80))) == Status.OK


def test_moving_with_lag_shrinking_is_ok():
    assert status(window((10, 50), (30, 65), (50, 80), (70, 90))) == Status.OK


def test_an_unknown_write_time_turns_the_age_rules_off():
    observations = [Observation(NOW, 10, 50, None)]
    assert status(observations, owned=False) == Status.OK


def test_no_observation_is_not_found():
    assert status([]) == Status.NOTFOUND


def test_a_group_takes_its_worst_partition_and_burrow_caps_it_at_err():
    worst = group_status([Status.OK, Status.STALL, Status.WARN])
    assert worst == Status.STALL
    assert burrow_group_status(worst) == Status.ERR
    assert burrow_group_status(group_status([Status.OK, Status.WARN])) == Status.WARN
    assert group_status([]) == Status.OK


def test_window_rules_refuse_a_window_that_cannot_judge():
    with pytest.raises(ValueError, match="at least 1 sample"):
        WindowRules(0, 10)
    with pytest.raises(ValueError, match="span some time"):
        WindowRules(3, 0)


TP = TopicPartition("t", 0)


def test_history_keeps_the_last_samples_and_dates_each_offset_by_first_sight():
    history = OffsetHistory(RULES)
    for at, offset in enumerate((5, 5, 7, 7, 7)):
        history.record(float(at), {("g", TP): (offset, 10, None)}, {"g"})
    kept = history.window(("g", TP))
    assert [o.offset for o in kept] == [5, 7, 7, 7]
    assert [o.committed_at for o in kept] == [0.0, 2.0, 2.0, 2.0]


def test_history_dates_a_change_by_its_mtime_within_the_scans_around_it():
    """At the first observation the mtime is taken as it is (never after that scan); later,
    only between the scan that last saw the previous offset and the one that sees this one."""
    history = OffsetHistory(RULES)
    both = {"g", "h"}
    history.record(100.0, {("g", TP): (5, 10, 42.0), ("h", TP): (1, 10, 500.0)}, both)
    history.record(110.0, {("g", TP): (5, 10, 42.0), ("h", TP): (2, 10, 105.0)}, both)
    history.record(120.0, {("g", TP): (6, 10, 999.0), ("h", TP): (3, 10, 117.0)}, both)
    history.record(130.0, {("g", TP): (7, 10, 1.0), ("h", TP): (3, 10, 117.0)}, both)
    assert [o.committed_at for o in history.window(("g", TP))] == [42.0, 42.0, 120.0, 120.0]
    assert [o.committed_at for o in history.window(("h", TP))] == [100.0, 105.0, 117.0, 117.0]
    assert [c.at for c in history.commits(("g", TP))] == [42.0, 120.0, 120.0]


def test_history_forgets_the_groups_a_scan_did_not_see():
    history = OffsetHistory(RULES)
    history.record(100.0, {("g", TP): (5, 10, 42.0), ("h", TP): (1, 10, None)}, {"g", "h"})
    history.record(110.0, {("g", TP): (5, 10, 42.0)}, {"g"})
    assert history.window(("h", TP)) == ()
    history.record(120.0, {("h", TP): (1, 10, None)}, {"h"})
    assert [o.committed_at for o in history.window(("h", TP))] == [120.0]

"""When a member reads its group after a change: its rank's turn, on a fake clock."""

from __future__ import annotations

import pytest

from zkconsumer.zk.turns import Turns


def test_nothing_changed_reads_at_once():
    assert Turns(0.01, rank=5).wait(100.0) == 0.0


def test_a_member_waits_its_rank_times_the_turn_after_the_first_unread_change():
    turns = Turns(0.01, rank=3)  # of a group of no size: no half spread first
    turns.changed(10.0)
    assert turns.wait(10.0) == pytest.approx(0.03)
    turns.changed(10.02)  # a later change does not push the turn back
    assert turns.wait(10.02) == pytest.approx(0.01)
    assert turns.wait(10.05) == 0.0


def test_the_first_rank_of_no_group_reads_at_once_and_a_turn_of_zero_as_the_reference():
    first = Turns(0.01, rank=0)
    first.changed(1.0)
    assert first.wait(1.0) == 0.0
    reference = Turns(0.0, rank=199)
    reference.changed(1.0)
    assert reference.wait(1.0) == 0.0


def test_reading_takes_in_the_changes_so_far():
    turns = Turns(0.01, rank=2)
    turns.changed(5.0)
    turns.reading()
    assert turns.wait(5.0) == 0.0
    turns.changed(6.0)
    assert turns.wait(6.0) == pytest.approx(0.02)


def test_a_member_not_ranked_yet_draws_a_place_among_those_registered():
    turns = Turns(0.01)
    turns.unranked(50, 0.5)
    turns.changed(0.0)
    assert turns.wait(0.0) == pytest.approx(0.25 + 0.25), "its place, after the gathering"
    turns.ranked(7, 40)
    assert turns.wait(0.0) == pytest.approx(0.2 + 0.07)
    assert not turns.unranked(50, 0.9), "a ranked member draws no place"
    assert turns.wait(0.0) == pytest.approx(0.2 + 0.07)


def test_every_member_first_lets_half_the_groups_spread_go_by():
    """A deploy stops workers and starts them again a few seconds later: changes that close
    are gathered into one read by every member, the first one included."""
    first, last = Turns(0.01), Turns(0.01)
    first.ranked(0, 200)
    last.ranked(199, 200)
    for turns in (first, last):
        turns.changed(10.0)
    assert first.wait(10.0) == pytest.approx(1.0)
    assert last.wait(10.0) == pytest.approx(1.0 + 1.99)
    first.changed(10.5)
    assert first.wait(10.6) == pytest.approx(0.4), "a later change does not push it back"
    small = Turns(0.01)
    small.ranked(0, 10)
    small.changed(0.0)
    assert small.wait(0.0) == pytest.approx(0.05), "a small group gathers briefly"
    reference = Turns(0.0)
    reference.ranked(0, 200)
    reference.changed(0.0)
    assert reference.wait(0.0) == 0.0, "a turn of 0 reads at once, as the reference"


def test_negative_turns_ranks_and_sizes_are_refused():
    with pytest.raises(ValueError, match="turn"):
        Turns(-0.01)
    with pytest.raises(ValueError, match="rank"):
        Turns(0.01).ranked(-1, 3)
    with pytest.raises(ValueError, match="size"):
        Turns(0.01).ranked(0, -1)

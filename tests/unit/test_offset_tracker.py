"""OffsetTracker: only moved positions are pending, never below the committed offset."""

from __future__ import annotations

import threading

from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.model import TopicPartition
from zkconsumer.offsets import OffsetTracker

A = TopicPartition("a", 0)
B = TopicPartition("a", 1)


def test_position_is_last_delivered_plus_one():
    tracker = OffsetTracker()
    tracker.record_delivered(A, 41)
    assert tracker.pending() == {A: 42}


def test_partition_without_committed_offset_is_pending_from_the_first_message():
    tracker = OffsetTracker()
    tracker.set_committed({})
    tracker.record_delivered(A, 0)
    assert tracker.pending() == {A: 1}


def test_only_changed_offsets_are_pending():
    tracker = OffsetTracker()
    tracker.set_committed({A: 10, B: 20})
    tracker.record_delivered(A, 14)
    assert tracker.pending() == {A: 15}
    tracker.mark_committed({A: 15})
    assert tracker.pending() == {}
    tracker.record_delivered(B, 20)
    assert tracker.pending() == {B: 21}


def test_nothing_delivered_means_nothing_pending():
    tracker = OffsetTracker()
    tracker.set_committed({A: 10})
    assert tracker.pending() == {}


def test_a_position_at_the_committed_offset_is_not_rewritten():
    tracker = OffsetTracker()
    tracker.set_committed({A: 10})
    tracker.record_delivered(A, 9)
    assert tracker.pending() == {}


def test_no_rewind_below_committed():
    tracker = OffsetTracker()
    tracker.set_committed({A: 100})
    tracker.record_delivered(A, 5)
    assert tracker.pending() == {}


def test_a_late_older_delivery_does_not_move_the_position_back():
    tracker = OffsetTracker()
    tracker.record_delivered(A, 50)
    tracker.record_delivered(A, 30)
    assert tracker.pending() == {A: 51}


def test_mark_committed_keeps_the_higher_offset():
    tracker = OffsetTracker()
    tracker.mark_committed({A: 20})
    tracker.mark_committed({A: 10})
    tracker.record_delivered(A, 14)
    assert tracker.pending() == {}


def test_forget_drops_position_and_committed_offset():
    tracker = OffsetTracker()
    tracker.set_committed({A: 10, B: 10})
    tracker.record_delivered(A, 19)
    tracker.record_delivered(B, 19)
    tracker.forget([A])
    assert tracker.pending() == {B: 20}
    # Claimed again later: the new committed offset is what counts, not the old position.
    tracker.set_committed({A: 30})
    tracker.record_delivered(A, 29)
    assert tracker.pending() == {B: 20}


def test_concurrent_deliveries_and_commits_lose_nothing():
    tracker = OffsetTracker()
    partitions = [TopicPartition("t", p) for p in range(4)]

    def deliver(tp):
        for offset in range(2000):
            tracker.record_delivered(tp, offset)

    threads = [threading.Thread(target=deliver, args=(tp,)) for tp in partitions]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        tracker.mark_committed(tracker.pending())
    for thread in threads:
        thread.join()
    tracker.mark_committed(tracker.pending())
    assert tracker.pending() == {}
    tracker.record_delivered(partitions[0], 1999)
    assert tracker.pending() == {}
    tracker.record_delivered(partitions[0], 2000)
    assert tracker.pending() == {partitions[0]: 2001}


@given(committed=st.integers(0, 1000), delivered=st.lists(st.integers(0, 2000), max_size=20))
def test_pending_is_the_highest_position_and_only_if_ahead(committed, delivered):
    tracker = OffsetTracker()
    tracker.set_committed({A: committed})
    for offset in delivered:
        tracker.record_delivered(A, offset)
    highest = max(delivered, default=-1) + 1
    assert tracker.pending() == ({A: highest} if highest > committed else {})

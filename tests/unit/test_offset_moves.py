"""The never-backwards rule for committed offsets (`zkconsumer.model`), which the dual store, the
drains, the cutover's copy and `offsets migrate`'s plan all decide by."""

from __future__ import annotations

from zkconsumer.model import (
    OffsetMove,
    TopicPartition,
    furthest,
    never_backwards,
    offset_move,
)

A, B, C = (TopicPartition("t", p) for p in range(3))

def test_offset_move_tells_forward_same_and_backward_with_nothing_committed_as_forward():
    assert offset_move(None, 0) is OffsetMove.FORWARD
    assert offset_move(4, 5) is OffsetMove.FORWARD
    assert offset_move(5, 5) is OffsetMove.SAME
    assert offset_move(5, 4) is OffsetMove.BACKWARD
    assert offset_move(0, 0) is OffsetMove.SAME

def test_never_backwards_keeps_the_committed_offset_only_when_the_proposal_is_behind_it():
    assert never_backwards(None, 3) == 3
    assert never_backwards(3, 7) == 7
    assert never_backwards(7, 7) == 7
    assert never_backwards(7, 3) == 7

def test_furthest_takes_per_partition_the_largest_of_any_store_and_everything_only_one_has():
    assert furthest({A: 10, B: 2}, {A: 4, B: 8, C: 1}) == {A: 10, B: 8, C: 1}
    assert furthest() == {}
    assert furthest({A: 0}, {A: 0}) == {A: 0}

"""The fault runner's judge of "delivered by two members at once", on made-up delivery times."""

from __future__ import annotations

from zkconsumer.testing.delivery_overlap import overlaps, stints

GAP = 0.3


def _every(partition: int, start: float, end: float, step: float = 0.05, first: int = 0):
    """A delivery every `step` seconds from `start` to `end`, of offsets from `first` on."""
    count = round((end - start) / step)
    return [(partition, first + i, start + i * step) for i in range(count + 1)]


def test_a_handover_is_not_an_overlap_however_quick():
    deliveries = {"a": _every(0, 0.0, 5.0), "b": _every(0, 5.01, 9.0)}
    assert overlaps(deliveries, GAP) == []


def test_a_handover_and_back_is_not_an_overlap():
    deliveries = {"a": _every(0, 0.0, 5.0) + _every(0, 8.0, 9.0, first=142),
                  "b": _every(0, 5.5, 7.5, first=101)}
    assert overlaps(deliveries, GAP) == []


def test_a_handover_and_back_quicker_than_the_gap_is_not_an_overlap():
    """Two rebalances in a row: the partition goes to b for one message and comes back to a,
    which resumes after it, all within `GAP`."""
    deliveries = {"a": _every(0, 0.0, 1.0) + _every(0, 1.2, 2.0, first=22),
                  "b": [(0, 21, 1.1)]}
    assert overlaps(deliveries, GAP) == []


def test_a_delivery_of_an_offset_the_holder_delivers_too_is_an_overlap_however_quick():
    """b hands out a message a delivers itself, while a goes on: both had the partition."""
    deliveries = {"a": _every(0, 0.0, 2.0), "b": [(0, 15, 1.1)]}
    (overlap,) = overlaps(deliveries, GAP)
    assert overlap.members == ("a", "b") and overlap.start == overlap.end == 1.1


def test_two_members_delivering_one_partition_at_once_overlap_for_as_long_as_they_do():
    deliveries = {"a": _every(0, 0.0, 5.0), "b": _every(0, 4.0, 9.0), "c": _every(1, 0.0, 9.0)}
    (overlap,) = overlaps(deliveries, GAP)
    assert overlap.partition == 0 and overlap.members == ("a", "b")
    assert abs(overlap.seconds - 1.0) < 1e-6


def test_a_single_late_delivery_inside_the_next_owners_stint_is_an_overlap():
    """What a member cut off and thawed would do: one message from what it held, handed out
    after another member began delivering the partition."""
    deliveries = {"a": _every(0, 0.0, 2.0) + [(0, 41, 6.0)], "b": _every(0, 5.0, 9.0)}
    (overlap,) = overlaps(deliveries, GAP)
    assert overlap.members == ("b", "a") and overlap.start == overlap.end == 6.0


def test_a_slow_message_then_nothing_more_is_not_an_overlap():
    """A handler busy with one message while the partition moves: delivered before the other
    member began, nothing after."""
    deliveries = {"a": _every(0, 0.0, 2.0), "b": _every(0, 8.0, 12.0)}
    assert overlaps(deliveries, GAP) == []


def test_stints_are_cut_by_longer_gaps_per_partition():
    found = stints({"a": [(0, 0, 0.0), (0, 1, 0.2), (0, 2, 1.0), (1, 0, 0.1)]}, GAP)
    assert sorted((s.partition, s.start, s.end, s.deliveries) for s in found) == [
        (0, 0.0, 0.2, 2), (0, 1.0, 1.0, 1), (1, 0.1, 0.1, 1)]


def test_a_handover_timed_a_few_milliseconds_late_is_within_the_tolerance():
    """The last owner's last delivery, timed by its handler a moment after it was handed
    out, lands just after the next owner's first."""
    deliveries = {"a": _every(0, 0.0, 5.0) + [(0, 101, 5.004)], "b": _every(0, 5.0, 9.0)}
    assert len(overlaps(deliveries, GAP)) == 1
    assert overlaps(deliveries, GAP, tolerance_s=0.1) == []


def test_a_late_delivery_deep_inside_anothers_stint_is_found_whatever_the_tolerance():
    deliveries = {"a": _every(0, 0.0, 2.0) + [(0, 41, 6.0)], "b": _every(0, 5.0, 9.0)}
    assert len(overlaps(deliveries, GAP, tolerance_s=0.1)) == 1

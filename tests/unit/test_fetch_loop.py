"""The fetch loop gives the fetcher the member's claims between polls, says when it has, and
tells the member where a claim without a committed offset was reset to."""

from __future__ import annotations

import threading

import pytest
from support.record_columns import fetched
from support.waiting import wait_until

from zkconsumer.kafka.errors import FetchError
from zkconsumer.member.fetch_loop import FetchLoop
from zkconsumer.member.state import Event, MemberState
from zkconsumer.member.streams import KafkaStream
from zkconsumer.model import Message, TopicPartition

TP = TopicPartition("t", 0)
SESSION = 0x77


class RecordingFetcher:
    """Stands in for a backend: records assignments; a poll lasts its whole timeout unless
    woken."""

    def __init__(self) -> None:
        self.assigned: list[tuple[dict, set]] = []
        self.positions: dict = {}
        self._woken = threading.Event()

    def wakeup(self):
        self._woken.set()

    def assign(self, positions, restart=()):
        self.assigned.append((dict(positions), set(restart)))
        self.positions = dict(positions)

    def position(self, tp):
        return self.positions.get(tp)

    def poll(self, timeout_ms):
        self._woken.wait(timeout_ms / 1000.0)
        self._woken.clear()
        return {}


def started() -> MemberState:
    member = MemberState(SESSION)
    member.handle(Event.STARTED)
    return member


def streams_of(member: MemberState):
    return lambda _tp, thread: KafkaStream(thread, 10, -1, member.claims, member.gate)


def claim(member: MemberState, tp: TopicPartition, committed: int | None):
    """A claim of `tp` made, with its stream; not routed yet."""
    session = member.begin_claims({tp: "c-0"}, streams_of(member))
    return member.claims_made(session, [tp], {} if committed is None else {tp: committed})[tp]


def reporting_loop(fetcher, member: MemberState, poll_timeout_ms: int = 20
                   ) -> tuple[FetchLoop, list]:
    """A fetch loop, and the resets it reports to the member."""
    reports: list = []
    reset_to = member.reset_to

    def report(claim, position) -> None:
        reports.append((claim, position))
        reset_to(claim, position)

    member.reset_to = report  # type: ignore[method-assign]
    return FetchLoop(fetcher, poll_timeout_ms=poll_timeout_ms, on_error=lambda exc: None,
                     member=member), reports


def test_routing_wakes_a_long_poll_and_is_caught_up_once_the_fetcher_has_it():
    fetcher = RecordingFetcher()
    member = started()
    loop, _reports = reporting_loop(fetcher, member, poll_timeout_ms=600_000)
    assert loop.caught_up()
    claim(member, TP, 42)
    assert not loop.caught_up(), "claimed, not given to the fetcher yet"
    loop.start()
    try:
        loop.routing_changed()
        wait_until(loop.caught_up, timeout=5, interval=0.005, message="routing applied")
        assert fetcher.assigned[-1] == ({TP: 42}, {TP})
        member.withdraw([TP])
        loop.routing_changed()
        wait_until(loop.caught_up, timeout=5, interval=0.005, message="unrouting applied")
        assert fetcher.assigned[-1] == ({}, set())
    finally:
        loop.stop()


def test_a_stop_wakes_a_long_poll():
    import time

    fetcher = RecordingFetcher()
    member = started()
    loop, _reports = reporting_loop(fetcher, member, poll_timeout_ms=600_000)
    claim(member, TP, 42)
    loop.routing_changed()
    loop.start()
    wait_until(loop.caught_up, timeout=5, interval=0.005, message="routing applied")
    stopping = time.monotonic()
    loop.stop()
    assert time.monotonic() - stopping < 5.0, "the stop waited for the poll's timeout"
    assert not loop._thread.is_alive()


def test_where_a_partition_without_offset_was_reset_is_reported_once_for_its_claim():
    fetcher = RecordingFetcher()
    member = started()
    loop, reports = reporting_loop(fetcher, member)
    made = claim(member, TP, None)
    loop.routing_changed()
    loop.start()
    try:
        wait_until(loop.caught_up, timeout=5, interval=0.005, message="routing applied")
        fetcher.positions[TP] = 100  # the fetcher's auto.offset.reset answered
        wait_until(lambda: reports, timeout=5, interval=0.005, message="reset reported")
        fetcher.wakeup()
        wait_until(lambda: len(fetcher.assigned) == 1 and not fetcher._woken.is_set(),
                   timeout=5, interval=0.005, message="another poll")
        assert reports == [(made, 100)]
        assert not made.reset_pending and member.committable()[TP].pending == 100
    finally:
        loop.stop()


def test_a_reset_is_not_reported_for_a_partition_routed_with_its_committed_offset():
    fetcher = RecordingFetcher()
    member = started()
    loop, reports = reporting_loop(fetcher, member)
    claim(member, TP, 42)
    loop.routing_changed()
    loop.start()
    try:
        wait_until(loop.caught_up, timeout=5, interval=0.005, message="routing applied")
        fetcher.positions[TP] = 100
        member.withdraw([TP])
        loop.routing_changed()
        wait_until(loop.caught_up, timeout=5, interval=0.005, message="unrouting applied")
        assert reports == []
    finally:
        loop.stop()


class FetchingOnce(RecordingFetcher):
    """Resets to 100 and fetches 100..109 in the same poll, as the wire fetcher does."""

    def poll(self, timeout_ms):
        if self.positions.get(TP, 0) is None:
            self.positions[TP] = 110
            return {TP: fetched([Message("t", 0, offset, None, b"", None)
                                 for offset in range(100, 110)])}
        return super().poll(timeout_ms)


class RoutedDuringThePoll(FetchingOnce):
    """Another partition is claimed while the poll that fetched the reset partition runs."""

    loop: FetchLoop
    member: MemberState

    def poll(self, timeout_ms):
        if self.positions.get(TP, 0) is None:
            claim(self.member, TopicPartition("t", 1), 0)
            self.loop.routing_changed()
        return super().poll(timeout_ms)


@pytest.mark.parametrize("fetcher_kind", [FetchingOnce, RoutedDuringThePoll],
                         ids=["reset and fetch in one poll", "routing changed during the poll"])
def test_a_reset_reports_the_first_fetched_message_not_the_next_fetch_position(fetcher_kind):
    fetcher = fetcher_kind()
    member = started()
    loop, reports = reporting_loop(fetcher, member)
    fetcher.loop, fetcher.member = loop, member
    made = claim(member, TP, None)
    loop.routing_changed()
    loop.start()
    try:
        wait_until(lambda: reports, timeout=5, interval=0.005, message="reset reported")
        assert reports == [(made, 100)], "committing 110 would skip 100..109"
        wait_until(lambda: made.stream.queued_chunks() == 1, timeout=5, interval=0.005,
                   message="the chunk queued into the claim's stream")
    finally:
        loop.stop()


class CorruptFetcher(RecordingFetcher):
    """A backend whose every poll meets a corrupt record set."""

    def __init__(self) -> None:
        super().__init__()
        self.polls = 0

    def poll(self, timeout_ms):
        self.polls += 1
        raise FetchError("cannot decode the record batch at offset 7 of t-0: a field of "
                         "17179869184 bytes, with 0 left in its record")


def test_a_corrupt_fetch_is_reported_once_and_ends_the_loop():
    """The member fails on it (see the connector): no retry of the same bytes, no loop."""
    fetcher = CorruptFetcher()
    errors: list = []
    member = started()
    claim(member, TP, 7)
    loop = FetchLoop(fetcher, poll_timeout_ms=20, on_error=errors.append, member=member)
    loop.routing_changed()
    loop.start()
    try:
        wait_until(lambda: errors, timeout=5, interval=0.005, message="the error reported")
        loop._thread.join(timeout=5)
        assert not loop._thread.is_alive()
        assert fetcher.polls == 1
        assert len(errors) == 1 and isinstance(errors[0], FetchError)
        assert "offset 7 of t-0" in str(errors[0])
    finally:
        loop.stop()

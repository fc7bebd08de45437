"""The fetch loop hands routing changes to the fetcher between polls and says when it has."""

from __future__ import annotations

import threading

import pytest
from support.record_columns import fetched
from support.waiting import wait_until

from zkconsumer.kafka.errors import FetchError
from zkconsumer.member.claims import Claim, DeliveryGate
from zkconsumer.member.fetch_loop import FetchLoop
from zkconsumer.member.streams import KafkaStream
from zkconsumer.model import Message, TopicPartition

TP = TopicPartition("t", 0)


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


def test_routing_wakes_a_long_poll_and_is_caught_up_once_the_fetcher_has_it():
    fetcher = RecordingFetcher()
    loop = FetchLoop(fetcher, poll_timeout_ms=600_000, on_error=lambda exc: None,
                     on_reset=lambda *_: None)
    assert loop.caught_up()
    loop.route({TP: (object(), Claim(TP, "c-0"), 42)})
    assert not loop.caught_up()
    loop.start()
    try:
        wait_until(loop.caught_up, timeout=5, interval=0.005, message="routing applied")
        assert fetcher.assigned[-1] == ({TP: 42}, {TP})
        loop.unroute([TP])
        wait_until(loop.caught_up, timeout=5, interval=0.005, message="unrouting applied")
        assert fetcher.assigned[-1] == ({}, set())
    finally:
        loop.stop()


def reporting_loop(fetcher) -> tuple[FetchLoop, list]:
    """A fetch loop with a short poll and the resets it reports."""
    reports: list = []
    loop = FetchLoop(fetcher, poll_timeout_ms=20, on_error=lambda exc: None,
                     on_reset=lambda *report: reports.append(report))
    return loop, reports


def test_where_a_partition_without_offset_was_reset_is_reported_once_for_its_claim():
    fetcher = RecordingFetcher()
    loop, reports = reporting_loop(fetcher)
    claim = Claim(TP, "c-0")
    loop.route({TP: (object(), claim, None)})
    loop.start()
    try:
        wait_until(loop.caught_up, timeout=5, interval=0.005, message="routing applied")
        fetcher.positions[TP] = 100  # the fetcher's auto.offset.reset answered
        wait_until(lambda: reports, timeout=5, interval=0.005, message="reset reported")
        fetcher.wakeup()
        wait_until(lambda: len(fetcher.assigned) == 1 and not fetcher._woken.is_set(),
                   timeout=5, interval=0.005, message="another poll")
        assert reports == [(TP, claim, 100)]
    finally:
        loop.stop()


def test_a_reset_is_not_reported_for_a_partition_routed_with_its_committed_offset():
    fetcher = RecordingFetcher()
    loop, reports = reporting_loop(fetcher)
    loop.route({TP: (object(), Claim(TP, "c-0"), 42)})
    loop.start()
    try:
        wait_until(loop.caught_up, timeout=5, interval=0.005, message="routing applied")
        fetcher.positions[TP] = 100
        loop.unroute([TP])
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
    """Another partition is routed while the poll that fetched the reset partition runs."""

    loop: FetchLoop

    def poll(self, timeout_ms):
        if self.positions.get(TP, 0) is None:
            other = TopicPartition("t", 1)
            self.loop.route({other: (KafkaStream("o", 10, -1, {}, DeliveryGate()),
                                     Claim(other, "c-0"), 0)})
        return super().poll(timeout_ms)


@pytest.mark.parametrize("fetcher_kind", [FetchingOnce, RoutedDuringThePoll],
                         ids=["reset and fetch in one poll", "routing changed during the poll"])
def test_a_reset_reports_the_first_fetched_message_not_the_next_fetch_position(fetcher_kind):
    fetcher = fetcher_kind()
    loop, reports = reporting_loop(fetcher)
    fetcher.loop = loop
    claim = Claim(TP, "c-0")
    loop.route({TP: (KafkaStream("s", 10, -1, {TP: claim}, DeliveryGate()), claim, None)})
    loop.start()
    try:
        wait_until(lambda: reports, timeout=5, interval=0.005, message="reset reported")
        assert reports == [(TP, claim, 100)], "committing 110 would skip 100..109"
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
    loop = FetchLoop(fetcher, poll_timeout_ms=20, on_error=errors.append,
                     on_reset=lambda *_: None)
    loop.route({TP: (object(), Claim(TP, "c-0"), 7)})
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

"""The fetch loop hands routing changes to the fetcher between polls and says when it has."""

from __future__ import annotations

import threading

from support.waiting import wait_until

from zkconsumer.member.fetch_loop import FetchLoop
from zkconsumer.member.streams import Claim
from zkconsumer.model import TopicPartition

TP = TopicPartition("t", 0)


class RecordingFetcher:
    """Stands in for a backend: records assignments; a poll lasts its whole timeout unless
    woken."""

    def __init__(self) -> None:
        self.assigned: list[tuple[dict, set]] = []
        self._woken = threading.Event()

    def wakeup(self):
        self._woken.set()

    def assign(self, positions, restart=()):
        self.assigned.append((dict(positions), set(restart)))

    def poll(self, timeout_ms):
        self._woken.wait(timeout_ms / 1000.0)
        self._woken.clear()
        return {}


def test_routing_wakes_a_long_poll_and_is_caught_up_once_the_fetcher_has_it():
    fetcher = RecordingFetcher()
    loop = FetchLoop(fetcher, poll_timeout_ms=600_000, on_error=lambda exc: None)
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

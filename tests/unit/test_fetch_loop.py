"""The fetch loop hands routing changes to the fetcher between polls and says when it has."""

from __future__ import annotations

import threading

from support.waiting import wait_until

from zkconsumer.member.fetch_loop import FetchLoop
from zkconsumer.member.streams import Claim
from zkconsumer.model import TopicPartition

TP = TopicPartition("t", 0)


class RecordingFetcher:
    """Stands in for a backend: records assignments; a poll blocks until released."""

    def __init__(self) -> None:
        self.assigned: list[tuple[dict, set]] = []
        self.poll_may_return = threading.Event()

    def assign(self, positions, restart=()):
        self.assigned.append((dict(positions), set(restart)))

    def poll(self, timeout_ms):
        self.poll_may_return.wait(timeout_ms / 1000.0)
        return {}


def test_a_route_is_caught_up_only_once_the_fetcher_was_given_it():
    fetcher = RecordingFetcher()
    loop = FetchLoop(fetcher, poll_timeout_ms=100, on_error=lambda exc: None)
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
        fetcher.poll_may_return.set()
        loop.stop()

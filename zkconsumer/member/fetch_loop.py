"""The thread that moves fetched records into the streams of the threads that own them.

kafka-python's consumer is not thread-safe, so every call on it (poll here, re-assignment from
the rebalancer) happens under one lock; poll waits at most `fetch.wait.max.ms` per round, which
bounds how long a rebalance waits for the lock.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

import structlog

from zkconsumer.member.streams import Chunk, Claim, KafkaStream
from zkconsumer.model import TopicPartition

log = structlog.get_logger(__name__)


class FetchLoop:
    def __init__(self, fetcher, poll_timeout_ms: int, on_error) -> None:
        self._fetcher = fetcher
        self._poll_timeout_ms = max(10, poll_timeout_ms)
        self._on_error = on_error
        self._lock = threading.Lock()
        self._routes: dict[TopicPartition, tuple[KafkaStream, Claim]] = {}
        self._positions: dict[TopicPartition, int | None] = {}
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="zkconsumer-fetch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=30)

    def route(self, routes: Mapping[TopicPartition, tuple[KafkaStream, Claim, int | None]]) -> None:
        """Start fetching newly claimed partitions at their committed offsets (None: reset)."""
        with self._lock:
            for tp, (stream, claim, offset) in routes.items():
                self._routes[tp] = (stream, claim)
                self._positions[tp] = offset
            self._fetcher.assign(dict(self._positions))

    def unroute(self, partitions) -> None:
        """Stop fetching released partitions; the others keep their positions and keep flowing."""
        with self._lock:
            for tp in partitions:
                self._routes.pop(tp, None)
                self._positions.pop(tp, None)
            self._fetcher.assign(dict(self._positions))

    def _run(self) -> None:
        try:
            while not self._stopped.is_set():
                with self._lock:
                    if not self._positions:
                        fetched = {}
                    else:
                        fetched = self._fetcher.poll(timeout_ms=self._poll_timeout_ms)
                        routes = dict(self._routes)
                if not fetched:
                    if not self._positions:
                        self._stopped.wait(self._poll_timeout_ms / 1000.0)
                    continue
                for tp, messages in fetched.items():
                    route = routes.get(tp)
                    if route is None:
                        continue
                    stream, claim = route
                    stream.offer(Chunk(tp, messages, claim),
                                 lambda tp=tp, claim=claim: self._still_routed(tp, claim))
        except Exception as exc:  # noqa: BLE001 - reported to the connector, which fails loudly
            log.error("fetching failed", error=str(exc))
            self._on_error(exc)

    def _still_routed(self, tp: TopicPartition, claim: Claim) -> bool:
        route = self._routes.get(tp)
        return not self._stopped.is_set() and route is not None and route[1] is claim

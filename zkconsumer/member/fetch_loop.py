"""The thread that moves fetched records into the streams of the threads that own them.

A fetcher is not thread-safe, so only this thread ever calls it. Rebalances do not wait for it:
`route` and `unroute` record the wanted assignment, wake the poll in progress and return at
once; the loop applies the assignment as soon as that poll returns. A lock held across the poll
instead would let this thread re-take it poll after poll while a rebalance waits, which made
rebalances of many members take seconds.

The bytes of each chunk queued are tallied per topic here, once per chunk, for the metrics.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping

from zkconsumer.fetch.fetcher import Fetcher
from zkconsumer.logs import get_logger
from zkconsumer.member.claims import Claim
from zkconsumer.member.streams import Chunk, KafkaStream
from zkconsumer.model import TopicPartition
from zkconsumer.records.columns import RecordColumns

log = get_logger(__name__)


class FetchLoop:
    def __init__(self, fetcher: Fetcher, poll_timeout_ms: int, on_error,
                 on_reset: Callable[[TopicPartition, Claim, int], None]) -> None:
        """`on_reset(tp, claim, offset)` tells where a partition routed with no committed offset
        was reset to, once the fetcher knows."""
        self._fetcher = fetcher
        self._poll_timeout_ms = max(10, poll_timeout_ms)
        self._on_error = on_error
        self._on_reset = on_reset
        self._lock = threading.Lock()  # guards the wanted assignment below, never a poll
        self._routes: dict[TopicPartition, tuple[KafkaStream, Claim]] = {}
        self._positions: dict[TopicPartition, int | None] = {}
        self._restart: set[TopicPartition] = set()  # routed anew: seek even if still assigned
        self._resetting: dict[TopicPartition, Claim] = {}  # routed with no committed offset
        self._changed = threading.Event()
        self._wanted_version = 0  # bumped by every route/unroute
        self._applied_version = 0  # the version the fetcher was last given
        # What the fetcher was last given, read by the fetch thread only: fetched records are
        # routed, and resets reported, by this, never by a routing the fetcher has not seen.
        self._applied_routes: dict[TopicPartition, tuple[KafkaStream, Claim]] = {}
        self._applied_resetting: dict[TopicPartition, Claim] = {}
        # Key and value bytes queued into the streams, per topic; written by the fetch thread.
        self._queued_bytes: dict[str, int] = {}
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="zkconsumer-fetch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._changed.set()
        self._fetcher.wakeup()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=30)

    def route(self, routes: Mapping[TopicPartition, tuple[KafkaStream, Claim, int | None]]) -> None:
        """Start fetching newly claimed partitions at their committed offsets (None: reset)."""
        with self._lock:
            for tp, (stream, claim, offset) in routes.items():
                self._routes[tp] = (stream, claim)
                self._positions[tp] = offset
                self._restart.add(tp)
                if offset is None:
                    self._resetting[tp] = claim
                else:
                    self._resetting.pop(tp, None)
            self._wanted_version += 1
        self._changed.set()
        self._fetcher.wakeup()

    def unroute(self, partitions) -> None:
        """Stop fetching released partitions; the others keep their positions and keep flowing.
        Anything still fetched for them is dropped: their claims are gone."""
        with self._lock:
            for tp in partitions:
                self._routes.pop(tp, None)
                self._positions.pop(tp, None)
                self._restart.discard(tp)
                self._resetting.pop(tp, None)
            self._wanted_version += 1
        self._changed.set()
        self._fetcher.wakeup()

    def unroute_all(self) -> set[TopicPartition]:
        """Stop fetching every partition (their claims went with a lost session); returns them."""
        with self._lock:
            routed = set(self._routes)
        self.unroute(routed)
        return routed

    def queued_bytes(self) -> dict[str, int]:
        """Key and value bytes queued into the streams so far, per topic; from any thread."""
        return dict(self._queued_bytes)

    def caught_up(self) -> bool:
        """True once the fetcher has been given the latest routing, i.e. fetches exactly the
        routed partitions."""
        with self._lock:
            return self._applied_version == self._wanted_version

    def _apply_changes(self) -> None:
        with self._lock:
            positions = dict(self._positions)
            restart = set(self._restart)
            routes = dict(self._routes)
            resetting = dict(self._resetting)
            version = self._wanted_version
            self._restart.clear()
            self._changed.clear()
        self._fetcher.assign(positions, restart=restart)
        self._applied_routes = routes
        self._applied_resetting = resetting
        with self._lock:
            self._applied_version = version

    def _run(self) -> None:
        try:
            while not self._stopped.is_set():
                if self._changed.is_set():
                    self._apply_changes()
                if not self._applied_routes:
                    self._changed.wait(self._poll_timeout_ms / 1000.0)
                    continue
                fetched = self._fetcher.poll(timeout_ms=self._poll_timeout_ms)
                if self._applied_resetting:
                    self._report_resets(fetched)
                for tp, messages in fetched.items():
                    route = self._applied_routes.get(tp)
                    if route is None:
                        continue
                    stream, claim = route
                    if stream.offer(Chunk(tp, messages, claim),
                                    functools.partial(self._still_routed, tp, claim)):
                        self._queued_bytes[tp.topic] = \
                            self._queued_bytes.get(tp.topic, 0) + messages.payload_bytes()
        except Exception as exc:  # noqa: BLE001 - the connector logs it once and fails loudly
            self._on_error(exc)

    def _report_resets(self, fetched: Mapping[TopicPartition, RecordColumns]) -> None:
        """Where each partition routed without an offset starts: its first message fetched in
        this poll, or while none was, the fetcher's position (which is then the reset's answer;
        once messages came it is past them, and committing it would skip them). Reported at the
        first poll that knows, so no message fetched earlier can be skipped."""
        reset = {}
        for tp, claim in list(self._applied_resetting.items()):
            messages = fetched.get(tp)
            offset = messages.offset_at(0) if messages else self._fetcher.position(tp)
            if offset is None:
                continue
            del self._applied_resetting[tp]
            with self._lock:
                if self._resetting.get(tp) is claim:
                    del self._resetting[tp]
            self._on_reset(tp, claim, offset)
            reset[str(tp)] = offset
        if reset:
            log.info("partitions without a committed offset start at their reset position",
                     count=len(reset), positions=dict(list(reset.items())[:8]))

    def _still_routed(self, tp: TopicPartition, claim: Claim) -> bool:
        with self._lock:
            route = self._routes.get(tp)
        return not self._stopped.is_set() and route is not None and route[1] is claim

"""The thread that moves fetched records into the streams of the threads that own them.

A fetcher is not thread-safe, so only this thread ever calls it. What it fetches is the member's
claims that are delivered from, each into the stream its record names: it keeps no routing of
its own. Rebalances do not wait for it: `routing_changed` wakes the poll in progress and returns
at once; the loop gives the fetcher the claims as soon as that poll returns. A lock held across
the poll instead would let this thread re-take it poll after poll while a rebalance waits, which
made rebalances of many members take seconds.

The bytes of each chunk queued are tallied per topic here, once per chunk, for the metrics.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping

from zkconsumer.fetch.fetcher import Fetcher
from zkconsumer.logs import get_logger
from zkconsumer.member.claims import Claim
from zkconsumer.member.state import MemberState
from zkconsumer.member.streams import Chunk
from zkconsumer.model import TopicPartition
from zkconsumer.records.columns import RecordColumns

log = get_logger(__name__)


class FetchLoop:
    def __init__(self, fetcher: Fetcher, poll_timeout_ms: int, on_error,
                 member: MemberState) -> None:
        """It fetches the claims `member` delivers from (`MemberState.fetching`), and tells it
        where a claim made without a committed offset was reset to, once the fetcher knows."""
        self._fetcher = fetcher
        self._poll_timeout_ms = max(10, poll_timeout_ms)
        self._on_error = on_error
        self._member = member
        self._changed = threading.Event()
        # The claims the fetcher was last given, written by the fetch thread only (a new dict
        # each time): fetched records are routed, and resets reported, by this, never by a
        # routing the fetcher has not seen.
        self._applied: dict[TopicPartition, Claim] = {}
        self._resetting: list[Claim] = []  # of those, the ones whose reset is to be reported
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

    def routing_changed(self) -> None:
        """Claims began or stopped being delivered from: the fetcher is given them between two
        polls, the others keep their positions and keep flowing. Anything still fetched for a
        claim that stopped is dropped."""
        self._changed.set()
        self._fetcher.wakeup()

    def queued_bytes(self) -> dict[str, int]:
        """Key and value bytes queued into the streams so far, per topic; from any thread."""
        return dict(self._queued_bytes)

    def caught_up(self) -> bool:
        """True once the fetcher has been given the claims delivered from now, i.e. fetches
        exactly the owned partitions."""
        applied = self._applied
        wanted = self._member.fetching()
        return applied.keys() == wanted.keys() \
            and all(applied[tp] is claim for tp, claim in wanted.items())

    def _apply_changes(self) -> None:
        self._changed.clear()
        wanted = self._member.fetching()
        restart = {tp for tp, claim in wanted.items() if self._applied.get(tp) is not claim}
        self._fetcher.assign({tp: claim.committed for tp, claim in wanted.items()},
                             restart=restart)
        self._applied = wanted
        self._resetting = [claim for claim in wanted.values() if claim.reset_pending]

    def _run(self) -> None:
        try:
            while not self._stopped.is_set():
                if self._changed.is_set():
                    self._apply_changes()
                if not self._applied:
                    self._changed.wait(self._poll_timeout_ms / 1000.0)
                    continue
                fetched = self._fetcher.poll(timeout_ms=self._poll_timeout_ms)
                if self._resetting:
                    self._report_resets(fetched)
                for tp, messages in fetched.items():
                    claim = self._applied.get(tp)
                    if claim is None or claim.stream is None:
                        continue
                    if claim.stream.offer(Chunk(tp, messages, claim),
                                          functools.partial(self._still_fetching, claim)):
                        self._queued_bytes[tp.topic] = \
                            self._queued_bytes.get(tp.topic, 0) + messages.payload_bytes()
        except Exception as exc:  # noqa: BLE001 - the connector logs it once and fails loudly
            self._on_error(exc)

    def _report_resets(self, fetched: Mapping[TopicPartition, RecordColumns]) -> None:
        """Where each claim made without an offset starts: its first message fetched in this
        poll, or while none was, the fetcher's position (which is then the reset's answer; once
        messages came it is past them, and committing it would skip them). Reported at the
        first poll that knows, so no message fetched earlier can be skipped."""
        reset = {}
        waiting = []
        for claim in self._resetting:
            tp = claim.partition
            messages = fetched.get(tp)
            offset = messages.offset_at(0) if messages else self._fetcher.position(tp)
            if offset is None:
                waiting.append(claim)
                continue
            self._member.reset_to(claim, offset)
            reset[str(tp)] = offset
        self._resetting = waiting
        if reset:
            log.info("partitions without a committed offset start at their reset position",
                     count=len(reset), positions=dict(list(reset.items())[:8]))

    def _still_fetching(self, claim: Claim) -> bool:
        return not self._stopped.is_set() and self._member.claims.get(claim.partition) is claim

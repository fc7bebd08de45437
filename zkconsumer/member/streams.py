"""The streams a connector hands out: iterables of messages fed by the fetch loop.

Each stream has a bounded queue of chunks (`queued.max.message.chunks`), so a slow consumer
holds back fetching instead of filling memory. Chunks carry the claim they were fetched under;
once a partition is released its queued and in-flight messages are dropped instead of delivered,
so a partition that moved is never consumed by two members from the same fetch.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from typing import NamedTuple

from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import Message, TopicPartition

_POLL_S = 0.2


class ConsumerTimeout(Exception):
    """No message arrived within `consumer.timeout.ms`."""


class Claim:
    """A token for one period of ownership of a partition; a new claim is a new object."""

    __slots__ = ("partition", "thread_id")

    def __init__(self, partition: TopicPartition, thread_id: str) -> None:
        self.partition = partition
        self.thread_id = thread_id


class Chunk(NamedTuple):
    partition: TopicPartition
    messages: list[Message]
    claim: Claim


class StreamsClosed(Exception):
    """Raised inside iteration when the connector shut down."""


class KafkaStream:
    """Messages of the partitions routed to one consumer thread id.

    Iterate it for one message at a time, or use `batches()` for whole fetched chunks (much
    cheaper per message). Iteration ends when the connector shuts down; it raises
    `ConsumerTimeout` after `consumer.timeout.ms` without a message (if set), and re-raises the
    connector's failure (e.g. rebalance attempts exhausted) if it failed.
    """

    def __init__(self, name: str, max_chunks: int, timeout_ms: int, claims: dict,
                 failure: threading.Event, failure_reason: list) -> None:
        self.name = name
        self.positions: dict[TopicPartition, int] = {}
        self._queue: queue.Queue[Chunk] = queue.Queue(maxsize=max_chunks)
        self._timeout_s = None if timeout_ms < 0 else timeout_ms / 1000.0
        self._claims = claims
        self._closed = threading.Event()
        self._failure = failure
        self._failure_reason = failure_reason

    def __repr__(self) -> str:
        return f"KafkaStream({self.name})"

    # -- consuming side ---------------------------------------------------------------------

    def __iter__(self) -> Iterator[Message]:
        claims = self._claims
        positions = self.positions
        closed = self._closed
        try:
            while True:
                chunk = self._next_chunk()
                partition, claim = chunk.partition, chunk.claim
                for message in chunk.messages:
                    if claims.get(partition) is not claim or closed.is_set():
                        break
                    positions[partition] = message.offset + 1
                    yield message
        except StreamsClosed:
            return

    def batches(self) -> Iterator[list[Message]]:
        """Whole chunks as fetched: one list per partition per fetch."""
        try:
            while True:
                chunk = self._next_chunk()
                if self._claims.get(chunk.partition) is not chunk.claim or not chunk.messages:
                    continue
                self.positions[chunk.partition] = chunk.messages[-1].offset + 1
                yield chunk.messages
        except StreamsClosed:
            return

    def _next_chunk(self) -> Chunk:
        deadline = None if self._timeout_s is None else time.monotonic() + self._timeout_s
        while True:
            self._raise_if_stopped()
            wait = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
            if wait <= 0:
                raise ConsumerTimeout(f"no message within {self._timeout_s * 1000:.0f} ms")
            try:
                return self._queue.get(timeout=wait)
            except queue.Empty:
                continue

    def _raise_if_stopped(self) -> None:
        if self._failure.is_set():
            reason = self._failure_reason[0] if self._failure_reason else None
            raise reason if isinstance(reason, ZkConsumerError) else ZkConsumerError(str(reason))
        if self._closed.is_set():
            raise StreamsClosed

    # -- feeding side -----------------------------------------------------------------------

    def offer(self, chunk: Chunk, keep_trying) -> bool:
        """Queue a chunk, waiting while the queue is full and `keep_trying()` stays true."""
        while keep_trying():
            try:
                self._queue.put(chunk, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def close(self) -> None:
        """End iteration at once; queued messages were never delivered, so nothing is lost."""
        self._closed.set()
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return

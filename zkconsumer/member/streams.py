"""The streams a connector hands out: iterators of messages fed by the fetch loop.

Each stream has a bounded queue of chunks (`queued.max.message.chunks`), so a slow consumer
holds back fetching instead of filling memory. Chunks carry the claim they were fetched under;
once a partition is released its queued and in-flight messages are dropped instead of delivered,
so a partition that moved is never consumed by two members from the same fetch.

A stream is its own single iterator, as the reference's is: the chunk being read lives in the
stream, not in a generator, so `next(iter(stream))`, a `break`, `islice` or a `ConsumerTimeout`
never abandons the rest of a chunk, and iteration simply goes on where it stopped.

A message counts as consumed (its offset + 1 becomes committable) when the consumer comes back
for the next one, not when it is handed out: an auto-commit that runs while the consumer is
still handling a message must not commit it, or a handler that then fails would lose it.
`commit_offsets()` and `mark_consumed()` count the message in hand too.
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
    """No message arrived within `consumer.timeout.ms`; iterating again resumes the stream."""


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


class DeliveryGate:
    """What every stream of one member checks before handing out a message.

    It is closed while the member's ZooKeeper session cannot be trusted (connection suspended:
    the session may be expiring on the server, and with it our owner znodes), so nothing is
    handed out that another member may already own; and it carries the member's failure, which
    every stream then raises.
    """

    def __init__(self) -> None:
        self.open = threading.Event()
        self.open.set()
        self.failed = threading.Event()
        self._failure: BaseException | None = None

    def fail(self, exc: BaseException) -> bool:
        """Record the member's failure; False if it had already failed."""
        if self.failed.is_set():
            return False
        self._failure = exc
        self.failed.set()
        return True

    @property
    def failure(self) -> BaseException | None:
        return self._failure

    def raise_failure(self) -> None:
        reason = self._failure
        if isinstance(reason, ZkConsumerError):
            raise reason
        raise ZkConsumerError(f"{type(reason).__name__}: {reason}") from reason


class KafkaStream:
    """Messages of the partitions routed to one consumer thread id.

    Iterate it for one message at a time, or use `batches()` for whole fetched chunks (much
    cheaper per message). Iteration ends when the connector shuts down; it raises
    `ConsumerTimeout` after `consumer.timeout.ms` without a message (if set), and re-raises the
    connector's failure (e.g. rebalance attempts exhausted) if it failed.
    """

    def __init__(self, name: str, max_chunks: int, timeout_ms: int, claims: dict,
                 gate: DeliveryGate) -> None:
        self.name = name
        # Consumed positions (offset + 1) per partition, read by the committer.
        self.positions: dict[TopicPartition, int] = {}
        self._queue: queue.Queue[Chunk] = queue.Queue(maxsize=max_chunks)
        self._timeout_s = None if timeout_ms < 0 else timeout_ms / 1000.0
        self._claims = claims
        self._gate = gate
        self._closed = threading.Event()
        # The chunk being read and how far; touched only by the consuming thread.
        self._messages: list[Message] = []
        self._index = 0
        self._partition: TopicPartition | None = None
        self._claim: Claim | None = None
        # The last message (or batch) handed out, as (partition, position, claim): replaced
        # in one assignment so a committing thread always reads a consistent triple.
        self._in_hand: tuple[TopicPartition, int, Claim] | None = None

    def __repr__(self) -> str:
        return f"KafkaStream({self.name})"

    # -- consuming side ---------------------------------------------------------------------

    def __iter__(self) -> KafkaStream:
        return self

    def __next__(self) -> Message:
        self.mark_consumed()
        claims = self._claims
        gate_open = self._gate.open
        closed = self._closed
        deadline = self._deadline()
        try:
            while True:
                index = self._index
                messages = self._messages
                if index < len(messages):
                    claim = self._claim
                    if claims.get(self._partition) is claim and gate_open.is_set() \
                            and not closed.is_set():
                        message = messages[index]
                        self._index = index + 1
                        self._in_hand = (self._partition, message.offset + 1, claim)
                        return message
                    if not self._wait_for_delivery(deadline):
                        self._drop_chunk()
                    continue
                self._load(self._next_chunk(deadline))
        except StreamsClosed:
            raise StopIteration from None

    def batches(self) -> Iterator[list[Message]]:
        """Whole chunks as fetched: one list per partition per fetch (after a partly read chunk,
        its rest). A batch counts as consumed when the next one is asked for."""
        while True:
            self.mark_consumed()
            try:
                batch = self._next_batch()
            except StreamsClosed:
                return
            yield batch

    def mark_consumed(self) -> None:
        """Count the message (or batch) handed out last as consumed, so the next commit covers
        it; asking for the next message does this too. Nothing is counted for a partition
        released since: its new owner's offset must win."""
        in_hand = self._in_hand
        if in_hand is None:
            return
        self._in_hand = None
        partition, position, claim = in_hand
        if self._claims.get(partition) is claim and position > self.positions.get(partition, -1):
            self.positions[partition] = position

    def _next_batch(self) -> list[Message]:
        deadline = self._deadline()
        while True:
            if self._index < len(self._messages):
                if self._claims.get(self._partition) is self._claim and \
                        self._gate.open.is_set() and not self._closed.is_set():
                    batch = self._messages if self._index == 0 else self._messages[self._index:]
                    self._drop_chunk()
                    self._in_hand = (self._partition, batch[-1].offset + 1, self._claim)
                    return batch
                if not self._wait_for_delivery(deadline):
                    self._drop_chunk()
                continue
            self._load(self._next_chunk(deadline))

    def _load(self, chunk: Chunk) -> None:
        if self._claims.get(chunk.partition) is not chunk.claim:
            return
        self._messages, self._index = chunk.messages, 0
        self._partition, self._claim = chunk.partition, chunk.claim

    def _drop_chunk(self) -> None:
        self._messages, self._index = [], 0

    def _wait_for_delivery(self, deadline: float | None) -> bool:
        """The current chunk cannot be handed out now. True when it may be later (the gate is
        closed while ZooKeeper reconnects): wait for that, up to the consumer timeout. False
        when it never may (its claim is gone), so it must be dropped."""
        if self._closed.is_set():
            raise StreamsClosed
        if self._claims.get(self._partition) is not self._claim:
            return False
        self._raise_if_failed()
        wait = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
        if wait <= 0:
            raise ConsumerTimeout(f"no message within {self._timeout_s * 1000:.0f} ms")
        self._gate.open.wait(wait)
        return True

    def _deadline(self) -> float | None:
        return None if self._timeout_s is None else time.monotonic() + self._timeout_s

    def _next_chunk(self, deadline: float | None) -> Chunk:
        while True:
            self._raise_if_stopped()
            try:
                # A queued chunk is handed out even with consumer.timeout.ms=0.
                return self._queue.get_nowait()
            except queue.Empty:
                pass
            wait = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
            if wait <= 0:
                raise ConsumerTimeout(f"no message within {self._timeout_s * 1000:.0f} ms")
            try:
                return self._queue.get(timeout=wait)
            except queue.Empty:
                continue

    def _raise_if_failed(self) -> None:
        if self._gate.failed.is_set():
            self._gate.raise_failure()

    def _raise_if_stopped(self) -> None:
        self._raise_if_failed()
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

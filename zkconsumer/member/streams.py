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

Messages handed out are tallied per topic for the metrics without any work per message: a
chunk's count is added once, when the stream leaves it, and a reader on another thread adds the
current chunk's index itself (`handed_out`).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from zkconsumer.member.async_streams import AsyncBatches, AsyncMessages, BlockingCalls
from zkconsumer.member.claims import Claim, Consumed, Deadline, DeliveryGate, compiled
from zkconsumer.model import Message, TopicPartition
from zkconsumer.records.columns import RecordColumns, records_of

if TYPE_CHECKING:  # pyarrow is optional: only arrow_batches() needs it
    import pyarrow as pa

_POLL_S = 0.2
# How often a stream whose lease lapsed (the coordination has not said so yet) looks again.
_LEASE_POLL_S = 0.02
_monotonic = time.monotonic


class ConsumerTimeout(Exception):
    """No message arrived within `consumer.timeout.ms`; iterating again resumes the stream."""


class Chunk(NamedTuple):
    partition: TopicPartition
    messages: RecordColumns
    claim: Claim


_NO_CHUNK: tuple[None, None, Sequence[Message], None] = (None, None, [], None)
_NO_RECORDS = records_of([], "", -1)


class StreamsClosed(Exception):
    """Raised inside iteration when the connector shut down."""


def _take_in_hand(stream: _PythonCursor) -> Message | None:
    """The next message of the chunk in hand if it may be delivered now, else None; asking
    for it says the one before is done, so the stream resumes at it."""
    partition, claim, messages, consumed = stream._chunk
    index = stream._index
    if index < len(messages) and stream._claims.get(partition) is claim \
            and _monotonic() < stream._until.value and not stream._stopping:
        message = messages[index]
        stream._index = index + 1
        consumed.value = message.offset
        return message
    return None


class _PythonCursor:
    """A stream's per-message fast path; `_cursor.Cursor` does the same in C where the
    extension was built (the per-call cost of this method was a third of consuming a
    message), and the tests hold both to the same behaviour."""

    if TYPE_CHECKING:  # what it reads of `KafkaStream`, which sets them
        _chunk: tuple[Any, Any, Sequence[Message], Any]
        _index: int
        _claims: Mapping[TopicPartition, Claim]
        _gate: DeliveryGate
        _until: Deadline
        _stopping: bool

        def _next_slowly(self) -> Message: ...

    def __next__(self) -> Message:
        message = _take_in_hand(self)
        return message if message is not None else self._next_slowly()


if TYPE_CHECKING:  # the compiled cursor has no stubs: typed as the one it stands for
    _Cursor = _PythonCursor
else:
    _Cursor = compiled("Cursor", _PythonCursor)


class KafkaStream(_Cursor):
    """Messages of the partitions routed to one consumer thread id.

    Iterate it for one message at a time, or use `batches()` for whole fetched chunks (much
    cheaper per message). Iteration ends when the connector shuts down; it raises
    `ConsumerTimeout` after `consumer.timeout.ms` without a message (if set), and re-raises the
    connector's failure (e.g. rebalance attempts exhausted) if it failed.
    """

    def __init__(self, name: str, max_chunks: int, timeout_ms: int,
                 claims: Mapping[TopicPartition, Claim], gate: DeliveryGate) -> None:
        self.name = name
        self._queue: queue.Queue[Chunk] = queue.Queue(maxsize=max_chunks)
        self._timeout_ms = timeout_ms
        self._timeout_s = None if timeout_ms < 0 else timeout_ms / 1000.0
        self._claims = claims
        self._gate = gate
        self._until = gate.until  # the lease's deadline while open: read per message
        self._closed = threading.Event()
        self._stopping = False  # `_closed`, as a plain attribute for the per-message check
        # The chunk being read, as (partition, claim, messages), and how far it was handed
        # out. Written by the consuming thread only, a new chunk before its index moves (and
        # the index back to 0 before a chunk is left), so another thread that reads the chunk,
        # the index and the chunk again sees a consistent pair.
        # (partition, claim, messages, the claim's `consumed` cell, which hand-outs write), or
        # (None, None, [], None) between chunks
        self._chunk: tuple[Any, Any, Sequence[Message], Any] = _NO_CHUNK
        self._index = 0
        # The chunk's records, whether its messages are them or their tuples (which the
        # per-message path wants as a list). Set before the chunk and reset after it, so a
        # thread that sees the same chunk before and after reading this reads its records.
        self._records = _NO_RECORDS
        # Messages handed out of the chunks left behind, per topic (see `handed_out`).
        self._handed_out: dict[str, int] = {}
        self._async_calls = BlockingCalls(name)  # where `async for` waits

    def __repr__(self) -> str:
        return f"KafkaStream({self.name})"

    # -- consuming side ---------------------------------------------------------------------

    def __iter__(self) -> KafkaStream:
        return self

    def _next_slowly(self) -> Message:
        """`__next__` once the current chunk cannot simply go on."""
        try:
            consumed, messages, index = self._deliverable_chunk()
        except StreamsClosed:
            raise StopIteration from None
        message = messages[index]
        self._index = index + 1
        consumed.value = message.offset
        return message

    def __aiter__(self) -> AsyncMessages:
        """`async for message in stream`: the same messages, with the same at-least-once rule,
        without blocking the event loop (see `async_streams`)."""
        return AsyncMessages(self, self._async_calls)

    def next_if_in_hand(self) -> Message | None:
        """The next message if handing it out cannot wait (it is in the chunk in hand and may
        be delivered), counting the one before as consumed as `next()` does; else None. Never
        waits, whatever a rebalance or the gate does meanwhile: it is called on an event loop."""
        return _take_in_hand(self)

    def mark_consumed_unless_waiting(self) -> None:
        """`mark_consumed()`, unless an `async for` wait is pending: the message it may have
        taken has reached no coroutine yet, so it is not done with."""
        if not self._async_calls.waiting:
            self.mark_consumed()

    def batches(self) -> Batches[list[Message]]:
        """Whole chunks as fetched: one list per partition per fetch (after a partly read chunk,
        its rest). A batch counts as consumed when the next one is asked for. After a
        `ConsumerTimeout`, call `batches()` again to go on. Iterate it with `for` or, in an
        asyncio application, `async for`."""
        return Batches(self, columnar=False, kind="batch", convert=RecordColumns.messages)

    def arrow_batches(self) -> Batches[pa.RecordBatch]:
        """`batches()` as Arrow record batches (columns key, value, topic, partition, offset,
        timestamp, headers; see `zkconsumer.arrow_records`), counted as consumed exactly as
        batches are. Records the compiled decoder read become Arrow columns without a Python
        object each. Needs pyarrow (the `arrow` extra)."""
        import zkconsumer.arrow_records  # noqa: F401 - without pyarrow, fail here, not at a batch

        return Batches(self, columnar=True, kind="Arrow batch",
                       convert=RecordColumns.record_batch)

    def mark_consumed(self) -> None:
        """Count the message (or batch) handed out last as consumed, so the next commit covers
        it; asking for the next message does this too. Nothing is counted for a partition
        released since: its new owner's offset must win."""
        chunk = self._chunk
        index = self._index
        records = self._records
        if index and chunk is not _NO_CHUNK and chunk is self._chunk:
            partition, claim, _messages, consumed = chunk
            if self._claims.get(partition) is claim:
                consumed.value = records.offset_at(index - 1) + 1

    @property
    def positions(self) -> dict[TopicPartition, int]:
        """Where consumption of each partition delivered to this stream stands (offset + 1 of
        the last message done with), as its records hold it; a partition released takes its
        position with its record."""
        return {tp: claim.consumed.value for tp, claim in list(self._claims.items())
                if claim.stream is self and claim.consumed.value is not None}

    def _next_batch(self, columnar: bool) -> RecordColumns:
        consumed, messages, index = self._deliverable_chunk(columnar)
        records = self._records
        batch = records if index == 0 else records[index:]
        self._index = len(messages)
        consumed.value = batch.offset_at(0)
        return batch

    def _deliverable_chunk(self, columnar: bool = False
                           ) -> tuple[Consumed, Sequence[Message], int]:
        """What was handed out so far is consumed (the consumer asked for more); then the
        chunk to hand out from, and where: the current one if it may go on, after waiting
        while the gate is closed; else the next one, dropping a chunk whose claim is gone.
        A new chunk is loaded as columns if `columnar`, else as a list of tuples."""
        self.mark_consumed()
        deadline = self._deadline()
        while True:
            partition, claim, messages, consumed = self._chunk
            if self._index < len(messages):
                if self._deliverable(partition, claim):
                    return consumed, messages, self._index
                self._wait_for_delivery(deadline)
                continue
            self._leave_chunk()
            self._load(self._next_chunk(deadline), columnar)

    def _deliverable(self, partition: TopicPartition, claim: Claim) -> bool:
        return self._claims.get(partition) is claim \
            and _monotonic() < self._until.value and not self._stopping

    def _leave_chunk(self) -> None:
        """Drop the current chunk and tally what was handed out of it, in that order: a reader
        that sees the tally grown can no longer see the chunk, so never counts it twice."""
        partition, _claim, _messages, _consumed = self._chunk
        handed = self._index
        self._index = 0
        self._chunk = _NO_CHUNK
        self._records = _NO_RECORDS
        if handed:
            self._handed_out[partition.topic] = self._handed_out.get(partition.topic, 0) + handed

    def _load(self, chunk: Chunk, columnar: bool) -> None:
        """Take `chunk` in hand before anything can fail: one dropped here would be skipped by
        the commits of the chunks after it. Columns become tuples all at once, in C (per-record
        speed); if that fails (out of memory), the columns themselves are read on, a tuple at a
        time."""
        if self._claims.get(chunk.partition) is chunk.claim:
            self._records = chunk.messages
            self._chunk = (chunk.partition, chunk.claim, chunk.messages, chunk.claim.consumed)
            self._index = 0
            if not columnar:
                self._chunk = (chunk.partition, chunk.claim, chunk.messages.messages(),
                               chunk.claim.consumed)

    def _wait_for_delivery(self, deadline: float | None) -> None:
        """The current chunk cannot be handed out now. While only the gate is closed (ZooKeeper
        reconnecting, or the lease lapsed and not yet renewed), wait for it, up to the consumer
        timeout; once its claim is gone it never may be, so it is dropped (nothing of it counts
        as consumed any more)."""
        if self._stopping:
            raise StreamsClosed
        partition, claim, _messages, _consumed = self._chunk
        if self._claims.get(partition) is not claim:
            self._leave_chunk()
            return
        self._raise_if_failed()
        wait = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
        if wait <= 0:
            raise self._timed_out()
        if self._gate.open.is_set():
            # Open by the coordination's word, but the lease lapsed: renewed, or the gate
            # closed, once the coordination hears (or fails to hear) from its server.
            self._closed.wait(min(wait, _LEASE_POLL_S))
        else:
            self._gate.open.wait(wait)

    def _timed_out(self) -> ConsumerTimeout:
        return ConsumerTimeout(f"no message within {self._timeout_ms} ms")

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
                raise self._timed_out()
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

    # -- read from any thread (metrics) ------------------------------------------------------

    def handed_out(self) -> dict[str, int]:
        """Messages handed out so far, per topic. The tally is read before the current chunk,
        and the chunk, its index and the chunk again as a consistent pair (see `_chunk`), so a
        race with the consuming thread can miss a chunk's messages but never count them twice:
        a figure may lag behind for a moment, never run ahead (callers keep the highest seen)."""
        counts = dict(self._handed_out)
        chunk = self._chunk
        index = self._index
        if index and chunk is not _NO_CHUNK and chunk is self._chunk:
            topic = chunk[0].topic
            counts[topic] = counts.get(topic, 0) + index
        return counts

    def queued_chunks(self) -> int:
        return self._queue.qsize()

    # -- feeding side -----------------------------------------------------------------------

    def offer(self, chunk: Chunk, keep_trying: Callable[[], bool]) -> bool:
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
        self._stopping = True
        self._closed.set()
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return


BatchT = TypeVar("BatchT")


class Batches(Generic[BatchT]):
    """A stream's chunks, for `for` and `async for` alike; each batch is made by `convert`."""

    def __init__(self, stream: KafkaStream, columnar: bool, kind: str,
                 convert: Callable[[RecordColumns], BatchT]) -> None:
        self._stream = stream
        self._columnar = columnar
        self._kind = kind
        self._convert = convert

    def __iter__(self) -> Batches[BatchT]:
        return self

    def __next__(self) -> BatchT:
        try:
            batch = self._stream._next_batch(self._columnar)
        except StreamsClosed:
            raise StopIteration from None
        return self._convert(batch)

    def __aiter__(self) -> AsyncBatches:
        return AsyncBatches(self.__next__, self._stream._async_calls, self._kind)

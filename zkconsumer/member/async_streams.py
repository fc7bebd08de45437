"""A stream's iteration for asyncio applications: `async for` that never blocks the event loop.

A message already in hand (the rest of a fetched chunk) is handed out on the loop's own thread,
as fast as the synchronous iterator does; only a call that may wait (for the next chunk, for the
delivery gate, until `consumer.timeout.ms`) runs in a thread. A stream is one iterator, so its
waits never overlap; each runs in a daemon thread of its own rather than the loop's default
executor, which streams waiting without a timeout would otherwise hold for ever (and which the
interpreter joins at exit).

Cancellation keeps at-least-once. A cancelled wait goes on in its thread, and what it brings (a
message already counted as handed out) is kept for the next `__anext__` on the stream instead of
being dropped: the next ask would otherwise count it as consumed, and commit past it, without
anyone having seen it. For the same reason nothing else touches the stream while such a wait is
pending: not the loop thread's fast path, not a commit counting the message in hand.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where a stream is iterated with `async for`: a worker never is
    import asyncio

# Messages handed out from a chunk in hand between two yields to the event loop: a chunk of a
# full fetch can hold tens of thousands, which the loop must not wait for.
_YIELD_EVERY = 256


class _End(Exception):
    """The stream ended (the connector shut down): StopIteration cannot cross a Future."""


class BlockingCalls:
    """Where a stream's waits run, and the one wait that may still be pending."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._pending: tuple[str, asyncio.Future] | None = None

    @property
    def waiting(self) -> bool:
        """A wait is pending: a message it takes is not the loop's yet."""
        return self._pending is not None

    async def call(self, kind: str, function: Callable[[], Any]) -> Any:
        """`function()` in a thread; a call of the same kind left by a cancelled caller is
        awaited (and its outcome taken) instead of making a new one."""
        if self._pending is None:
            self._pending = (kind, self._start(function))
        pending_kind, future = self._pending
        if pending_kind != kind:
            raise RuntimeError(f"a cancelled wait for a {pending_kind} is pending on this "
                               f"stream: ask for a {pending_kind} first")
        import asyncio

        try:
            return await asyncio.shield(future)  # a cancelled caller leaves it pending
        finally:
            if future.done():  # its outcome, a result or an error, is taken now
                self._pending = None

    def _start(self, function: Callable[[], Any]) -> asyncio.Future:
        import asyncio

        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def settle(outcome: Callable[[Any], None], value: Any) -> None:
            if not future.done():
                outcome(value)

        def run() -> None:
            try:
                result = function()
            except BaseException as exc:  # handed to the awaiting coroutine
                loop.call_soon_threadsafe(settle, future.set_exception, exc)
            else:
                loop.call_soon_threadsafe(settle, future.set_result, result)

        threading.Thread(target=run, name=f"zkconsumer-{self._name}-wait", daemon=True).start()
        return future


async def _yield_to_the_loop() -> None:
    import asyncio

    await asyncio.sleep(0)


def _until_end(function: Callable[[], Any]) -> Callable[[], Any]:
    def call() -> Any:
        try:
            return function()
        except StopIteration:
            raise _End from None
    return call


class AsyncMessages:
    """`async for message in stream`."""

    def __init__(self, stream: Any, calls: BlockingCalls) -> None:
        self._stream = stream
        self._calls = calls
        self._next = _until_end(stream.__next__)
        self._since_yield = 0

    def __aiter__(self) -> AsyncMessages:
        return self

    async def __anext__(self) -> Any:
        if not self._calls.waiting:
            if self._since_yield >= _YIELD_EVERY:
                # Before a message is taken: a cancellation here leaves nothing taken.
                self._since_yield = 0
                await _yield_to_the_loop()
            if not self._calls.waiting:
                message = self._stream.next_if_in_hand()
                if message is not None:
                    self._since_yield += 1
                    return message
        self._since_yield = 0
        try:
            return await self._calls.call("message", self._next)
        except _End:
            raise StopAsyncIteration from None


class AsyncBatches:
    """`async for batch in stream.batches()` (or `arrow_batches()`): one thread hop per batch."""

    def __init__(self, next_batch: Callable[[], Any], calls: BlockingCalls, kind: str) -> None:
        self._next = _until_end(next_batch)
        self._calls = calls
        self._kind = kind

    def __aiter__(self) -> AsyncBatches:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._calls.call(self._kind, self._next)
        except _End:
            raise StopAsyncIteration from None

"""A bound on the ZooKeeper requests one session has in flight at once: the window.

Reads of a level of znodes are pipelined (all sent before any answer is awaited), which is what
makes a rebalance of thousands of partitions fast. Unbounded, a member that releases or claims
thousands of partitions puts thousands of requests in the server's queue at once, and the
ensemble then answers everyone else (the brokers' controller, other groups' sessions) late.
Sent through `answered`, no more than the session's window wait for an answer at a time: one
round trip per window instead of one per level, with the server's queue kept short.

The window follows the server (`Window`, pure): it grows by one request per window of answers
that came back about as fast as the fastest seen, up to `zookeeper.max.in.flight.requests`, and
halves (once per round trip, down to one) when an answer took `SLOW_S` longer than that, which is
time spent in a queue: the server's, or a starved machine's. A fleet of hundreds of members
then keeps about `SLOW_S` of work queued at the server between them, however many they are,
instead of each its own full window (200 members x 64 requests: a server that answers a few
thousand requests a second took seconds to answer anyone, its sessions' pings included).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar
from weakref import WeakKeyDictionary

from kazoo.exceptions import ConnectionLoss, SessionExpiredError
from kazoo.interfaces import IAsyncResult

from zkconsumer.config.zookeeper import MAX_IN_FLIGHT_REQUESTS

if TYPE_CHECKING:
    from kazoo.client import KazooClient

# What a session gets unless its settings say otherwise (a command's, the exporter's).
DEFAULT_WINDOW = MAX_IN_FLIGHT_REQUESTS

# An answer this much slower than the fastest seen was queued: the window halves.
SLOW_S = 0.025
# A session's first window, before any answer was timed (at most the ceiling).
START = 8
# The fastest answer is the fastest of the last two spans of this long, so that a session that
# moved to a farther server learns its new round trip within a minute; a busy server's queue,
# which empties within that time, does not pass for the round trip.
FASTEST_SPAN_S = 30.0

_K = TypeVar("_K")
# Failures the client reports without a round trip (a connection or session gone): not timed.
_NOT_ANSWERED = (ConnectionLoss, SessionExpiredError)


@dataclass
class Window:
    """How many pipelined requests a session keeps unanswered, from how fast they come back.
    Pure: the caller numbers each request (`sent`) and times its answer. Shared by a member's
    threads without a lock: a lost update of the size is harmless."""

    ceiling: int
    size: float = 0.0
    _fastest_s: float = math.inf  # of this span of answers
    _fastest_before_s: float = math.inf  # of the span before
    _span_ends: float | None = None
    _sent: int = 0
    _halved_at: int = 0  # requests sent before the last halving do not halve it again

    def __post_init__(self) -> None:
        if self.ceiling < 1:
            raise ValueError(f"a request window must be positive, got {self.ceiling}")
        if not self.size:
            self.size = float(min(self.ceiling, START))

    @property
    def limit(self) -> int:
        return max(1, int(self.size))

    def sent(self) -> int:
        """A request is sent: its number, for `answered`."""
        self._sent += 1
        return self._sent

    def answered(self, number: int, round_trip_s: float, now: float) -> None:
        """Request `number` was answered `round_trip_s` after it was sent, at `now`."""
        if self._span_ends is None or now >= self._span_ends:
            self._fastest_before_s = self._fastest_s if self._span_ends is not None else math.inf
            self._fastest_s, self._span_ends = math.inf, now + FASTEST_SPAN_S
        self._fastest_s = min(self._fastest_s, round_trip_s)
        if round_trip_s - min(self._fastest_s, self._fastest_before_s) > SLOW_S:
            if number > self._halved_at:  # sent after the last halving: once per round trip
                self.size = max(1.0, self.size / 2)
                self._halved_at = self._sent
        else:
            self.size = min(float(self.ceiling), self.size + 1.0 / self.size)


_windows: WeakKeyDictionary[KazooClient, Window] = WeakKeyDictionary()


def set_window(zk: KazooClient, ceiling: int) -> None:
    _windows[zk] = Window(ceiling)


def window_of(zk: KazooClient) -> Window:
    window = _windows.get(zk)
    if window is None:
        window = _windows[zk] = Window(DEFAULT_WINDOW)
    return window


def answered(zk: KazooClient, keys: Iterable[_K], send: Callable[[_K], IAsyncResult],
             clock: Callable[[], float] = time.monotonic) -> Iterator[tuple[_K, IAsyncResult]]:
    """`send(key)` for every key, with at most the session's window of them unanswered at a
    time; yields each key with its request, answered, in the order of `keys` (`.get()` gives
    its value or raises its error). Each answer is timed for the window."""
    window = window_of(zk)
    pending: deque[tuple[_K, IAsyncResult, int, float]] = deque()
    for key in keys:
        while len(pending) >= window.limit:
            yield _waited(window, clock, *pending.popleft())
        pending.append((key, send(key), window.sent(), clock()))
    while pending:
        yield _waited(window, clock, *pending.popleft())


def _waited(window: Window, clock: Callable[[], float], key: _K, request: IAsyncResult,
            number: int, sent: float) -> tuple[_K, IAsyncResult]:
    request.wait()
    if not isinstance(request.exception, _NOT_ANSWERED):
        now = clock()
        window.answered(number, now - sent, now)
    return key, request

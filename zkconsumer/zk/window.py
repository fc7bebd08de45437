"""A bound on the ZooKeeper requests one caller has in flight at once: the window.

Reads of a level of znodes are pipelined (all sent before any answer is awaited), which is what
makes a rebalance of thousands of partitions fast. Unbounded, a member that releases or claims
thousands of partitions puts thousands of requests in the server's queue at once, and the
ensemble then answers everyone else (the brokers' controller, other groups' sessions) late.
Sent through `answered`, no more than the session's window (`zookeeper.max.in.flight.requests`)
wait for an answer at a time: one round trip per window instead of one per level, with the
server's queue kept short.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar
from weakref import WeakKeyDictionary

from kazoo.interfaces import IAsyncResult

from zkconsumer.config.zookeeper import MAX_IN_FLIGHT_REQUESTS

if TYPE_CHECKING:
    from kazoo.client import KazooClient

# What a session gets unless its settings say otherwise (a command's, the exporter's).
DEFAULT_WINDOW = MAX_IN_FLIGHT_REQUESTS

_K = TypeVar("_K")
_windows: WeakKeyDictionary[KazooClient, int] = WeakKeyDictionary()


def set_window(zk: KazooClient, size: int) -> None:
    if size < 1:
        raise ValueError(f"a request window must be positive, got {size}")
    _windows[zk] = size


def window_of(zk: KazooClient) -> int:
    return _windows.get(zk, DEFAULT_WINDOW)


def answered(zk: KazooClient, keys: Iterable[_K], send: Callable[[_K], IAsyncResult]
             ) -> Iterator[tuple[_K, IAsyncResult]]:
    """`send(key)` for every key, with at most the session's window of them unanswered at a
    time; yields each key with its request, answered, in the order of `keys` (`.get()` gives
    its value or raises its error)."""
    window = window_of(zk)
    pending: deque[tuple[_K, IAsyncResult]] = deque()
    for key in keys:
        if len(pending) >= window:
            yield _waited(*pending.popleft())
        pending.append((key, send(key)))
    while pending:
        yield _waited(*pending.popleft())


def _waited(key: _K, request: IAsyncResult) -> tuple[_K, IAsyncResult]:
    request.wait()
    return key, request

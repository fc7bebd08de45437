"""The reads a walk of znodes needs, and their live source: a kazoo client.

A walk asks for every znode of one level at once (all children of a group's topic directories,
all data of its owners), so that the live reader can put them in flight together (up to the
session's request window): a round trip per level (or window) instead of one per znode, which is what makes a rebalance of many members and a
group of thousands of partitions fast. The exporter reads the same walk from its watch cache,
where a read costs no request at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from kazoo.exceptions import NoNodeError
from kazoo.interfaces import IAsyncResult

from zkconsumer.zk.window import answered

if TYPE_CHECKING:
    from kazoo.client import KazooClient


class Znode(NamedTuple):
    data: bytes
    mtime_s: float  # when the data was last written, seconds since the epoch
    session: int = 0  # the session an ephemeral znode belongs to (0: a persistent one)


class ZnodeReader(Protocol):
    """A znode missing is left out of an answer rather than an error: members and owners come
    and go while a group rebalances, and a znode listed and then gone is simply not there."""

    def children(self, parents: Iterable[str]) -> dict[str, list[str]]:
        """The children of each parent that exists."""
        ...

    def data(self, paths: Iterable[str]) -> dict[str, Znode]:
        """The data of each znode that exists."""
        ...


class KazooReader:
    """The requests of a call pipelined, up to the session's window in flight at once (see
    `zk.window`)."""

    def __init__(self, zk: KazooClient) -> None:
        self._zk = zk

    def children(self, parents: Iterable[str]) -> dict[str, list[str]]:
        return _found(answered(self._zk, parents, self._zk.get_children_async))

    def data(self, paths: Iterable[str]) -> dict[str, Znode]:
        return {path: Znode(data, stat.mtime / 1000, stat.ephemeralOwner) for path, (data, stat)
                in _found(answered(self._zk, paths, self._zk.get_async)).items()}


def _found(requests: Iterator[tuple[str, IAsyncResult]]) -> dict[str, Any]:
    found = {}
    for path, request in requests:
        try:
            found[path] = request.get()
        except NoNodeError:
            continue
    return found

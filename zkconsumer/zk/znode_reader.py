"""The reads a walk of znodes needs, and their live source: a kazoo client.

A walk asks for every znode of one level at once (all children of a group's topic directories,
all data of its owners), so that the live reader can put them in flight together (up to the
session's request window): a round trip per level (or window) instead of one per znode, which
is what makes a rebalance of many members and a group of thousands of partitions fast. Where
the server serves multi-reads (3.6 and later, see `zk.multi_read`), a level goes in requests of
`multi_read.BATCH` reads each. The exporter reads the same walk from its watch cache, where a
read costs no request at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from kazoo.exceptions import ConnectionLoss, NoNodeError, UnimplementedError
from kazoo.interfaces import IAsyncResult

from zkconsumer.zk import multi_read
from zkconsumer.zk.window import answered

if TYPE_CHECKING:
    from kazoo.client import KazooClient


class Znode(NamedTuple):
    data: bytes
    mtime_s: float  # when the data was last written, seconds since the epoch
    session: int = 0  # the session an ephemeral znode belongs to (0: a persistent one)
    version: int = 0  # of its data, for a write conditional on it


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
        parents = list(parents)
        if len(parents) > 1 and multi_read.served(self._zk):
            return _found_together(self._zk, multi_read.GET_CHILDREN, parents)
        return _found(answered(self._zk, parents, self._zk.get_children_async))

    def data(self, paths: Iterable[str]) -> dict[str, Znode]:
        paths = list(paths)
        if len(paths) > 1 and multi_read.served(self._zk):
            found = _found_together(self._zk, multi_read.GET_DATA, paths)
        else:
            found = _found(answered(self._zk, paths, self._zk.get_async))
        return {path: Znode(data, stat.mtime / 1000, stat.ephemeralOwner, stat.version)
                for path, (data, stat) in found.items()}


def _found(requests: Iterator[tuple[str, IAsyncResult]]) -> dict[str, Any]:
    found = {}
    for path, request in requests:
        try:
            found[path] = request.get()
        except NoNodeError:
            continue
    return found


def _found_together(zk: KazooClient, op: int, paths: list[str]) -> dict[str, Any]:
    """`_found`'s answer, read `multi_read.BATCH` znodes per request (each one request of the
    session's window: the server answers a batch of small znodes about as fast as one)."""
    batches = [paths[at:at + multi_read.BATCH] for at in range(0, len(paths), multi_read.BATCH)]
    found = {}
    for batch, request in answered(zk, batches, lambda batch: multi_read.send(zk, op, batch)):
        try:
            results = request.get()
        except UnimplementedError:
            # Refused whatever it said (the session may be on another server since it asked,
            # in an ensemble being upgraded): it closes the connection too, so the read is
            # retried by its caller, on the next server asked afresh.
            multi_read.not_served(zk)
            raise ConnectionLoss("the server does not serve multi-reads") from None
        for path, result in zip(batch, results, strict=True):
            if isinstance(result, int):
                if result == NoNodeError.code:
                    continue
                raise multi_read.error_of(result)
            found[path] = result
    return found

"""A ZooKeeper subtree kept in memory by watches, when its shape is known in advance.

kazoo's `TreeCache` asks every znode both its data and its children, each answer passing
through two more threads and an event per znode: at thousands of groups under /consumers
(hundreds of thousands of znodes) loading took minutes. Here a `Shape` says what each znode
is: a directory, whose children are listed and watched, or a leaf, whose data is read and
watched; a znode it calls neither is not read at all. That is one request per znode, all
in flight together, their answers applied on kazoo's own callback threads.

Kazoo delivers answers on one thread and watch events on another, so the maps are changed and
read under one lock; ZooKeeper answers one session's requests in order, so an answer is never
older than one already applied. An answer for a znode its parent no longer lists (removed
while the request was in flight) is dropped, so nothing removed comes back. After a
reconnection, the same session or a new one, the whole subtree is read again, as watches may
have been lost with the session; so is it when the root, removed, is created again.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, NoNodeError, SessionExpiredError
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from zkconsumer.logs import get_logger
from zkconsumer.zk.znode_reader import Znode

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = get_logger(__name__)

_CONNECTION_GONE = (ConnectionLoss, SessionExpiredError, ConnectionClosedError)


class Kind(enum.Enum):
    DIRECTORY = "directory"  # its children are listed
    LEAF = "leaf"  # its data is read


# What a znode below the root is, from its path's names below the root; None: not read.
Shape = Callable[[tuple[str, ...]], Kind | None]
# Told the names below the root of every znode whose listing or data changed.
OnChange = Callable[[tuple[str, ...]], None]


class WatchedTree:
    def __init__(self, zk: KazooClient, root: str, shape: Shape,
                 on_change: OnChange = lambda _names: None) -> None:
        self._zk = zk
        self._root = root.rstrip("/")
        self._shape = shape
        self._on_change = on_change
        self._lock = threading.Lock()
        self._children: dict[str, frozenset[str]] = {}
        self._data: dict[str, Znode] = {}
        self._in_flight = 0
        self.loaded = threading.Event()  # set once the first whole read has been answered
        self.connected = True
        self._started = False
        self._closed = False

    def start(self) -> None:
        """Reads the whole subtree; `loaded` is set when every request is answered."""
        self._started = True
        self._zk.add_listener(self._on_state)
        self._list(self._root, refresh=True)

    def close(self) -> None:
        """Stops following changes; watches already set fire into nothing."""
        self._closed = True
        self._zk.remove_listener(self._on_state)

    def children(self, parents: Iterable[str]) -> dict[str, list[str]]:
        with self._lock:
            return {parent: list(children) for parent in parents
                    if (children := self._children.get(parent)) is not None}

    def data(self, paths: Iterable[str]) -> dict[str, Znode]:
        with self._lock:
            return {path: znode for path in paths if (znode := self._data.get(path)) is not None}

    def _on_state(self, state: str) -> None:
        """Called on kazoo's connection thread, which must not wait: requests are only queued."""
        if state == KazooState.CONNECTED:
            self.connected = True
            if self._started and not self._closed:
                self._list(self._root, refresh=True)
        else:
            self.connected = False

    def _names(self, path: str) -> tuple[str, ...]:
        return tuple(path[len(self._root) + 1:].split("/")) if path != self._root else ()

    def _list(self, path: str, refresh: bool) -> None:
        """List a directory; `refresh`: read every child again, not only new ones."""
        self._request(self._zk.get_children_async(path, watch=self._watched),
                      lambda answer: self._listed(path, answer, refresh))

    def _read(self, path: str) -> None:
        self._request(self._zk.get_async(path, watch=self._watched),
                      lambda answer: self._read_done(path, answer))

    def _request(self, pending: Any, done: Callable[[Any], None]) -> None:
        with self._lock:
            self._in_flight += 1

        def answered(answer: Any) -> None:
            try:
                if not self._closed:
                    done(answer)
            except Exception as exc:  # noqa: BLE001 - kazoo's callback thread must go on
                log.warning("ZooKeeper cache error", error=f"{type(exc).__name__}: {exc}")
            finally:
                with self._lock:
                    self._in_flight -= 1
                    if self._in_flight == 0 and self.connected:  # else read again, then set
                        self.loaded.set()

        pending.rawlink(answered)

    def _listed(self, path: str, answer: Any, refresh: bool) -> None:
        try:
            names = frozenset(answer.get())
        except NoNodeError:
            self._remove(path)
            return
        except _CONNECTION_GONE:  # read again on reconnecting
            return
        depth = self._names(path)
        with self._lock:
            if not self._is_listed(path):
                return
            before = self._children.get(path, frozenset())
            self._children[path] = names
            for gone in before - names:
                self._drop(f"{path}/{gone}")
        if names != before:
            self._on_change(depth)
        for name in sorted(names if refresh else names - before):
            kind = self._shape((*depth, name))
            if kind is Kind.DIRECTORY:
                self._list(f"{path}/{name}", refresh)
            elif kind is Kind.LEAF:
                self._read(f"{path}/{name}")

    def _read_done(self, path: str, answer: Any) -> None:
        try:
            data, stat = answer.get()
        except NoNodeError:
            self._remove(path)
            return
        except _CONNECTION_GONE:  # read again on reconnecting
            return
        with self._lock:
            if not self._is_listed(path):
                return
            # The data and stat of one version: an offset and its mtime agree.
            self._data[path] = Znode(data, stat.mtime / 1000, stat.ephemeralOwner, stat.version)
        self._on_change(self._names(path))

    def _watched(self, event: WatchedEvent) -> None:
        if self._closed:
            return
        if event.type == EventType.DELETED:
            self._remove(event.path)
        elif event.type == EventType.CREATED:  # the root, watched while it was gone
            self._list(event.path, refresh=True)
        elif event.type == EventType.CHILD:
            self._list(event.path, refresh=False)
        elif event.type == EventType.CHANGED:
            self._read(event.path)

    def _remove(self, path: str) -> None:
        with self._lock:
            self._drop(path)
        self._on_change(self._names(path))
        if path == self._root:  # read again once it is back
            self._request(self._zk.exists_async(path, watch=self._watched),
                          lambda answer: self._root_exists(answer))

    def _root_exists(self, answer: Any) -> None:
        try:
            there = answer.get() is not None
        except _CONNECTION_GONE:
            return
        if there:
            self._list(self._root, refresh=True)

    def _is_listed(self, path: str) -> bool:
        """The root, or a znode its parent's last listing holds (lock held)."""
        if path == self._root:
            return True
        parent, _, name = path.rpartition("/")
        return name in self._children.get(parent, ())

    def _drop(self, path: str) -> None:
        """Forget a znode and all below it (lock held)."""
        self._data.pop(path, None)
        for name in self._children.pop(path, ()):
            self._drop(f"{path}/{name}")

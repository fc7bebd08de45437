"""Every group under /consumers, kept in memory by ZooKeeper watches.

kazoo's `TreeCache` watches each znode of the subtree once and re-reads only what changed, so
a scan of hundreds of groups costs no ZooKeeper request at all: the rescan on every scrape that
makes kafka_exporter's ZooKeeper mode heavy never happens. Its background thread changes the
tree while a scan reads it, so a read that meets a change half-way is simply made again.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Iterable

from kazoo.client import KazooClient
from kazoo.recipe.cache import TreeCache, TreeEvent

from zkconsumer.errors import ZkConsumerError, ZnodeDataError
from zkconsumer.lag.report import GroupState
from zkconsumer.logs import get_logger
from zkconsumer.throttled_log import RetryWarnings
from zkconsumer.zk.group_walk import GroupWalk
from zkconsumer.zk.znode_reader import Znode
from zkconsumer.znodes.paths import CONSUMERS, GroupPaths

log = get_logger(__name__)

# A scan that keeps meeting the tree mid-change gives up on this try and is made at the next.
_READ_ATTEMPTS = 5
_STOP_POLL_S = 0.2


class GroupsCacheError(ZkConsumerError):
    """The /consumers subtree could not be loaded from ZooKeeper."""


class GroupsCache:
    def __init__(self, zk: KazooClient, group_regex: str | None = None) -> None:
        self._zk = zk
        self._wanted = re.compile(group_regex) if group_regex else None
        self._tree = TreeCache(zk, CONSUMERS)
        self._loaded = threading.Event()
        self._connected = True
        # A malformed znode is left out of the figures, and said once, not at every scan.
        self._malformed = RetryWarnings(log, every_s=math.inf)
        self._cached = _CachedZnodes(self._tree)
        self._walk = GroupWalk(self._cached, self._skip)
        self._tree.listen(self._on_event)
        self._tree.listen_fault(self._on_fault)

    def start(self, timeout_s: float, stop: threading.Event | None = None) -> bool:
        """Loads the subtree, once /consumers exists (the cache would create it otherwise, a
        write a monitor has no business making); False if `stop` was set first, an error if
        it is not all read within the timeout once there."""
        stop = stop or threading.Event()
        appeared = threading.Event()
        while self._zk.exists(CONSUMERS, watch=lambda _event: appeared.set()) is None:
            log.info("waiting for /consumers to be created")
            if not _first_of(appeared, stop, None):
                return False
            appeared.clear()
        self._tree.start()
        if not _first_of(self._loaded, stop, timeout_s):
            if stop.is_set():
                return False
            raise GroupsCacheError(f"ZooKeeper did not give all of {CONSUMERS} within "
                                   f"{timeout_s:g} s")
        return True

    def groups(self) -> list[GroupState]:
        """Every wanted group as the cache holds it; an error while the connection to
        ZooKeeper is lost, since the cache then no longer follows it."""
        for _ in range(_READ_ATTEMPTS):
            if not self._connected:
                raise GroupsCacheError("the connection to ZooKeeper is lost; the groups are "
                                       "read again once it is back")
            try:
                return [state for name in sorted(self._cached.children([CONSUMERS])
                                                 .get(CONSUMERS, []))
                        if (self._wanted is None or self._wanted.fullmatch(name))
                        and (state := self._group(name)) is not None]
            except (RuntimeError, KeyError):  # a node removed while the scan walked to it
                continue
        raise GroupsCacheError(f"{CONSUMERS} kept changing during {_READ_ATTEMPTS} reads")

    def close(self) -> None:
        self._tree.close()

    def _group(self, name: str) -> GroupState | None:
        try:
            paths = GroupPaths(name)
        except ValueError as exc:  # a znode no consumer could have made
            self._warn_malformed(f"{CONSUMERS}/{name}", exc)
            return None
        return self._walk.state(paths)

    def _skip(self, error: ZnodeDataError) -> None:
        self._warn_malformed(error.path, error)

    def _warn_malformed(self, path: str, exc: Exception) -> None:
        self._malformed.report(path, "skipping a znode that does not parse", path=path,
                               error=str(exc))

    def _on_event(self, event: TreeEvent) -> None:
        """Kazoo re-reads the whole tree after a reconnection, in a new session too."""
        if event.event_type == TreeEvent.INITIALIZED:
            self._loaded.set()
        elif event.event_type in (TreeEvent.CONNECTION_SUSPENDED, TreeEvent.CONNECTION_LOST):
            self._connected = False
        elif event.event_type == TreeEvent.CONNECTION_RECONNECTED:
            self._connected = True

    def _on_fault(self, exc: Exception) -> None:
        log.warning("ZooKeeper cache error", error=f"{type(exc).__name__}: {exc}")


class _CachedZnodes:
    """The cache's copy of the subtree, read without a request; a znode whose data the cache
    has not read yet counts as missing, as one it has not seen yet does."""

    def __init__(self, tree: TreeCache) -> None:
        self._tree = tree

    def children(self, parents: Iterable[str]) -> dict[str, list[str]]:
        return {parent: list(children) for parent in parents
                if (children := self._tree.get_children(parent)) is not None}

    def data(self, paths: Iterable[str]) -> dict[str, Znode]:
        # NodeData holds the data and stat of one version: the offset and its mtime agree.
        return {path: Znode(node.data, node.stat.mtime / 1000) for path in paths
                if (node := self._tree.get_data(path)) is not None and node.data is not None}


def _first_of(wanted: threading.Event, stop: threading.Event, timeout_s: float | None) -> bool:
    """Wait until `wanted` is set (True), or `stop` is, or the time is up (False); a short
    wait at a time, so that a stop request is heard within a moment."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while not wanted.is_set():
        if stop.is_set() or (deadline is not None and time.monotonic() > deadline):
            return False
        wanted.wait(_STOP_POLL_S)
    return True

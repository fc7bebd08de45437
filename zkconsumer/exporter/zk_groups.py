"""Every group under /consumers, kept in memory by ZooKeeper watches.

The znodes of each group are kept by a `WatchedTree` that knows the shape of /consumers (the
directories `ids`, `owners/<topic>` and `offsets/<topic>` listed, members, owners and offsets
read), so a scan of thousands of groups costs no ZooKeeper request at all: the rescan on every
scrape that makes kafka_exporter's ZooKeeper mode heavy never happens. A group's state is
built again only when one of its znodes changed since the last scan; a group whose name
`--group-regex` leaves out is not read at all.
"""

from __future__ import annotations

import math
import re
import threading
import time

from kazoo.client import KazooClient

from zkconsumer.errors import ZkConsumerError, ZnodeDataError
from zkconsumer.lag.report import GroupState
from zkconsumer.logs import get_logger
from zkconsumer.throttled_log import RetryWarnings
from zkconsumer.zk.group_walk import GroupWalk
from zkconsumer.zk.watched_tree import Kind, WatchedTree
from zkconsumer.znodes.fence import Fence
from zkconsumer.znodes.paths import CONSUMERS, FENCE, GroupPaths

log = get_logger(__name__)

_STOP_POLL_S = 0.2
_GROUP_DIRECTORIES = frozenset({"ids", "owners", "offsets"})


class GroupsCacheError(ZkConsumerError):
    """The /consumers subtree could not be loaded from ZooKeeper."""


class GroupsCache:
    def __init__(self, zk: KazooClient, group_regex: str | None = None) -> None:
        self._zk = zk
        self._wanted = re.compile(group_regex) if group_regex else None
        self._tree = WatchedTree(zk, CONSUMERS, self._shape, self._changed)
        # Groups with a znode changed since the last scan; written on kazoo's threads.
        self._dirty: set[str] = set()
        self._dirty_lock = threading.Lock()
        self._states: dict[str, GroupState | None] = {}  # by the scan thread only
        # A malformed znode is left out of the figures, and said once, not at every scan.
        self._malformed = RetryWarnings(log, every_s=math.inf)
        self._walk = GroupWalk(self._tree, self._skip)

    def start(self, timeout_s: float, stop: threading.Event | None = None) -> bool:
        """Loads the subtree, once /consumers exists (creating it is a write a monitor has no
        business making); False if `stop` was set first, an error if it is not all read
        within the timeout once there."""
        stop = stop or threading.Event()
        appeared = threading.Event()
        while self._zk.exists(CONSUMERS, watch=lambda _event: appeared.set()) is None:
            log.info("waiting for /consumers to be created")
            if not _first_of(appeared, stop, None):
                return False
            appeared.clear()
        self._tree.start()
        if not _first_of(self._tree.loaded, stop, timeout_s):
            if stop.is_set():
                return False
            raise GroupsCacheError(f"ZooKeeper did not give all of {CONSUMERS} within "
                                   f"{timeout_s:g} s")
        return True

    def groups(self) -> list[GroupState]:
        """Every wanted group as the cache holds it; an error while the connection to
        ZooKeeper is lost, since the cache then no longer follows it."""
        if not self._tree.connected:
            raise GroupsCacheError("the connection to ZooKeeper is lost; the groups are read "
                                   "again once it is back")
        with self._dirty_lock:
            changed, self._dirty = self._dirty, set()
        names = [name for name in sorted(self._tree.children([CONSUMERS]).get(CONSUMERS, []))
                 if self._is_wanted(name)]
        self._states = {name: self._group(name) if name in changed or name not in self._states
                        else self._states[name] for name in names}
        return [state for state in self._states.values() if state is not None]

    def fences(self) -> dict[str, Fence]:
        """The cutover fence of every wanted group that has one; one that does not parse is
        left out, and said once."""
        names = self._tree.children([CONSUMERS]).get(CONSUMERS, [])
        # Built here, not by GroupPaths: a name under /consumers is read before it is judged valid.
        paths = {f"{CONSUMERS}/{name}/{FENCE}": name for name in names if self._is_wanted(name)}
        found = {}
        for path, znode in self._tree.data(paths).items():
            try:
                found[paths[path]] = Fence.decode(path, znode.data)
            except ZnodeDataError as exc:
                self._warn_malformed(path, exc)
        return found

    def close(self) -> None:
        self._tree.close()

    def _is_wanted(self, name: str) -> bool:
        return self._wanted is None or self._wanted.fullmatch(name) is not None

    def _shape(self, names: tuple[str, ...]) -> Kind | None:
        """What of /consumers is read: for each wanted group, its three directories, the
        topic directories of owners/ and offsets/, and the znodes in them."""
        depth = len(names)
        if depth == 1:
            return Kind.DIRECTORY if self._is_wanted(names[0]) else None
        if depth == 2 and names[1] == FENCE:
            return Kind.LEAF
        if names[1] not in _GROUP_DIRECTORIES or depth > 4:
            return None
        if depth == 2:
            return Kind.DIRECTORY
        if names[1] == "ids":
            return Kind.LEAF if depth == 3 else None
        return Kind.DIRECTORY if depth == 3 else Kind.LEAF

    def _changed(self, names: tuple[str, ...]) -> None:
        if names:
            with self._dirty_lock:
                self._dirty.add(names[0])

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


def _first_of(wanted: threading.Event, stop: threading.Event, timeout_s: float | None) -> bool:
    """Wait until `wanted` is set (True), or `stop` is, or the time is up (False); a short
    wait at a time, so that a stop request is heard within a moment."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while not wanted.is_set():
        if stop.is_set() or (deadline is not None and time.monotonic() > deadline):
            return False
        wanted.wait(_STOP_POLL_S)
    return True

"""A member's side of the cutover fence in ZooKeeper: reading and watching `/consumers/G/fence`,
and the member's `fence-aware` znode, its promise to honour it.

What a fence means for the member is `fence_decision`'s; this module only talks to ZooKeeper.
The promise is made before the member registers (or joins Kafka's group) and withdrawn after it
left, so `group cutover` never sees a registered member without one; it is ephemeral, so a
member that dies takes it with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError, NotEmptyError
from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import DataWatch

from zkconsumer.errors import ZkConsumerError, ZnodeDataError, describe_error
from zkconsumer.logs import get_logger
from zkconsumer.member.zk_membership import DuplicateConsumerIdError
from zkconsumer.zk.group_state import read_fence
from zkconsumer.znodes.fence import Fence, FenceAwareMember
from zkconsumer.znodes.paths import GroupPaths

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = get_logger(__name__)

# How often a wait for the fence looks for a stop request.
_STOP_POLL_S = 0.2


class FenceWatch:
    """The group's fence, read once or watched."""

    def __init__(self, zk: KazooClient, group: str) -> None:
        self._zk = zk
        self._group = group
        self._path = GroupPaths(group).fence
        self._watching = True

    def read(self) -> Fence | None:
        """The group's fence now (None: none); ZnodeDataError if it does not parse."""
        return read_fence(self._zk, self._group)[0]

    def watch(self, on_fence: Callable[[Fence | None], None]) -> None:
        """Call `on_fence` with the fence now and at every change, on kazoo's thread, until
        `stop`. A fence that does not parse is logged and changes nothing: a member is never
        moved by bytes it cannot read."""
        def changed(data: bytes | None, stat) -> bool:
            if not self._watching:
                return False  # kazoo ends the watch
            fence = self._decoded(data, stat)
            if not isinstance(fence, _Unreadable):
                on_fence(fence)
            return True

        DataWatch(self._zk, self._path, changed)

    def stop(self) -> None:
        """No more calls after the next change (kazoo has no other way to end a DataWatch)."""
        self._watching = False

    def _decoded(self, data: bytes | None, stat) -> Fence | None | _Unreadable:
        if stat is None:
            return None
        try:
            return Fence.decode(self._path, data or b"")
        except ZnodeDataError as exc:
            log.error("cutover fence unreadable; ignored", error=str(exc))
            return _Unreadable()


class _Unreadable:
    """A fence that does not parse: not a fence, and not "no fence" either."""


class MemberFence(FenceWatch):
    """The fence as a member sees it: watched, and honoured by its fence-aware znode, which is
    made again in every new session (it went with the one that expired)."""

    def __init__(self, zk: KazooClient, group: str, consumer_id: str,
                 promise: FenceAwareMember) -> None:
        super().__init__(zk, group)
        paths = GroupPaths(group)
        self._aware = paths.fence_aware_member(consumer_id)
        # Removed when empty, innermost first: a group that lives on Kafka's coordinator alone
        # must not be left looking like a ZooKeeper group (see `withdraw`).
        self._folders = (paths.fence_aware, paths.root)
        self._promise = promise
        self._declared_in: int | None = None  # the session the promise was made in

    def declare(self) -> None:
        """Create the fence-aware znode; one of this very session counts as made (a create
        whose answer was lost, retried)."""
        if self._declared_in is None:
            self._zk.add_listener(self._on_session_state)
        try:
            self._zk.create(self._aware, self._promise.encode(), ephemeral=True, makepath=True)
        except NodeExistsError:
            _, stat = self._zk.get(self._aware)
            if stat.ephemeralOwner != self._zk.client_id[0]:
                raise DuplicateConsumerIdError(
                    f"{self._aware} is another live session's: its consumer id is in use"
                ) from None
            self._zk.set(self._aware, self._promise.encode())
        self._declared_in = self._zk.client_id[0]

    def withdraw(self) -> None:
        """Delete the fence-aware znode, once the member left its group; stop watching. The
        folders go with the group's last such member when nothing else is in them, as a group
        whose members all left (or failed to start) should hold nothing of theirs."""
        self.stop()
        self._zk.remove_listener(self._on_session_state)
        for path in (self._aware, *self._folders):
            try:
                self._zk.delete(path)
            except (NoNodeError, NotEmptyError):
                return

    def _on_session_state(self, state: KazooState) -> None:
        """On kazoo's thread, which must not block: a new session made after an expiry gets
        the promise again, on a thread of its own."""
        client_id = self._zk.client_id
        if state is KazooState.CONNECTED and client_id and client_id[0] != self._declared_in:
            threading.Thread(target=self._declare_again, name="zkconsumer-fence-aware",
                             daemon=True).start()

    def _declare_again(self) -> None:
        try:
            self.declare()
        except (KazooException, ZkConsumerError) as exc:
            log.warning("could not make the fence-aware znode again in the new ZooKeeper "
                        "session; group cutover will refuse until this member restarts",
                        error=describe_error(exc))


def wait_for_fence(zk: KazooClient, group: str, settled: Callable[[Fence | None], bool],
                   stop_requested: threading.Event) -> Fence | None:
    """Block until the group's fence is one `settled` accepts; returns it. Returns None at
    once when `stop_requested` is set (check it: None is also "no fence")."""
    latest: list[Fence | None] = []
    changed = threading.Condition()

    def on_fence(fence: Fence | None) -> None:
        with changed:
            latest[:] = [fence]
            changed.notify_all()

    watch = FenceWatch(zk, group)
    watch.watch(on_fence)
    try:
        with changed:
            while not stop_requested.is_set():
                if latest and settled(latest[0]):
                    return latest[0]
                changed.wait(_STOP_POLL_S)
        return None
    finally:
        watch.stop()

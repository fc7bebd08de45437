"""When a member that cannot claim its partitions may give up, decided from what ZooKeeper says.

A member killed without a clean stop keeps its owner znodes until its session expires: a
session timeout (plus a server tick) after the last thing the ZooKeeper leader heard from it.
But a new leader gives every session a fresh timeout, so a dead member's znodes outlive any
wait measured from when the rebalance began if the leader changes meanwhile; survivors that
gave up then left its partitions, and their own, with no owner at all.

The wait also starts again whenever the group's members change: every member then rebalances
again, in its turn, and a live peer holds what moves away from it until its own rebalance
gives it back. And an owner that is a registered member of the group (a peer still
rebalancing, not a session that left the group without letting go) is given at least
`PEER_ALLOWANCE_S` per member: at fleet size a peer's release can wait on another's, and that
one's on a third, each a rebalance attempt through one busy ensemble, longer than two session
timeouts in all. Members that gave up on such peers left a start and a rolling restart of 200
with three to eight members fewer.

So the wait is measured per owner session and per leader epoch (the high half of every zxid,
which a new leader increments): giving up is allowed only once every contested owner znode has
been held by the same session for a whole expiry window within the current epoch, which a
dead session cannot do. A session that can do that is alive and holding on, and waiting longer
would not help.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from zkconsumer.model import TopicPartition

# How long an owner that is a registered member of the group is waited for, per member.
PEER_ALLOWANCE_S = 0.5


def leader_epoch(zxid: int) -> int:
    return zxid >> 32


@dataclass(frozen=True)
class OwnersSeen:
    """The contested owner znodes as one read found them: partition -> the session that owns
    its znode (a partition whose znode was gone is absent), and the leader epoch of the read."""

    sessions: Mapping[TopicPartition, int]
    epoch: int
    # sessions of the group's registered members (another set: the members changed)
    peers: frozenset[int] = frozenset()
    members: int = 0  # how many are registered


class OwnerWait:
    """The wait of one rebalance for the owners of the partitions it could not claim.

    `expiry_window_s` is how long any session the leader stops hearing from lasts at most:
    the group's session timeout with a margin for the server's tick (the connector passes two
    session timeouts). Times are the caller's monotonic clock; nothing here reads a clock.
    """

    def __init__(self, expiry_window_s: float) -> None:
        self._window_s = expiry_window_s
        self._epoch: int | None = None
        self._held_since: dict[TopicPartition, tuple[int, float]] = {}
        self._peers: frozenset[int] = frozenset()
        self._peer_window_s = expiry_window_s

    def observe(self, seen: OwnersSeen, now: float) -> None:
        if seen.epoch != self._epoch or seen.peers != self._peers:
            # A new leader: every session's timeout started again, so every wait does too.
            # New members (their sessions): every peer rebalances again, and is waited for anew.
            self._epoch = seen.epoch
            self._held_since = {}
        self._peers = seen.peers
        self._peer_window_s = max(self._window_s, seen.members * PEER_ALLOWANCE_S)
        previous = self._held_since
        self._held_since = {
            tp: previous[tp] if tp in previous and previous[tp][0] == session else (session, now)
            for tp, session in seen.sessions.items()}

    def may_give_up(self, now: float) -> bool:
        """True when owners are left and each has outlived an expiry window in this epoch."""
        return bool(self._held_since) and not self.can_still_expire(now)

    def can_still_expire(self, now: float) -> list[TopicPartition]:
        """Contested partitions whose owner session may yet turn out to be dead."""
        return sorted(tp for tp, (session, since) in self._held_since.items()
                      if now - since < (self._peer_window_s if session in self._peers
                                        else self._window_s))

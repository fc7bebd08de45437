"""Committing consumed positions: only for partitions still owned, never backwards.

Streams record positions lock-free on the consuming threads (a dict store per message); they are
gathered here. Two locks keep commits correct without making a rebalance wait on a slow store:
the state lock guards the bookkeeping and is never held across I/O, and the write lock lets one
write reach the store at a time, in the order the offsets were gathered, so an older write can
never land after a newer one. Writes that a rebalance may wait behind make a single attempt
(auto commit retries at its next interval anyway), so that wait is one request at most.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Mapping

import structlog

from zkconsumer.member.streams import Claim, KafkaStream
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.store import OwnerCheck

log = structlog.get_logger(__name__)


class OffsetCommitter:
    """`claims` is the member's live claims (partition -> token); `owner_checks` gives the
    owner znodes a ZooKeeper commit is made conditional on; `may_commit` is false while the
    member's ZooKeeper session cannot be trusted (a cut-off member must not commit)."""

    def __init__(self, store, tracker, streams: Callable[[], Iterable[KafkaStream]],
                 claims: Callable[[], Mapping[TopicPartition, Claim]], *,
                 owner_checks: Callable[[Collection[TopicPartition]],
                                        Mapping[TopicPartition, OwnerCheck]] = lambda _tps: {},
                 may_commit: Callable[[], bool] = lambda: True) -> None:
        self._store = store
        self._tracker = tracker
        self._streams = streams
        self._claims = claims
        self._owner_checks = owner_checks
        self._may_commit = may_commit
        self._state_lock = threading.Lock()
        self._write_lock = threading.Lock()

    def commit(self, *, in_hand: bool = False, retry: bool = True) -> dict[TopicPartition, int]:
        """Write positions of owned partitions that moved since the last commit, and refresh
        the unchanged ones in a store whose offsets expire; returns what moved.

        `in_hand=True` also counts the message each stream handed out last (an explicit
        `commit_offsets()` from the consuming code says it is done with it). A partition no
        longer owned is skipped: its new owner's offset must win."""
        if not self._may_commit():
            log.info("commit skipped: the ZooKeeper session cannot be trusted now")
            return {}
        if in_hand:
            for stream in self._streams():
                stream.mark_consumed()
        with self._write_lock:
            return self._write(set(self._claims()), retry)

    def commit_releasing(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        """The last commit of partitions being released, one attempt. Their claims are already
        withdrawn (so nothing more is delivered from them) but their owner znodes are still
        ours, which is why ownership is not checked here."""
        with self._write_lock:
            return self._write(set(partitions), retry=False)

    def _write(self, partitions: set[TopicPartition], retry: bool) -> dict[TopicPartition, int]:
        with self._state_lock:
            for stream in self._streams():
                for tp, position in dict(stream.positions).items():
                    if tp in partitions:
                        self._tracker.record_position(tp, position)
            pending = {tp: offset for tp, offset in self._tracker.pending().items()
                       if tp in partitions}
            refresh = {tp: offset for tp, offset in self._tracker.committed().items()
                       if tp in partitions and tp not in pending}
            owners = self._owner_checks(pending)  # while these are known to be ours
        if not pending and not refresh:
            return {}
        self._store.commit(pending, refresh=refresh, retry=retry, owners=owners)
        with self._state_lock:
            # Released meanwhile: forgotten, and must stay forgotten.
            known = self._tracker.committed().keys() | self._tracker.pending().keys()
            self._tracker.mark_committed({tp: offset for tp, offset in pending.items()
                                          if tp in known})
        if pending:
            log.debug("committed offsets", partitions=len(pending))
        return pending

    def reset_to(self, tp: TopicPartition, claim: Claim, position: int) -> None:
        """A partition with no committed offset was reset (`auto.offset.reset`) to `position`:
        commit that even if nothing is ever delivered from it, as the reference does, or its
        next owner resets again, past whatever was produced in between."""
        with self._state_lock:
            if self._claims().get(tp) is claim:
                self._tracker.record_position(tp, position)

    def claimed(self, committed: dict[TopicPartition, int]) -> None:
        with self._state_lock:
            self._tracker.set_committed(committed)

    def released(self, partitions: Collection[TopicPartition]) -> None:
        """Forget released partitions, here and in the streams, so a stale position is never written."""
        with self._state_lock:
            self._tracker.forget(partitions)
            for stream in self._streams():
                for tp in partitions:
                    stream.positions.pop(tp, None)

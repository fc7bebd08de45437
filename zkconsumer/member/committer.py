"""Committing consumed positions: only for partitions still owned, under the token each was
claimed under, never backwards.

Streams record positions lock-free on the consuming threads, in the record of each partition
(`Claim.consumed`, one store per message); the member's state takes them in as it decides what
is worth committing (`MemberState.to_commit`), so a partition released takes its position with
its record. The write lock lets one write reach the store at a time, in the order the
offsets were gathered, so an older write can never land after a newer one; the member's lock is
never held across it, so a rebalance does not wait on a slow store for its bookkeeping. Writes
that a rebalance may wait behind make a single attempt (auto commit retries at its next interval
anyway), so that wait is one request at most.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Mapping

from zkconsumer.logs import get_logger
from zkconsumer.member.claims import Token
from zkconsumer.member.state import MemberState
from zkconsumer.member.streams import KafkaStream
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.store import OwnerCheck
from zkconsumer.throttled_log import RepeatedCondition

log = get_logger(__name__)


class OffsetCommitter:
    """`member` is the member's state: it names the partitions that may be committed, each
    with the token its claim was made under and what is worth writing (see
    `MemberState.committable`). `owner_checks`, when given, turns those tokens into what the
    store makes each write conditional on (for ZooKeeper, the owner znodes of the tokens that
    are the session the member has now; for Kafka's group coordinator, the generation itself),
    passed to the store as `owners`; a partition left out is not committed to any store (it
    may be another member's by now). Whether a commit may be written at all is the member's
    one question (`MemberState.may_commit`: the term trusted and its lease running; a member
    cut off from ZooKeeper, or frozen past its lease, must not commit), asked with the entries
    it gives; `pause_words` say why commits pause and why they resume, in the coordinator's
    terms."""

    def __init__(self, store, streams: Callable[[], Iterable[KafkaStream]],
                 member: MemberState, *,
                 owner_checks: Callable[[Mapping[TopicPartition, Token]],
                                        Mapping[TopicPartition, OwnerCheck | Token]]
                 | None = None,
                 pause_words: tuple[str, str] = ("the ZooKeeper session cannot be trusted now",
                                                 "the ZooKeeper session is back")) -> None:
        self._store = store
        self._streams = streams
        self._member = member
        self._owner_checks = owner_checks
        self._write_lock = threading.Lock()
        self._untrusted = RepeatedCondition(log, f"commits paused: {pause_words[0]}",
                                            f"commits resumed: {pause_words[1]}", level="info")

    @property
    def paused(self) -> bool:
        """Whether the last write was refused because the term could not be trusted or its
        lease lapsed (so nothing was committed, though nothing failed either)."""
        return self._untrusted.active

    def commit(self, *, in_hand: bool = False, retry: bool = True) -> dict[TopicPartition, int]:
        """Write positions of owned partitions that moved since the last commit, and refresh
        the unchanged ones in a store whose offsets expire; returns what moved.

        `in_hand=True` also counts the message each stream handed out last (an explicit
        `commit_offsets()` from the consuming code says it is done with it). A partition no
        longer owned is skipped: its new owner's offset must win."""
        return self._commit(in_hand, retry) or {}

    def commit_final(self, *, retry: bool) -> bool:
        """The leave's last commit (`commit`), reported truthfully: True when it was allowed
        (what was pending is written, or nothing was pending), False when it was refused and
        so wrote nothing of what was consumed."""
        return self._commit(False, retry) is not None

    def _commit(self, in_hand: bool, retry: bool) -> dict[TopicPartition, int] | None:
        if in_hand:
            for stream in self._streams():
                stream.mark_consumed()
        with self._write_lock:
            return self._write(None, retry)

    def commit_releasing(self, partitions: Collection[TopicPartition],
                         commit: bool = True) -> dict[TopicPartition, int]:
        """Before partitions are released: waits for a write in flight (which must land before
        their owner znodes go, or it could land over their next owner's offset), then, with
        `commit`, their last commit, one attempt. Their claims are RELEASING already (nothing
        more is delivered from them) but their owner znodes are still ours."""
        with self._write_lock:
            if not commit:
                return {}
            return self._write(partitions, retry=False) or {}

    def releasing_offsets(self, partitions: Collection[TopicPartition]
                          ) -> dict[TopicPartition, int]:
        """What `commit_releasing` would write for these, for a coordinator that commits
        them itself (a Kafka-coordinated member's parting commit), without writing."""
        entries = self._member.releasing(partitions)
        return {tp: entry.pending for tp, entry in entries.items() if entry.pending is not None}

    def _write(self, releasing: Collection[TopicPartition] | None,
               retry: bool) -> dict[TopicPartition, int] | None:
        """Commit what the member gives (`MemberState.to_commit`: the partitions delivered
        from, or those of `releasing`), the streams' positions taken in; None when the member
        says no commit may be written now."""
        entries = self._member.to_commit(releasing=releasing)
        if entries is None:
            self._untrusted.occurred()
            return None
        self._untrusted.cleared()
        if not entries:
            return {}
        pending = {tp: entry.pending for tp, entry in entries.items() if entry.pending is not None}
        refresh = {tp: entry.committed for tp, entry in entries.items()
                   if entry.pending is None and entry.committed is not None}
        owners = None
        if self._owner_checks is not None:  # asked while these are known to be ours
            owners = self._owner_checks({tp: entries[tp].token
                                         for tp in pending.keys() | refresh.keys()})
            pending = self._drop_unowned(pending, owners)
            refresh = {tp: offset for tp, offset in refresh.items() if tp in owners}
        if not pending and not refresh:
            return {}
        self._store.commit(pending, refresh=refresh, retry=retry, owners=owners)
        # A claim released (or made anew) meanwhile is not marked: its token differs or it is gone.
        self._member.committed({tp: (entries[tp].token, offset) for tp, offset in pending.items()})
        if pending:
            log.debug("committed offsets", partitions=len(pending))
        return pending

    @staticmethod
    def _drop_unowned(pending: dict[TopicPartition, int],
                      owners: Mapping[TopicPartition, OwnerCheck | Token]
                      ) -> dict[TopicPartition, int]:
        unowned = [tp for tp in pending if tp not in owners]
        if unowned:
            log.warning("offsets not committed: claimed in an earlier ZooKeeper session",
                        partitions=[str(tp) for tp in unowned[:8]], count=len(unowned))
        return {tp: offset for tp, offset in pending.items() if tp in owners}

    def positions(self) -> dict[TopicPartition, int]:
        """Where consumption of each partition stands (the offset the group would resume
        from), for lag: a stream's position once it handed something out, else the committed
        offset, or where a reset put the partition (`MemberState.consumed_positions`)."""
        return self._member.consumed_positions()

"""One rebalance of one member, with bounded attempts, as the protocol prescribes.

Per attempt: read the group, compute our slice, release what moves away (after committing its
offsets), then claim what is new in one transaction. A claim that finds a partition still owned
waits on that owner znode (up to `rebalance.backoff.ms`) and starts a new attempt from a fresh
read of the group; after `rebalance.max.retries` attempts the member gives up, owning nothing.

Unlike the reference, it never gives up while a contested owner znode's session may still turn
out to be a dead member's: a member killed without a clean stop holds its partitions until its
session expires, and a ZooKeeper leader change gives that session a fresh timeout. Failing the
survivors for it is the reference's most common ConsumerRebalanceFailedException, so the
attempts are followed by a wait measured per owner session and leader epoch (see `owner_wait`),
of `crashed_owner_grace_ms` (two session timeouts, as the connector passes it).

The member's state keeps the record of each partition held (`MemberState`): the rebalance plans
from it and drives each record's phases. A claim is recorded before its owner znodes are made
and delivered from only once the state accepts it as made in its current session
(`MemberState.claims_made`): a session that expires while a claim is under way makes the
rebalance release that claim and end, and the member registers again before it claims. A
rebalance cut short (ZooKeeper failed in between) leaves records claiming or releasing, which
the next attempt releases first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kazoo.exceptions import KazooException

from zkconsumer.errors import ZkConsumerError, describe_error
from zkconsumer.logs import get_logger
from zkconsumer.member.missing_topics import MissingTopicsNotice, missing_topics
from zkconsumer.member.owner_wait import OwnerWait
from zkconsumer.member.plan import plan_rebalance, target_for_member
from zkconsumer.member.release import Release
from zkconsumer.member.state import MemberState, StaleClaimError
from zkconsumer.member.streams import KafkaStream
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.store import OffsetStoreError

log = get_logger(__name__)

PartitionCallback = Callable[[Mapping[TopicPartition, str]], None]


class RebalanceFailedError(ZkConsumerError):
    """Partitions stayed owned by others (or their offsets unreadable) through every attempt."""


class RebalanceCallbackError(ZkConsumerError):
    """The user's on_partitions_revoked / on_partitions_assigned raised."""


@dataclass
class RebalanceCallbacks:
    before_release: PartitionCallback | None = None
    after_assign: PartitionCallback | None = None


def call_back(name: str, callback: PartitionCallback | None,
              partitions: Mapping[TopicPartition, str]) -> None:
    """The user's callback, its failure named as such."""
    if callback is None:
        return
    try:
        callback(dict(partitions))
    except Exception as exc:
        raise RebalanceCallbackError(
            f"the {name} callback raised {type(exc).__name__}: {exc}") from exc


class Rebalancer:
    def __init__(self, *, consumer_id: str, strategy: str, exclude_internal_topics: bool,
                 max_attempts: int, backoff_ms: int, crashed_owner_grace_ms: int, membership,
                 fetch_loop, committer, offset_store, stream_for: Callable[[TopicPartition, str], KafkaStream],
                 auto_commit: bool, callbacks: RebalanceCallbacks, member: MemberState,
                 sleep: Callable[[float], None] = time.sleep,
                 missing_topics_notice: MissingTopicsNotice | None = None,
                 observe: Callable[[bool, float], None] = lambda _succeeded, _seconds: None
                 ) -> None:
        """`observe(succeeded, seconds)` is told how each rebalance ended and how long it took
        (the metrics). A member that is leaving (`member.leaving`) ends a rebalance between two
        attempts: waiting for others' owners would only delay that."""
        self.consumer_id = consumer_id
        self.member = member
        self._strategy = strategy
        self._exclude_internal = exclude_internal_topics
        self._max_attempts = max_attempts
        self._backoff_s = backoff_ms / 1000.0
        self._crashed_owner_grace_s = crashed_owner_grace_ms / 1000.0
        self._membership = membership
        self._fetch_loop = fetch_loop
        self._committer = committer
        self._release_sequence = Release(member, fetch_loop)
        self._offsets = offset_store
        self._stream_for = stream_for
        self._auto_commit = auto_commit
        self._callbacks = callbacks
        self._sleep = sleep
        self._missing_topics = missing_topics_notice or MissingTopicsNotice(consumer_id)
        self._observe = observe

    def rebalance(self) -> None:
        started = time.monotonic()
        try:
            completed = self._rebalance(started)
        except BaseException:
            self._observe(False, time.monotonic() - started)
            raise
        self._observe(completed, time.monotonic() - started)

    def _rebalance(self, started: float) -> bool:
        """True once done; False when the member began to leave first, or its session changed
        (its state then has it register again before the next rebalance)."""
        contested: list[TopicPartition] = []
        store_error: OffsetStoreError | None = None
        owners = OwnerWait(self._crashed_owner_grace_s)
        told: list[TopicPartition] = []
        attempt = 0
        while True:
            attempt += 1
            snapshot = self._membership.snapshot(self._exclude_internal)
            self._membership.watch_topics(snapshot.subscribed_topics(self._exclude_internal))
            self._release_unfinished()
            target = target_for_member(snapshot, self.consumer_id, self._strategy,
                                       self._exclude_internal)
            plan = plan_rebalance(self.member.held(), target)
            if plan.release:
                self._release(plan.release)
            try:
                contested = self._claim(plan.claim) if plan.claim else []
                store_error = None
            except OffsetStoreError as exc:
                # Claims were released again, so no peer waits on us meanwhile.
                contested, store_error = sorted(plan.claim), exc
            except StaleClaimError as exc:
                # The member's state has it register again (or stop) before it claims.
                log.info("claims refused; rebalance ended", attempt=attempt, reason=str(exc))
                return False
            if not contested:
                log.info("rebalanced", attempt=attempt, owned=len(plan.keep) + len(plan.claim),
                         released=len(plan.release), claimed=len(plan.claim),
                         members=len(snapshot.members),
                         ms=round((time.monotonic() - started) * 1000))
                self._missing_topics.update(missing_topics(snapshot, self.consumer_id))
                return True
            now = time.monotonic()
            if store_error is None:
                owners.observe(self._membership.owners_seen(contested), now)
            if self.member.leaving:
                return False
            if attempt >= self._max_attempts and (
                    owners.may_give_up(now) if store_error is None
                    else now - started >= self._crashed_owner_grace_s):
                break
            if store_error is not None:
                log.warning("committed offsets unreadable; claims released, retrying",
                            attempt=attempt, error=describe_error(store_error),
                            retry_in_ms=round(self._backoff_s * 1000))
                self._sleep(self._backoff_s)
                continue
            if contested != told:  # said once per set of contested partitions, not per attempt
                told = contested
                log.info("partitions still owned by others; waiting for their release",
                         attempt=attempt, contested=[str(tp) for tp in contested[:5]])
            self._membership.wait_for_owners_gone(contested, self._backoff_s)
        self.release_all()
        if store_error is not None:
            raise RebalanceFailedError(
                f"consumer {self.consumer_id} could not read the committed offsets of its "
                f"partitions in {attempt} rebalance attempts ({store_error}); it released "
                "everything and stopped") from store_error
        raise RebalanceFailedError(
            f"consumer {self.consumer_id} could not claim its partitions after "
            f"{attempt} rebalance attempts (still owned by others: "
            f"{', '.join(str(tp) for tp in contested[:5])}, each by a session that stayed alive "
            f"for {self._crashed_owner_grace_s:g}s without letting go); it released everything "
            "and stopped"
        )

    def _release_unfinished(self) -> None:
        """Partitions whose claim or release did not finish (ZooKeeper failed in between):
        their owner znodes may still block the group, and counting them as kept would leave
        them unfetched, so they are released again and then planned anew."""
        unfinished = self.member.unfinished()
        if unfinished:
            self._release(unfinished, commit=False, notify=False)

    def release_all(self, commit: bool = True, notify: bool = True) -> None:
        """`notify=False` skips the user's callback: a member leaving because it failed (maybe
        in that very callback) must release what it owns whatever the callback does. A member
        releasing everything is leaving (or failing), so it no longer waits for any topic."""
        self._missing_topics.update(())
        held = self.member.held()
        if held:
            self._release(held, commit=commit, notify=notify)

    def forget_lost_session(self) -> None:
        """A lost session's owner znodes went with it and may be others' by now: they are
        forgotten, not released, and their fetching and positions with them. The session's
        end dropped their claims already."""
        self._release_sequence.forget()

    def _release(self, partitions: Mapping[TopicPartition, str], commit: bool = True,
                 notify: bool = True) -> None:
        """The user's callback while the partitions are still delivered from (it may commit
        them), then the release sequence, the owner znodes deleted as its giving back."""
        if notify:
            call_back("on_partitions_revoked", self._callbacks.before_release, partitions)
        self._release_sequence.release(
            partitions, lambda released: self._last_commit(released, commit),
            self._membership.release)

    def _last_commit(self, partitions: set[TopicPartition], commit: bool) -> None:
        try:
            self._committer.commit_releasing(partitions, commit=commit and self._auto_commit)
        except (ZkConsumerError, KazooException) as exc:
            # Releasing anyway costs re-delivery from the last commit; holding on would stall
            # the whole group for as long as the store is away.
            log.warning("offsets of released partitions not committed; their next owner "
                        "resumes from the last commit", error=describe_error(exc),
                        partitions=len(partitions))

    def _claim(self, partitions: Mapping[TopicPartition, str]) -> list[TopicPartition]:
        """The claims recorded, then the owner znodes, then the committed offsets, then the
        claims delivered from; StaleClaimError (with the znodes released again) if the member's
        session ended meanwhile. The session is taken before the znodes are made: only the
        worker (this thread) adopts a new one, so it cannot change to another until the claims
        are accepted or refused. Should ZooKeeper fail while the znodes are made, the claims
        stay recorded (the transaction may have been applied) and the next attempt releases
        them."""
        session = self.member.begin_claims(partitions, self._stream_for)
        contested = self._membership.claim(partitions)
        if contested:
            self.member.drop(partitions)  # one transaction, not applied
            return contested
        try:
            # Read after claiming: the previous owner commits before it lets go, so this is
            # never older than its last commit (the reference reads before claiming).
            committed = self._offsets.fetch(partitions)
            self.member.claims_made(session, partitions, committed)
        except BaseException:
            self._membership.release(partitions)
            self.member.drop(partitions)
            raise
        self._fetch_loop.routing_changed()
        call_back("on_partitions_assigned", self._callbacks.after_assign, partitions)
        return []

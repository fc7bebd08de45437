"""OffsetCommitter: Kafka offsets refreshed at every commit, resets committed, nothing written
while the session is untrusted, and no bookkeeping waits on a slow store."""

from __future__ import annotations

import threading

from support.member_state import SESSION, claim, holding
from support.memory_store import MemoryStore
from support.record_columns import fetched

from zkconsumer.member.committer import OffsetCommitter
from zkconsumer.member.state import Event
from zkconsumer.member.streams import Chunk, KafkaStream
from zkconsumer.model import Message, TopicPartition
from zkconsumer.offsets.store import OwnerCheck

A = TopicPartition("t", 0)
B = TopicPartition("t", 1)


class Member:
    """What a committer sees of a member: claims, streams, a store."""

    def __init__(self, store=None) -> None:
        self.store = store or MemoryStore()
        self.state = holding({A: "c-0", B: "c-0"}, {A: 10, B: 20})
        self.claims = self.state.claims
        self.stream = KafkaStream("s", 10, -1, self.claims, self.state.gate)
        self.committer = OffsetCommitter(self.store, lambda: [self.stream], self.state)


def test_unchanged_offsets_are_refreshed_at_every_commit():
    member = Member()
    member.claims[A].consumed.value = 15
    assert member.committer.commit() == {A: 15}
    assert member.store.refreshes[-1] == {B: 20}
    assert member.committer.commit() == {}
    assert member.store.refreshes[-1] == {A: 15, B: 20}, "idle partitions must be re-committed"


def test_where_a_reset_put_a_partition_is_committed_though_nothing_was_delivered():
    member = Member()
    new = TopicPartition("t", 2)
    claim(member.state, {new: "c-0"})
    member.state.reset_to(member.claims[new], 100)
    assert member.committer.commit() == {new: 100}
    assert member.store.offsets[new] == 100


def test_nothing_is_written_while_the_session_cannot_be_trusted():
    member = Member()
    member.state.handle(Event.LEASE_LOST)  # the connection suspended: the session untrusted
    member.claims[A].consumed.value = 15
    assert member.committer.commit() == {}
    assert member.store.commits == []
    member.state.handle(Event.TERM_RESUMED, SESSION)
    assert member.committer.commit() == {A: 15}


def test_a_released_partitions_position_goes_with_its_record():
    member = Member()
    member.claims[B].consumed.value = 25
    member.state.withdraw([B])
    member.state.drop([B])
    claim(member.state, {B: "c-0"}, {B: 20})
    assert member.committer.commit() == {}, "the released claim's position taken in anew"
    assert member.store.offsets == {}


def test_an_explicit_commit_counts_the_message_in_hand_and_an_auto_commit_does_not():
    member = Member()
    member.stream.offer(_chunk(member, A, 10, 3), lambda: True)
    assert next(member.stream).offset == 10
    assert member.committer.commit() == {}, "auto commit ran while offset 10 was being handled"
    assert member.committer.commit(in_hand=True) == {A: 11}


class BlockingStore(MemoryStore):
    """A store whose commits wait until released, as one does while Kafka is away."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()
        self.retry_flags: list[bool] = []

    def commit(self, offsets, *, refresh=None, retry=True, owners=None) -> None:
        self.retry_flags.append(retry)
        self.entered.set()
        assert self.release.wait(10)
        super().commit(offsets, refresh=refresh, retry=retry, owners=owners)


def commit_in_flight() -> tuple[Member, BlockingStore, threading.Thread]:
    """A member whose auto commit of t-0 is stuck in the store until `store.release` is set."""
    store = BlockingStore()
    member = Member(store)
    member.claims[A].consumed.value = 15
    auto = threading.Thread(target=member.committer.commit)
    auto.start()
    assert store.entered.wait(10)
    return member, store, auto


def test_a_slow_commit_blocks_no_bookkeeping_and_release_commits_make_one_attempt():
    member, store, auto = commit_in_flight()
    done = threading.Event()

    def bookkeeping():
        member.state.withdraw([B])
        member.state.drop([B])
        claim(member.state, {B: "c-0"}, {B: 30})
        member.state.reset_to(member.claims[A], 12)
        done.set()

    threading.Thread(target=bookkeeping).start()
    assert done.wait(5), "bookkeeping waited for the store"
    store.release.set()
    auto.join(10)
    member.claims[A].consumed.value = 16
    member.state.withdraw([A])
    member.committer.commit_releasing({A})
    assert store.retry_flags == [True, False]
    assert store.offsets[A] == 16


def _chunk(member: Member, tp: TopicPartition, first: int, count: int) -> Chunk:
    return Chunk(tp, fetched([Message(tp.topic, tp.partition, o, None, b"", None)
                              for o in range(first, first + count)]), member.claims[tp])


def test_partitions_claimed_in_an_earlier_session_are_committed_to_no_store():
    member = Member()
    member.committer._owner_checks = lambda tps: {
        tp: OwnerCheck(f"/owners/{tp}", 1, 7) for tp in tps if tp == A}
    member.claims[A].consumed.value = 15
    assert member.committer.commit() == {A: 15}
    assert member.store.refreshes == [{}], "B's unchanged offset was refreshed"
    member.claims[B].consumed.value = 25
    assert member.committer.commit() == {}
    assert all(B not in written for written in member.store.commits + member.store.refreshes), \
        "B's new position was committed"


def test_a_release_without_commit_still_waits_for_the_write_in_flight():
    member, store, auto = commit_in_flight()
    released = threading.Event()

    def release():
        member.committer.commit_releasing({A}, commit=False)
        released.set()

    threading.Thread(target=release).start()
    assert not released.wait(0.2), "the release went ahead of a write still in flight"
    store.release.set()
    assert released.wait(10)
    auto.join(10)


def test_a_commit_never_names_a_partition_whose_token_has_passed():
    """A's claim was made in the session that expired, B's in the new one: only B's position
    is committed, under the new session's token, though the stream still has A's."""
    member = Member()
    asked: list[dict] = []

    def owner_checks(tokens):
        asked.append(dict(tokens))
        return {tp: OwnerCheck(f"/owners/{tp}", 1, token) for tp, token in tokens.items()}

    member.committer._owner_checks = owner_checks
    member.claims[A].consumed.value = 15
    member.state.term_event(Event.TERM_ENDED, None)
    assert member.committer.commit() == {}
    member.state.term_event(Event.ASSIGNED, SESSION + 1)
    assert member.state.rejoined(SESSION + 1)
    claim(member.state, {B: "c-0"}, {B: 20})
    member.claims[B].consumed.value = 25
    assert member.committer.commit() == {B: 25}
    assert asked == [{B: SESSION + 1}]
    assert all(A not in written for written in member.store.commits + member.store.refreshes)

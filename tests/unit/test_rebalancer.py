"""Rebalancer with injected failures: a raising callback, an offset store that is down while
partitions are claimed or released, a session that expires or a member that closes while it
claims. ZooKeeper is a dict here; the real one is in the integration tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kazoo.exceptions import ConnectionLoss
from support.log_capture import captured_logs as capture_logs
from support.memory_store import MemoryStore

from zkconsumer.member.committer import OffsetCommitter
from zkconsumer.member.missing_topics import MissingTopicsNotice
from zkconsumer.member.owner_wait import OwnersSeen
from zkconsumer.member.plan import GroupSnapshot
from zkconsumer.member.rebalancer import (
    RebalanceCallbackError,
    RebalanceCallbacks,
    RebalanceFailedError,
    Rebalancer,
)
from zkconsumer.member.state import Event, MemberState, State, Work
from zkconsumer.member.streams import KafkaStream
from zkconsumer.model import TopicPartition
from zkconsumer.znodes.consumers import ConsumerRegistration

ME = "g_me"
SESSION = 0x1000
NEW_TERM = 0x3000
OTHER_SESSION = 0x2000
A = TopicPartition("t", 0)
B = TopicPartition("t", 1)


class DictMembership:
    """One member (us) subscribed to t with two partitions; owner znodes in a dict."""

    def __init__(self) -> None:
        self.members = {ME: ConsumerRegistration.static({"t": 1}, 0)}
        self.topics = {"t": [0, 1]}
        self.owners: dict[TopicPartition, str] = {}
        self.fail_next_release = False
        self.lose_next_claim_answer = False

    def snapshot(self, _exclude_internal):
        return GroupSnapshot(dict(self.members), sorted(self.topics), dict(self.topics))

    def watch_topics(self, _topics) -> None:
        pass

    def claim(self, partitions):
        contested = [tp for tp in partitions if tp in self.owners]
        if not contested:
            self.owners.update(partitions)
        if self.lose_next_claim_answer:
            self.lose_next_claim_answer = False
            raise ConnectionLoss()  # the transaction was applied; its answer is lost
        return contested

    def release(self, partitions) -> None:
        if self.fail_next_release:
            self.fail_next_release = False
            raise ConnectionLoss()
        for tp, thread in partitions.items():
            if self.owners.get(tp) == thread:
                del self.owners[tp]

    def wait_for_owners_gone(self, _partitions, _timeout_s) -> bool:
        return False

    def owners_seen(self, partitions) -> OwnersSeen:
        """The owners by OTHER_SESSION; the members' sessions stand for them by id."""
        return OwnersSeen({tp: OTHER_SESSION for tp in partitions if tp in self.owners}, 0,
                          frozenset(hash(member) for member in self.members), len(self.members))


class NullFetchLoop:
    """What a fetch loop would fetch, as of the last change of routing it was told of."""

    def __init__(self, member: MemberState) -> None:
        self.member = member
        self.routed: dict = {}

    def routing_changed(self) -> None:
        self.routed = self.member.fetching()


def rebalancer(store: MemoryStore, membership: DictMembership | None = None,
               missing_topics_notice: MissingTopicsNotice | None = None,
               observe=lambda _succeeded, _seconds: None, **callbacks) -> Rebalancer:
    member = MemberState(SESSION)
    stream = KafkaStream("s", 10, -1, member.claims, member.gate)
    committer = OffsetCommitter(store, lambda: [stream], member)
    return Rebalancer(
        consumer_id=ME, strategy="range", exclude_internal_topics=True, max_attempts=3,
        backoff_ms=1, crashed_owner_grace_ms=0, membership=membership or DictMembership(),
        fetch_loop=NullFetchLoop(member), committer=committer, offset_store=store,
        stream_for=lambda _tp, _thread: stream, auto_commit=True,
        callbacks=RebalanceCallbacks(**callbacks), member=member, sleep=lambda _s: None,
        missing_topics_notice=missing_topics_notice, observe=observe)


def test_a_raising_assigned_callback_is_reported_as_a_callback_failure():
    def refuse(_partitions):
        raise ValueError("no thanks")

    with pytest.raises(RebalanceCallbackError, match="on_partitions_assigned callback raised ValueError"):
        rebalancer(MemoryStore(), after_assign=refuse).rebalance()


def test_leaving_after_a_raising_revoked_callback_releases_everything():
    membership = DictMembership()

    def refuse(_partitions):
        raise ValueError("no thanks")

    member = rebalancer(MemoryStore(), membership, before_release=refuse)
    member.rebalance()
    assert set(membership.owners) == {A, B}
    membership.members["g_other"] = ConsumerRegistration.static({"t": 1}, 0)
    with pytest.raises(RebalanceCallbackError, match="on_partitions_revoked"):
        member.rebalance()
    member.release_all(commit=False, notify=False)
    assert membership.owners == {}


class WatchedMembership(DictMembership):
    """Records what the member says it delivers from at the moment owner znodes change."""

    def __init__(self) -> None:
        super().__init__()
        self.member: MemberState | None = None
        self.seen: list[tuple[str, dict, dict]] = []

    def claim(self, partitions):
        self.seen.append(("claim", dict(partitions), self.member.owned()))
        return super().claim(partitions)

    def release(self, partitions) -> None:
        self.seen.append(("release", dict(partitions), self.member.owned()))
        super().release(partitions)


def test_a_partition_is_listed_as_owned_only_while_its_owner_znode_is_ours():
    """Released: gone from the list before its znode is deleted; claimed: listed only once the
    znode is made. Another member can then never list it at the same time."""
    membership = WatchedMembership()
    member = rebalancer(MemoryStore(), membership)
    membership.member = member.member
    member.rebalance()
    assert member.member.owned() == {A: ME + "-0", B: ME + "-0"}
    membership.members["g_other"] = ConsumerRegistration.static({"t": 1}, 0)
    member.rebalance()
    assert member.member.owned() == {A: ME + "-0"}
    (_, claimed, before_claim), (_, released, before_release) = membership.seen
    assert set(claimed) == {A, B} and before_claim == {}
    assert set(released) == {B} and B not in before_release and A in before_release


class FlakyStore(MemoryStore):
    """Reads fail `failures` times, then work."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def fetch(self, partitions):
        self.fail_fetch = self.failures > 0
        self.failures -= 1
        return super().fetch(partitions)


def test_unreadable_offsets_release_the_claims_and_the_rebalance_is_retried():
    membership = DictMembership()
    member = rebalancer(FlakyStore(failures=2), membership)
    member.rebalance()
    assert set(member.member.held()) == {A, B}
    assert set(membership.owners) == {A, B}


def test_offsets_unreadable_through_every_attempt_fail_the_rebalance_owning_nothing():
    membership = DictMembership()
    member = rebalancer(MemoryStore(fail_fetch=True), membership)
    with pytest.raises(RebalanceFailedError, match="could not read the committed offsets"):
        member.rebalance()
    assert membership.owners == {}
    assert member.member.held() == {}


def test_a_release_whose_commit_fails_still_releases():
    membership = DictMembership()
    store = MemoryStore(offsets={A: 3, B: 3})  # so the release has offsets to commit
    member = rebalancer(store, membership)
    member.rebalance()
    store.fail_commit = True
    membership.members["g_other"] = ConsumerRegistration.static({"t": 1}, 0)
    member.rebalance()  # range: t-0 stays ours, t-1 goes to g_other
    assert store.journal[-1] == "memory", "the release did try to commit"
    assert membership.owners == {A: "g_me-0"}
    assert set(member.member.held()) == {A}


def test_owner_znodes_of_a_claim_whose_answer_was_lost_are_released_by_the_next_rebalance():
    membership = DictMembership()
    member = rebalancer(MemoryStore(), membership)
    membership.lose_next_claim_answer = True
    with pytest.raises(ConnectionLoss):
        member.rebalance()
    assert member.member.unfinished() == {A: "g_me-0", B: "g_me-0"}
    assert member.member.owned() == {} and member._fetch_loop.routed == {}
    membership.members["g_other"] = ConsumerRegistration.static({"t": 1}, 0)
    member.rebalance()  # range: t-1 is g_other's now, and our znode must not block it
    assert membership.owners == {A: "g_me-0"}
    assert member.member.held() == {A: "g_me-0"} == member.member.owned()
    assert set(member._fetch_loop.routed) == {A}


def test_a_release_cut_short_by_zookeeper_is_finished_by_the_next_rebalance():
    membership = DictMembership()
    member = rebalancer(MemoryStore(), membership)
    member.rebalance()
    membership.members["g_other"] = ConsumerRegistration.static({"t": 1}, 0)
    membership.fail_next_release = True
    with pytest.raises(ConnectionLoss):
        member.rebalance()  # t-1's claim is withdrawn, its owner znode still ours
    del membership.members["g_other"]
    member.rebalance()  # t-1 comes back to us: claimed and routed again, not "kept"
    assert set(member.member.claims) == {A, B}
    assert set(member._fetch_loop.routed) == {A, B}
    assert membership.owners == {A: "g_me-0", B: "g_me-0"}


WAITING = "waiting for subscribed topics to be created"


def _waiting_lines(logs: list[dict]) -> list[dict]:
    return [entry for entry in logs if entry["event"] == WAITING]


def test_a_member_whose_topic_does_not_exist_says_once_that_it_waits_for_it():
    membership = DictMembership()
    membership.members[ME] = ConsumerRegistration.static({"t": 1, "later": 1}, 0)
    member = rebalancer(MemoryStore(), membership)
    with capture_logs() as logs:
        member.rebalance()
        membership.members["g_other"] = ConsumerRegistration.static({"t": 1}, 0)
        member.rebalance()  # another rebalance, the same topic still missing: no repeat
    member.release_all()
    assert [(e["log_level"], e["topics"]) for e in _waiting_lines(logs)] == \
        [("warning", ["later"])]


class ManualTimers:
    """A `Schedule` whose timers fire only when the test says: reminders without sleeping."""

    def __init__(self) -> None:
        self.pending: list[tuple[float, Callable[[], None]]] = []

    def __call__(self, delay_s: float, action: Callable[[], None]) -> Callable[[], None]:
        entry = (delay_s, action)
        self.pending.append(entry)
        return lambda: self.pending.remove(entry) if entry in self.pending else None

    def fire(self) -> None:
        """Every timer now due, as if its delay had passed."""
        due, self.pending = self.pending, []
        for _delay, action in due:
            action()


def test_the_wait_is_recalled_at_the_slow_interval_until_the_topic_exists():
    membership = DictMembership()
    membership.members[ME] = ConsumerRegistration.static({"t": 1, "later": 1}, 0)
    timers = ManualTimers()
    member = rebalancer(MemoryStore(), membership,
                        missing_topics_notice=MissingTopicsNotice(ME, 60.0, timers))
    with capture_logs() as logs:
        member.rebalance()
        assert [delay for delay, _ in timers.pending] == [60.0]
        timers.fire()
        timers.fire()
        assert len(_waiting_lines(logs)) == 3
        membership.topics["later"] = [0]  # created: its watch rebalances the member
        member.rebalance()
        assert timers.pending == []
    assert len(_waiting_lines(logs)) == 3
    member.release_all()


def test_a_reminder_that_fires_as_it_is_cancelled_says_nothing():
    """A timer thread can start its action just as the wait ends: the late reminder is dropped."""
    late: list[Callable[[], None]] = []

    def too_late_to_cancel(_delay_s: float, action: Callable[[], None]) -> Callable[[], None]:
        late.append(action)
        return lambda: None

    notice = MissingTopicsNotice(ME, 60.0, too_late_to_cancel)
    with capture_logs() as logs:
        notice.update(["later"])
        notice.update([])
        late[0]()
    assert len(_waiting_lines(logs)) == 1


def test_a_member_that_leaves_stops_recalling_the_wait():
    membership = DictMembership()
    membership.members[ME] = ConsumerRegistration.static({"later": 1}, 0)
    timers = ManualTimers()
    member = rebalancer(MemoryStore(), membership,
                        missing_topics_notice=MissingTopicsNotice(ME, 60.0, timers))
    with capture_logs() as logs:
        member.rebalance()
        member.release_all()
        assert timers.pending == []
    assert len(_waiting_lines(logs)) == 1


class StoreWithAnEvent(MemoryStore):
    """Reading the claimed partitions' offsets is when `event()` happens (once): between a
    claim's owner znodes and its claims, where kazoo's thread may report an expiry."""

    def __init__(self) -> None:
        super().__init__()
        self.event = lambda: None

    def fetch(self, partitions):
        event, self.event = self.event, lambda: None
        event()
        return super().fetch(partitions)


def test_a_session_that_expires_while_claiming_leaves_no_claims_and_the_member_claims_anew():
    membership = DictMembership()
    store = StoreWithAnEvent()
    outcomes: list[bool] = []
    member = rebalancer(store, membership, observe=lambda ok, _s: outcomes.append(ok))
    state = member.member
    state.handle(Event.STARTED)
    assert state.next_work(timeout=0) is Work.REBALANCE
    store.event = lambda: state.term_event(Event.TERM_ENDED, None)
    member.rebalance()
    assert outcomes == [False]
    assert state.owned() == {} and member.member.held() == {}
    assert member._fetch_loop.routed == {}, "routed with a claim of a lost session"
    assert membership.owners == {}, "the refused claim's owner znodes were kept"
    assert not state.delivering
    state.term_event(Event.ASSIGNED, NEW_TERM)
    assert not state.delivering
    assert state.next_work(timeout=0) is Work.REJOIN
    member.forget_lost_session()
    assert state.rejoined(NEW_TERM) and state.delivering
    assert state.next_work(timeout=0) is Work.REBALANCE
    member.rebalance()
    assert state.handle(Event.REBALANCE_DONE) is State.STABLE
    assert {tp: claim.token for tp, claim in state.claims.items()} == \
        {A: NEW_TERM, B: NEW_TERM}
    assert set(member._fetch_loop.routed) == {A, B}
    assert set(membership.owners) == {A, B}


def test_a_member_closed_while_claiming_releases_what_it_claimed():
    membership = DictMembership()
    store = StoreWithAnEvent()
    member = rebalancer(store, membership)
    member.member.handle(Event.STARTED)
    store.event = lambda: member.member.handle(Event.CLOSE_REQUESTED)
    member.rebalance()
    assert membership.owners == {} and member.member.held() == {} and member.member.owned() == {}


def test_a_session_lost_before_the_claim_makes_no_owner_znodes():
    membership = DictMembership()
    member = rebalancer(MemoryStore(), membership)
    member.member.term_event(Event.TERM_ENDED, None)
    member.rebalance()
    assert membership.owners == {} and member.member.held() == {}


def test_a_live_owner_is_given_a_whole_window_again_after_each_change_of_the_group():
    """A peer holds what moves away from it until its own rebalance, which each change of the
    group begins anew: the member gives up on it only a whole window after the last change."""
    import time

    class ChangingGroup(DictMembership):
        def __init__(self, changes: int) -> None:
            super().__init__()
            self.owners = {A: "g_peer-0", B: "g_peer-0"}  # held by a live session throughout
            self.changes = changes
            self.last_change = 0.0

        def snapshot(self, exclude_internal):
            if self.changes:
                self.changes -= 1
                self.members[f"g_z{self.changes:03d}"] = ConsumerRegistration.static({"t": 1}, 0)
                self.last_change = time.monotonic()
            return super().snapshot(exclude_internal)

    membership = ChangingGroup(changes=40)
    member = rebalancer(MemoryStore(), membership)
    member._crashed_owner_grace_s = 0.3
    with pytest.raises(RebalanceFailedError, match="stayed alive"):
        member.rebalance()
    assert membership.changes == 0, "no giving up while the group kept changing"
    assert time.monotonic() - membership.last_change >= 0.3

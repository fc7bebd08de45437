"""The connector driven through its coordination port by a scripted coordination: no ZooKeeper,
no broker. The script begins a term with an assignment and its lease, ends it, lets the lease
lapse on the member's injected clock, and is told how the member leaves; the connector's own
parts (streams, fetch loop, committer, worker, member state) are the real ones."""

from __future__ import annotations

import contextlib
import time

import pytest
from support.memory_store import MemoryStore
from support.waiting import wait_until
from test_connector import FakeFetcher

from zkconsumer.fetch import KafkaAccess
from zkconsumer.member.connector import ConsumerConnector
from zkconsumer.member.coordination import (
    Assigned,
    CommitRoute,
    Fenced,
    Host,
    LeaseLost,
    Revoked,
    Revoking,
    Wording,
    claim_assigned,
    report,
)
from zkconsumer.member.fence_decision import FenceAction, FenceDecision, GroupMoved
from zkconsumer.member.release import Release
from zkconsumer.member.state import StaleClaimError, State
from zkconsumer.member.streams import ConsumerTimeout
from zkconsumer.model import TopicPartition
from zkconsumer.znodes.fence import Fence, FencePhase

TOPIC = "t"
A, B, C = (TopicPartition(TOPIC, n) for n in range(3))
LEASE_S = 60.0
CONFIG = {"zookeeper.connect": "127.0.0.1:9", "group.id": "g", "consumer.id": "me",
          "consumer.timeout.ms": "1000", "auto.commit.interval.ms": "60000"}


class Clock:
    """The member's monotonic clock, moved by the test; it starts at the process's, which the
    streams' hand-out compares the lease with."""

    def __init__(self) -> None:
        self.now = time.monotonic()

    def __call__(self) -> float:
        return self.now


class ScriptedCoordination:
    """A coordination whose group is the test: `assign` begins a term (its partitions and the
    lease they are held under), `revoke` ends it, `lose_lease` takes the lease away without
    ending the term, as a frozen member's lease lapses. Calls from the connector are recorded
    in `calls`."""

    wording = Wording("the script", "scripted", "the term ended", "nothing more to do")
    fence_session = None

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.calls: list[str] = []
        self.final_commits: list[bool] = []  # what the leave's final commit said it did

    @property
    def zookeeper_session(self) -> tuple[int, bytes]:
        raise AssertionError("not asked in these tests")

    # -- the port -------------------------------------------------------------------------

    def bind(self, host: Host) -> None:
        self.host = host
        self.member = host._member

    def first_term(self):
        return None

    def kafka_access(self) -> KafkaAccess:
        return KafkaAccess("b1:9092", None)

    def open(self, opened, registration, wildcard) -> CommitRoute:
        self.calls.append("open")
        return CommitRoute(self.store, dict, ("out of term", "in a term"))

    def join(self, topics, wildcard, stream_for, fenced) -> None:
        self.calls.append("join")
        self.stream_for = stream_for

    def start(self) -> None:
        self.calls.append("start")

    def rebalance(self) -> bool:
        """What the term's `Assigned` carried, claimed the connector's one way."""
        try:
            claimed = claim_assigned(
                self.member, lambda partitions: dict.fromkeys(partitions,
                                                              f"{self.host.consumer_id}-0"),
                lambda threads, _term: self.store.fetch(threads), self.stream_for)
        except StaleClaimError:
            return False
        if claimed is None:
            return False
        self.host._fetch_loop.routing_changed()
        self.calls.append(f"claimed {sorted(map(str, claimed.partitions))}")
        return True

    def renew_term(self) -> None:
        assigned = self.member.assignment
        self.member.rejoined(None if assigned is None else assigned.term)

    def commit_in_callback(self, in_hand: bool) -> bool:
        return False

    def leaving_steps(self, commit, failed, deadline):
        steps = [("the release", self._release_all)]
        if commit:
            steps.insert(0, ("the final commit", self._final_commit))
        return steps

    def _final_commit(self) -> bool:
        done = self.host._final_commit(retry=False)
        self.final_commits.append(done)
        return done

    def fenced(self) -> None:
        self.calls.append("fenced")

    def stop_watching(self) -> None:
        self.calls.append("stop watching")

    def close_clients(self) -> None:
        self.calls.append("close clients")

    def disconnect(self) -> None:
        self.calls.append("disconnect")

    # -- the script -----------------------------------------------------------------------

    def assign(self, term: int, partitions: set[TopicPartition], lease: float) -> None:
        """A term begins with these partitions, held until `lease` on the member's clock."""
        report(self.member, Assigned(term, frozenset(partitions), lease))

    def revoke(self) -> None:
        """The term ends: its assignment is taken back, delivery stops, then the claims go
        (what was fetched is forgotten)."""
        report(self.member, Revoking())
        sequence = Release(self.member, self.host._fetch_loop)
        sequence.stop_delivery(self.member.owned())
        report(self.member, Revoked("the script says so"))
        sequence.forget()

    def lose_lease(self) -> None:
        report(self.member, LeaseLost())

    def _release_all(self) -> None:
        held = self.member.held()
        Release(self.member, self.host._fetch_loop).release(
            held, self.host._committer.commit_releasing, lambda _partitions: None)
        self.calls.append(f"released {sorted(map(str, held))}")


@pytest.fixture
def scripted():
    return ScriptedCoordination(MemoryStore(offsets={A: 5}))


@contextlib.contextmanager
def connector(scripted, clock=None, properties=None, **options):
    fetcher = FakeFetcher()
    member = ConsumerConnector({**CONFIG, **(properties or {})}, open_fetcher=lambda *_: fetcher,
                               coordination=lambda _config: scripted,
                               clock=clock or Clock(), **options)
    try:
        (stream,) = member.create_message_streams({TOPIC: 1})[TOPIC]
        yield member, stream
    finally:
        member.shutdown()


@contextlib.contextmanager
def stable_in_term(scripted, partitions: set[TopicPartition], properties=None):
    """A member the script assigned `partitions` in term 1, stable; with its clock."""
    clock = Clock()
    with connector(scripted, clock, properties) as (member, stream):
        scripted.assign(1, partitions, lease=clock.now + LEASE_S)
        assert member.wait_until_stable(timeout=10)
        yield member, stream, clock


def take(stream, count: int) -> list[tuple[TopicPartition, int]]:
    taken = []
    for message in stream:
        taken.append((TopicPartition(message.topic, message.partition), message.offset))
        if len(taken) == count:
            return taken
    raise AssertionError(f"the stream ended after {len(taken)} messages")


def test_an_assignment_is_claimed_in_its_term_and_delivered_from_the_committed_offsets(
        scripted):
    clock = Clock()
    with connector(scripted, clock) as (member, stream):
        assert scripted.calls == ["open", "join", "start"]
        assert member.state is State.REBALANCING, "no term yet: nothing to claim"
        scripted.assign(1, {A, B}, lease=clock.now + LEASE_S)
        assert member.wait_until_stable(timeout=10)
        assert member.owned_partitions() == {A: "g_me-0", B: "g_me-0"}
        taken = take(stream, 180)
        assert min(offset for tp, offset in taken if tp == A) == 5, "from A's committed offset"
        assert min(offset for tp, offset in taken if tp == B) == 0, "B has none: reset"
        assert member.commit_offsets()[A] > 5


def test_the_term_ending_stops_delivery_and_drops_the_claims_before_the_next_one(scripted):
    with stable_in_term(scripted, {A, B}) as (member, stream, clock):
        take(stream, 1)
        scripted.revoke()
        assert member.owned_partitions() == {}
        assert member.state is State.TERM_ENDED
        assert not member._member.delivering
        assert member.commit_offsets() == {}, "nothing committed out of its term"
        scripted.assign(2, {C}, lease=clock.now + LEASE_S)
        assert member.wait_until_stable(timeout=10)
        assert member.owned_partitions() == {C: "g_me-0"}
        assert {tp for tp, _ in take(stream, 50)} == {C}, "only what the new term assigned"


def test_a_lapsed_lease_stops_commits_on_the_clock_and_a_renewal_resumes_them(scripted):
    with stable_in_term(scripted, {A}) as (member, stream, clock):
        take(stream, 3)
        clock.now += LEASE_S + 1  # past the lease: the term may have ended on the coordinator's side
        assert member.commit_offsets() == {}
        assert scripted.store.offsets == {A: 5}, "nothing written without a lease"
        member._member.gate.lease(clock.now + LEASE_S)  # an answer renewed it
        assert member.commit_offsets() == {A: 8}


def test_a_lapsed_lease_refuses_the_final_commit_and_it_says_so(scripted):
    with stable_in_term(scripted, {A}, {"auto.commit.enable": "true"}) as (member, stream, clock):
        take(stream, 2)
        clock.now += LEASE_S + 1  # frozen past the lease: the term is open on the member's side
        assert member._member.delivering
    assert scripted.final_commits == [False], "nothing was written: not done"
    assert scripted.store.offsets == {A: 5}, "nothing written without a lease"


def test_a_lost_lease_stops_the_hand_out_at_once(scripted):
    with stable_in_term(scripted, {A}) as (member, stream, clock):
        take(stream, 1)
        scripted.lose_lease()
        with pytest.raises(ConsumerTimeout):
            take(stream, 1)


def test_leaving_runs_the_coordinations_steps_after_the_shared_ones(scripted):
    with stable_in_term(scripted, {A}, {"auto.commit.enable": "true"}) as (member, stream, clock):
        take(stream, 2)
    assert scripted.calls[-4:] == ["stop watching", "released ['t-0']", "close clients",
                                   "disconnect"]
    assert scripted.store.offsets == {A: 6}, "the final commit: what the stream finished"
    assert member.state is State.CLOSED


def test_a_fenced_member_tells_its_coordination_and_ends_its_streams(scripted):
    with stable_in_term(scripted, {A}) as (member, stream, clock):
        member._fenced(Fenced(_moved()))
        assert "fenced" in scripted.calls
        wait_until(lambda: stream_ended(stream), timeout=10, interval=0.01,
                   message="the stream to end")


def stream_ended(stream) -> bool:
    try:
        for _message in stream:
            pass
    except ConsumerTimeout:
        return False
    return True


def _moved() -> GroupMoved:
    return GroupMoved("g", Fence("kafka", FencePhase.DRAINING, 1),
                      FenceDecision(FenceAction.DRAIN_AND_EXIT, None),
                      KafkaAccess("b1:9092", None))

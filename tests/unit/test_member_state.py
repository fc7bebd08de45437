"""The member's state: named states, one transition table, coalesced work, and the invariants
`MemberState` states, each driven here step by step on one thread, with no sleeps."""

from __future__ import annotations

import contextlib
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.errors import ZkConsumerError
from zkconsumer.member.claims import Phase
from zkconsumer.member.state import (
    Event,
    MemberState,
    MemberStateError,
    StaleClaimError,
    State,
    Work,
)
from zkconsumer.model import TopicPartition

S1 = 0x101
S2 = 0x202
A = TopicPartition("t", 0)
B = TopicPartition("t", 1)
C = TopicPartition("t", 2)


def started(session: int = S1) -> MemberState:
    member = MemberState(session)
    member.handle(Event.STARTED)
    return member


def stable(session: int = S1) -> MemberState:
    member = started(session)
    assert member.next_work(timeout=0) is Work.REBALANCE
    claim(member, {A: "c-0", B: "c-0"})
    assert member.handle(Event.REBALANCE_DONE) is State.STABLE
    return member


def claim(member: MemberState, partitions: dict[TopicPartition, str]) -> dict:
    """What a rebalance's claim does, as far as the state sees it."""
    return member.claims_made(member.begin_claims(partitions), list(partitions))


def tokens(entries: dict) -> dict:
    """The tokens commits of these entries are made under."""
    return {tp: entry.token for tp, entry in entries.items()}


def reregister(member: MemberState, session: int) -> None:
    """What the worker does in a new session, as far as the state sees it."""
    assert member.next_work(timeout=0) is Work.REJOIN
    assert member.rejoined(session)


# -- lifecycle and work -----------------------------------------------------------------------

def test_start_asks_for_one_rebalance():
    member = started()
    assert member.state is State.REBALANCING
    assert member.next_work(timeout=0) is Work.REBALANCE
    assert member.next_work(timeout=0) is None


def test_a_burst_of_changes_becomes_one_rebalance():
    member = stable()
    for _ in range(5):
        member.handle(Event.GROUP_CHANGED)
    assert member.next_work(timeout=0) is Work.REBALANCE
    assert member.next_work(timeout=0) is None


def test_a_change_during_a_rebalance_runs_another_before_stable():
    member = started()
    member.next_work(timeout=0)
    member.handle(Event.GROUP_CHANGED)
    assert member.handle(Event.REBALANCE_DONE) is State.REBALANCING
    assert member.next_work(timeout=0) is Work.REBALANCE
    assert member.handle(Event.REBALANCE_DONE) is State.STABLE


def test_events_that_arrive_where_they_have_nothing_to_do_change_nothing():
    member = MemberState(S1)
    assert member.handle(Event.GROUP_CHANGED) is State.NEW, "a watch firing before the start"
    assert member.next_work(timeout=0) is None
    member = stable()
    member.term_event(Event.TERM_ENDED, None)
    assert member.handle(Event.GROUP_CHANGED) is State.TERM_ENDED
    assert member.handle(Event.REBALANCE_DONE) is State.TERM_ENDED
    assert member.next_work(timeout=0) is None


@pytest.mark.parametrize(("state", "event"), [
    (State.NEW, Event.REBALANCE_DONE),
    (State.STABLE, Event.STARTED),
    (State.STABLE, Event.REBALANCE_DONE),
    (State.STABLE, Event.REJOINED),
    (State.CLOSED, Event.CLOSE_REQUESTED),
])
def test_an_event_the_table_does_not_list_is_a_defect_that_raises_and_changes_nothing(
        state, event):
    member = _in_state(state)
    owned, delivering = member.owned(), member.delivering
    with pytest.raises(MemberStateError, match=f"{event.value} in state {state.value}"):
        member.handle(event, S1)
    assert (member.state, member.owned(), member.delivering) == (state, owned, delivering)


def test_the_table_lists_every_event_each_state_is_sent_and_no_other():
    """What the threads send where (see each sender); a pair added to or dropped from the
    table must change this list too."""
    defects = set()
    for state in State:
        for event in Event:
            member = _in_state(state)
            try:
                member.handle(event, S1)
            except MemberStateError:
                defects.add((state, event))
    # CONNECTED is only ever reported through `term_event`, which names it anew.
    assert defects == {(state, Event.ASSIGNED) for state in State} | {
        (State.NEW, Event.REBALANCE_DONE), (State.NEW, Event.REJOINED),
        (State.STABLE, Event.STARTED), (State.STABLE, Event.REBALANCE_DONE),
        (State.STABLE, Event.REJOINED),
        (State.FAILED, Event.STARTED), (State.CLOSED, Event.STARTED),
        (State.FAILED, Event.FAILED), (State.CLOSED, Event.CLOSE_REQUESTED),
        (State.TERM_ENDED, Event.TERM_ENDING),
    }


def _in_state(state: State) -> MemberState:
    """A member brought to `state` the way the threads bring it there."""
    if state is State.NEW:
        return MemberState(S1)
    if state is State.REBALANCING:
        return started()
    member = stable()
    if state is State.TERM_ENDED:
        member.term_event(Event.TERM_ENDED, None)
    elif state is State.FAILED:
        member.fail(RuntimeError("a bug"))
    elif state is State.CLOSED:
        member.handle(Event.CLOSE_REQUESTED)
    assert member.state is state
    return member


def test_wait_for_reports_the_state_reached():
    member = started()
    assert member.wait_for({State.STABLE}, timeout=0) is None
    member.next_work(timeout=0)
    member.handle(Event.REBALANCE_DONE)
    assert member.wait_for({State.STABLE}, timeout=0) is State.STABLE


def test_a_waiting_worker_wakes_on_an_event_from_another_thread():
    member = stable()
    got = []
    worker = threading.Thread(target=lambda: got.append(member.next_work(timeout=10)))
    worker.start()
    member.handle(Event.GROUP_CHANGED)
    worker.join(timeout=10)
    assert got == [Work.REBALANCE]


# -- invariant 1: claims only ever belong to the current session -------------------------------

def test_claims_record_the_session_they_were_made_in():
    member = started()
    claims = claim(member, {A: "c-0"})
    assert claims[A].token == S1 and claims[A].thread_id == "c-0"
    assert member.claims[A] is claims[A]
    assert member.owned() == {A: "c-0"}


def test_claims_made_in_another_session_are_refused():
    member = started()
    member.begin_claims({A: "c-0"})
    with pytest.raises(StaleClaimError, match="0x202"):
        member.claims_made(S2, [A])
    assert member.owned() == {}


# -- invariant 8: one record per partition held, through its phases ------------------------------

def test_a_claim_is_held_but_neither_delivered_nor_committed_until_made():
    member = started()
    member.begin_claims({A: "c-0"})
    assert member.claims[A].phase is Phase.CLAIMING
    assert member.held() == {A: "c-0"} and member.unfinished() == {A: "c-0"}
    assert member.owned() == {} and member.committable() == {}
    member.claims_made(S1, [A])
    assert member.claims[A].phase is Phase.FETCHING
    assert member.owned() == {A: "c-0"} and member.unfinished() == {}
    assert tokens(member.committable()) == {A: S1}


def test_a_withdrawn_claim_is_replaced_so_nothing_fetched_under_it_is_delivered():
    member = stable()
    fetched_under = member.claims[A]
    member.withdraw([A])
    releasing = member.claims[A]
    assert releasing is not fetched_under, "a chunk carrying the old record is dropped"
    assert releasing.phase is Phase.RELEASING and releasing.token == S1
    assert member.owned() == {B: "c-0"} and member.held() == {A: "c-0", B: "c-0"}
    assert member.unfinished() == {A: "c-0"}, "the next rebalance finishes the release"
    assert tokens(member.committable()) == {B: S1}
    assert tokens(member.releasing([A, B])) == {A: S1}, "its last commit"
    member.drop([A])
    assert member.held() == {B: "c-0"} and member.releasing([A]) == {}


def test_claiming_a_partition_held_already_is_a_defect():
    member = stable()
    member.withdraw([A])
    with pytest.raises(MemberStateError, match="t-0"):
        member.begin_claims({A: "c-1", C: "c-1"})
    assert member.held() == {A: "c-0", B: "c-0"}, "nothing recorded"


def test_making_claims_that_were_not_begun_is_a_defect_that_changes_nothing():
    member = started()
    member.begin_claims({A: "c-0"})
    with pytest.raises(MemberStateError, match="t-1"):
        member.claims_made(S1, [A, B])
    assert member.claims[A].phase is Phase.CLAIMING


# -- the record's offsets: only a position ahead of the committed offset is written -----------

def test_a_claim_starts_at_its_committed_offset_or_is_reset_without_one():
    member = started()
    claims = member.claims_made(member.begin_claims({A: "c-0", B: "c-0"}), [A, B], {A: 10})
    assert (claims[A].committed, claims[A].reset_pending) == (10, False)
    assert (claims[B].committed, claims[B].reset_pending) == (None, True)
    assert member.fetching() == claims
    assert member.committable() == {A: (S1, 10, None), B: (S1, None, None)}


def test_only_a_position_ahead_of_the_committed_offset_is_pending_and_it_never_moves_back():
    member = started()
    member.claims_made(member.begin_claims({A: "c-0"}), [A], {A: 10})
    assert member.committable({A: 10})[A].pending is None, "an unchanged offset"
    assert member.committable({A: 15})[A].pending == 15
    assert member.committable({A: 12})[A].pending == 15, "a late, older position"
    member.committed({A: (S1, 15)})
    assert member.committable()[A] == (S1, 15, None)
    member.committed({A: (S1, 12)})
    assert member.committable()[A].committed == 15, "a commit that raced a newer one"


def test_a_write_under_a_token_that_passed_does_not_mark_the_new_claim():
    member = stable()
    written = member.committable({A: 99})  # gathered in S1 ...
    member.term_event(Event.TERM_ENDED, None)
    member.term_event(Event.ASSIGNED, S2)
    reregister(member, S2)
    member.next_work(timeout=0)
    member.claims_made(member.begin_claims({A: "c-0"}), [A], {A: 40})
    member.committed({A: (written[A].token, 99)})  # ... and written once A is claimed in S2
    assert member.committable()[A] == (S2, 40, None)


def test_a_reset_counts_for_the_claim_it_was_reported_for_only():
    member = started()
    claim = member.claims_made(member.begin_claims({A: "c-0"}), [A])[A]
    member.reset_to(claim, 100)
    assert not claim.reset_pending
    assert member.committable()[A] == (S1, None, 100), "committed though nothing was delivered"
    member.withdraw([A])
    member.drop([A])
    member.claims_made(member.begin_claims({A: "c-0"}), [A])
    member.reset_to(claim, 500)
    assert member.committable()[A].pending is None
    assert member.consumed_positions() == {}


@given(committed=st.integers(0, 1000), consumed=st.lists(st.integers(0, 2000), max_size=20))
def test_pending_is_the_highest_position_taken_in_and_only_if_ahead(committed, consumed):
    member = started()
    member.claims_made(member.begin_claims({A: "c-0"}), [A], {A: committed})
    for position in consumed:
        member.committable({A: position})
    highest = max(consumed, default=-1)
    assert member.committable()[A].pending == (highest if highest > committed else None)


# -- invariant 9: a commit never names a partition whose token has passed ------------------------

def test_commits_name_only_partitions_claimed_in_the_current_session_with_its_token():
    member = stable()
    member.withdraw([B])
    assert tokens(member.committable()) == {A: S1}
    assert tokens(member.releasing([B])) == {B: S1}
    member.term_event(Event.TERM_ENDED, None)  # S1's token passes
    assert member.committable() == {} and member.releasing([A, B]) == {}
    member.term_event(Event.ASSIGNED, S2)
    reregister(member, S2)
    member.next_work(timeout=0)
    claim(member, {C: "c-0"})
    assert tokens(member.committable()) == {C: S2}


def test_nothing_is_committable_while_the_gate_is_closed():
    member = stable()
    member.withdraw([B])
    member.term_event(Event.LEASE_LOST, None)
    assert member.committable() == {} and member.releasing([B]) == {}
    member.term_event(Event.ASSIGNED, S1)
    assert tokens(member.committable()) == {A: S1}
    assert tokens(member.releasing([B])) == {B: S1}


def test_nothing_is_committable_once_the_lease_lapsed_though_the_gate_is_open():
    now = [100.0]
    member = MemberState(S1, clock=lambda: now[0])
    member.handle(Event.STARTED)
    member.next_work(timeout=0)
    claim(member, {A: "c-0"})
    member.gate.lease(104.0)
    assert tokens(member.committable()) == {A: S1}
    now[0] = 104.0
    assert member.delivering and member.committable() == {}
    member.gate.lease(108.0)
    assert tokens(member.committable()) == {A: S1}


def test_the_gate_holds_while_the_coordination_says_open_and_the_lease_runs():
    """Each closes it alone, and a lease renewed while closed does not open it."""
    gate = MemberState(S1).gate
    assert gate.holds(1e12), "no coordination gave a lease: no deadline"
    gate.lease(10.0)
    assert gate.holds(9.9) and not gate.holds(10.0)
    gate.pause()
    gate.lease(20.0)
    assert not gate.holds(15.0) and gate.deadline == 20.0
    gate.resume()
    assert gate.holds(15.0) and not gate.holds(20.0)
    gate.lease(float("-inf"))  # nothing proven (a Kafka member between generations)
    assert not gate.holds(0.0)


# -- invariant 2: an expiry takes the session, the claims and the gate together ----------------

def test_an_expiry_leaves_no_session_no_claims_and_a_closed_gate():
    member = stable()
    assert member.term_event(Event.TERM_ENDED, None) is Event.TERM_ENDED
    assert member.state is State.TERM_ENDED
    assert member.term is None
    assert member.owned() == {}
    assert not member.delivering
    with pytest.raises(StaleClaimError):
        member.begin_claims({A: "c-0"})
    assert member.held() == {}


def test_an_expired_member_does_nothing_until_a_new_session():
    member = stable()
    member.term_event(Event.TERM_ENDED, None)
    member.handle(Event.GROUP_CHANGED)
    assert member.state is State.TERM_ENDED
    assert member.next_work(timeout=0) is None


def test_a_new_session_keeps_the_gate_closed_and_claims_refused_until_reregistered():
    member = stable()
    member.term_event(Event.LEASE_LOST, None)
    member.term_event(Event.TERM_ENDED, None)
    assert member.term_event(Event.ASSIGNED, S2) is Event.NEW_TERM
    assert member.state is State.REBALANCING
    assert not member.delivering
    with pytest.raises(StaleClaimError):
        member.begin_claims({A: "c-0"})
    assert member.next_work(timeout=0) is Work.REJOIN
    assert member.rejoined(S2)
    assert member.delivering and member.term == S2
    assert member.next_work(timeout=0) is Work.REBALANCE
    assert claim(member, {A: "c-0"})[A].token == S2


def test_a_connection_in_another_session_without_a_reported_expiry_is_a_new_session():
    member = stable()
    assert member.term_event(Event.ASSIGNED, S2) is Event.NEW_TERM
    assert member.owned() == {} and member.term is None and not member.delivering


def test_a_reregistration_in_a_session_that_is_not_the_connected_one_is_not_adopted():
    member = stable()
    member.term_event(Event.TERM_ENDED, None)
    member.term_event(Event.ASSIGNED, S2)
    assert member.next_work(timeout=0) is Work.REJOIN
    assert not member.rejoined(S1)
    assert not member.rejoined(None)
    assert not member.delivering
    assert member.next_work(timeout=0) is Work.REJOIN, "it stays due until adopted"


def test_a_rebalance_ending_before_the_reregistration_does_not_settle_the_member():
    member = stable()
    member.term_event(Event.TERM_ENDED, None)
    member.term_event(Event.ASSIGNED, S2)
    assert member.handle(Event.REBALANCE_DONE) is State.REBALANCING
    reregister(member, S2)
    assert member.next_work(timeout=0) is Work.REBALANCE
    assert member.handle(Event.REBALANCE_DONE) is State.STABLE


def test_an_expiry_before_the_start_waits_for_the_new_session_then_reregisters():
    member = MemberState(S1)
    member.term_event(Event.TERM_ENDED, None)
    assert member.handle(Event.STARTED) is State.TERM_ENDED
    assert member.next_work(timeout=0) is None
    member.term_event(Event.ASSIGNED, S2)
    reregister(member, S2)
    assert member.next_work(timeout=0) is Work.REBALANCE


def test_a_new_session_before_the_start_has_the_member_register_again_first():
    member = MemberState(S1)
    member.term_event(Event.ASSIGNED, S2)
    assert member.handle(Event.STARTED) is State.REBALANCING
    reregister(member, S2)
    assert member.next_work(timeout=0) is Work.REBALANCE


# -- invariant 3: the gate is open exactly while connected in the claims' session --------------

def test_a_suspended_connection_closes_the_gate_until_the_same_session_is_back():
    member = stable()
    assert member.delivering
    assert member.term_event(Event.LEASE_LOST, None) is Event.LEASE_LOST
    assert not member.delivering and not member.gate.open.is_set()
    assert member.state is State.STABLE
    assert member.owned() == {A: "c-0", B: "c-0"}, "the session may yet survive"
    assert member.term_event(Event.ASSIGNED, S1) is Event.TERM_RESUMED
    assert member.delivering and member.gate.open.is_set()
    assert member.next_work(timeout=0) is None, "the same session needs no rebalance"


def test_claims_made_before_a_suspension_in_the_same_session_are_accepted():
    member = started()
    session = member.begin_claims({A: "c-0"})
    member.term_event(Event.LEASE_LOST, None)
    assert set(member.claims_made(session, [A])) == {A}
    assert not member.delivering


# -- invariant 4: FAILED and CLOSED are final ----------------------------------------------------

@pytest.mark.parametrize("final", [Event.FAILED, Event.CLOSE_REQUESTED])
def test_final_states_are_never_left_and_accept_no_claims(final):
    member = stable()
    end = member.handle(final)
    for event in Event:
        with contextlib.suppress(MemberStateError):
            member.handle(event, S2)
    member.term_event(Event.ASSIGNED, S2)
    assert member.state is end
    assert member.next_work(timeout=0) is Work.STOP
    with pytest.raises(StaleClaimError, match=end.value):
        member.begin_claims({C: "c-0"})


def test_a_leaving_member_still_learns_what_its_session_does():
    """Its last commits depend on the gate: none once the session is lost."""
    member = stable()
    member.handle(Event.CLOSE_REQUESTED)
    assert member.delivering
    member.term_event(Event.TERM_ENDED, None)
    assert member.state is State.CLOSED
    assert not member.delivering and member.owned() == {}


def test_a_leaving_member_waits_for_its_suspended_connection_to_come_back_in_the_session():
    """A stop during a ZooKeeper blip: the final commit waits for the same session's return."""
    member = stable()
    member.handle(Event.CLOSE_REQUESTED)
    member.term_event(Event.LEASE_LOST, None)
    assert not member.wait_until_trusted(timeout=0)
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(member.wait_until_trusted(30)),
                               daemon=True)
    waiting.start()
    member.term_event(Event.ASSIGNED, S1)
    waiting.join(timeout=30)
    assert answers == [True]


@pytest.mark.parametrize("lost", [Event.TERM_ENDED, Event.ASSIGNED])
def test_a_leaving_member_stops_waiting_once_its_session_is_gone(lost):
    """Expired, or a connection in another session: its owner znodes are gone, and no wait
    would bring them back; the answer comes at once, not after the timeout."""
    member = stable()
    member.handle(Event.CLOSE_REQUESTED)
    member.term_event(Event.LEASE_LOST, None)
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(member.wait_until_trusted(60)),
                               daemon=True)
    waiting.start()
    member.term_event(lost, S2 if lost is Event.ASSIGNED else None)
    waiting.join(timeout=30)
    assert not waiting.is_alive() and answers == [False]


def test_the_first_failure_is_recorded_and_fails_the_member_once():
    member = stable()
    assert member.fail(ValueError("first"))
    assert not member.fail(ValueError("second"))
    assert member.state is State.FAILED
    assert str(member.gate.failure) == "first"
    assert member.leaving


# -- invariant 5: one thing at a time for the worker ---------------------------------------------

def test_a_due_reregistration_comes_before_any_rebalance():
    member = stable()
    member.handle(Event.GROUP_CHANGED)
    member.term_event(Event.TERM_ENDED, None)
    member.term_event(Event.ASSIGNED, S2)
    member.handle(Event.GROUP_CHANGED)
    assert member.next_work(timeout=0) is Work.REJOIN
    assert member.rejoined(S2)
    assert member.next_work(timeout=0) is Work.REBALANCE
    assert member.next_work(timeout=0) is None


def test_an_expiry_cancels_a_reregistration_not_yet_done():
    member = stable()
    member.term_event(Event.TERM_ENDED, None)
    member.term_event(Event.ASSIGNED, S2)
    member.term_event(Event.TERM_ENDED, None)
    assert member.next_work(timeout=0) is None
    assert member.state is State.TERM_ENDED


# -- the interleaving: a claim under way when the session expires --------------------------------

def test_a_claim_that_passed_its_checks_before_an_expiry_is_refused_after_it():
    member = stable()
    member.handle(Event.GROUP_CHANGED)
    assert member.next_work(timeout=0) is Work.REBALANCE
    session = member.begin_claims({C: "c-1"})  # the rebalance's claim made its znodes in S1 ...
    member.term_event(Event.TERM_ENDED, None)  # ... kazoo's thread reports the expiry ...
    with pytest.raises(StaleClaimError):
        member.claims_made(session, [C])  # ... and only then is the claim applied
    assert member.owned() == {} and member.held() == {}
    assert not member.delivering
    assert member.term_event(Event.ASSIGNED, S2) is Event.NEW_TERM
    assert not member.delivering, "open before the re-registration's cleanup"
    with pytest.raises(StaleClaimError):
        member.claims_made(session, [C])
    assert member.handle(Event.REBALANCE_DONE) is State.REBALANCING
    reregister(member, S2)
    assert member.delivering
    assert member.next_work(timeout=0) is Work.REBALANCE
    assert claim(member, {C: "c-1"})[C].token == S2
    assert member.handle(Event.REBALANCE_DONE) is State.STABLE
    assert member.owned() == {C: "c-1"}


# -- invariant 11: the connector's lifecycle ------------------------------------------------------

def test_streams_are_asked_for_once_and_again_only_after_a_failed_start():
    member = MemberState(S1)
    member.request_start()
    with pytest.raises(ZkConsumerError, match="already created"):
        member.request_start()
    assert not member.start_failed(), "not because of a shutdown"
    member.request_start()
    member.start()
    assert member.started and member.state is State.REBALANCING


def test_a_shutdown_during_the_start_refuses_the_threads_and_is_why_the_start_failed():
    member = MemberState(S1)
    member.request_start()
    assert member.begin_close() and member.closing
    with pytest.raises(ZkConsumerError, match="shut down before the threads started"):
        member.start()
    assert not member.started and member.state is State.CLOSED
    assert member.start_failed()
    with pytest.raises(ZkConsumerError, match="shut down; make a new one"):
        member.request_start()


def test_a_shutdown_begins_once_and_after_a_failure_leaves_the_member_failed():
    member = MemberState(S1)
    member.request_start()
    member.start()
    member.fail(RuntimeError("a bug"))
    assert member.begin_close()
    assert not member.begin_close()
    assert member.state is State.FAILED and member.started


def test_a_start_after_an_expiry_waits_for_the_new_session():
    member = MemberState(S1)
    member.request_start()
    member.term_event(Event.TERM_ENDED, None)
    member.start()
    assert member.started and member.state is State.TERM_ENDED
    assert member.next_work(timeout=0) is None


def _free(lock: threading.Condition) -> bool:
    """Whether another thread can take the lock now. The member's lock is reentrant, so the
    thread that left it held could take it again: only another thread can tell."""
    taken: list[bool] = []

    def take() -> None:
        taken.append(lock.acquire(blocking=False))
        if taken[0]:
            lock.release()

    other = threading.Thread(target=take)
    other.start()
    other.join()
    return taken == [True]


def test_the_lock_check_sees_a_lock_left_held_by_this_thread():
    lock = threading.Condition()
    assert _free(lock)
    lock.acquire()
    assert lock.acquire(blocking=False), "reentrant: this thread takes it again"
    lock.release()
    assert not _free(lock)
    lock.release()
    assert _free(lock)


class _NeverWaits(threading.Condition):
    """The member's lock, failing the test if a report waits on it."""

    def wait(self, timeout=None):
        raise AssertionError("a report waited while holding the member's lock")


@pytest.mark.parametrize("start", [started, stable])
def test_no_report_waits_under_the_lock_nor_leaves_it_held(start):
    """Invariant 6: kazoo's thread reports here, and the worker and the streams read here, so
    nothing but the worker's own waits (`next_work`, `wait_for`) may wait, and every call
    returns with the lock free, whatever the state and the event."""
    member = start()
    member._lock = _NeverWaits()
    member.term_event(Event.LEASE_LOST, S1)
    member.term_event(Event.ASSIGNED, S1)
    member.term_event(Event.TERM_ENDED, None)
    member.term_event(Event.ASSIGNED, S2)
    member.rejoined(S2)
    claim(member, {A: "c-0"})
    member.withdraw([A])
    member.drop([A])
    for event in [event for event in Event if event is not Event.FAILED]:  # `fail` sends it
        with contextlib.suppress(MemberStateError):
            member.handle(event, S2)
        assert _free(member._lock), f"{event} left the lock held"
    member.fail(RuntimeError("a bug"))
    assert _free(member._lock), "fail left the lock held"


# -- the term's assignment, carried by the coordination's event ---------------------------------

def in_kafka_term(generation: int = S2, partitions=frozenset({A, B})) -> MemberState:
    """A started member that a coordination assigned `partitions` in `generation` (as Kafka's
    does), rejoined in it and holding its claims."""
    member = started(S1)
    assert member.term_event(Event.ASSIGNED, generation, partitions) is Event.NEW_TERM
    reregister(member, generation)
    assert member.next_work(timeout=0) is Work.REBALANCE
    claim(member, dict.fromkeys(partitions, "c-0"))
    return member


def test_an_assigned_term_carries_its_partitions_and_a_term_without_any_has_none():
    member = started(S1)
    assert member.assignment is None
    member.term_event(Event.ASSIGNED, S2, frozenset({A, B}))
    assert member.assignment == (S2, frozenset({A, B}))
    member.term_event(Event.TERM_ENDED, None)
    assert member.assignment is None, "the assignment went with its term"
    member.term_event(Event.ASSIGNED, S1)  # a ZooKeeper session: the rebalance decides
    assert member.assignment is None


def test_a_term_ending_takes_its_assignment_back_at_once_and_leaves_the_rest_to_its_end():
    """Between the two steps the revocation callback runs and the parting commit is taken:
    the claims and the gate are still there, but nothing claims from the term any more and a
    worker asking whether it is still current hears it is not."""
    member = in_kafka_term()
    assert member.term_event(Event.TERM_ENDING, None) is Event.TERM_ENDING
    assert member.assignment is None
    assert member.state is State.REBALANCING and member.term == S2
    assert member.delivering and set(member.owned()) == {A, B}
    assert set(member.committable()) == {A, B}, "the callback may still commit"
    member.term_event(Event.TERM_ENDED, None)
    assert (member.state, member.owned(), member.delivering) == (State.TERM_ENDED, {}, False)


def test_a_term_ending_where_no_term_is_left_is_a_defect():
    member = in_kafka_term()
    member.term_event(Event.TERM_ENDED, None)
    with pytest.raises(MemberStateError, match="term_ending in state term_ended"):
        member.term_event(Event.TERM_ENDING, None)

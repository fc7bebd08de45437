"""The member state machine: named states, explicit transitions, coalesced work."""

from __future__ import annotations

import threading

from zkconsumer.member.state import Event, MemberStateMachine, State, Work


def started() -> MemberStateMachine:
    machine = MemberStateMachine()
    machine.handle(Event.STARTED)
    return machine


def test_start_asks_for_one_rebalance():
    machine = started()
    assert machine.state is State.REBALANCING
    assert machine.next_work(timeout=0) is Work.REBALANCE
    assert machine.next_work(timeout=0) is None


def test_a_burst_of_changes_becomes_one_rebalance():
    machine = started()
    machine.next_work(timeout=0)
    machine.handle(Event.REBALANCE_DONE)
    for _ in range(5):
        machine.handle(Event.GROUP_CHANGED)
    assert machine.next_work(timeout=0) is Work.REBALANCE
    assert machine.next_work(timeout=0) is None


def test_a_change_during_a_rebalance_runs_another_before_stable():
    machine = started()
    machine.next_work(timeout=0)
    machine.handle(Event.GROUP_CHANGED)
    assert machine.handle(Event.REBALANCE_DONE) is State.REBALANCING
    assert machine.next_work(timeout=0) is Work.REBALANCE
    assert machine.handle(Event.REBALANCE_DONE) is State.STABLE


def test_session_expiry_waits_for_a_new_session_then_reregisters_and_rebalances():
    machine = started()
    machine.next_work(timeout=0)
    machine.handle(Event.REBALANCE_DONE)
    assert machine.handle(Event.SESSION_EXPIRED) is State.EXPIRED
    machine.handle(Event.GROUP_CHANGED)
    assert machine.next_work(timeout=0) is None
    assert machine.handle(Event.SESSION_RESTORED) is State.REBALANCING
    assert machine.next_work(timeout=0) is Work.REREGISTER
    assert machine.next_work(timeout=0) is Work.REBALANCE


def test_failure_and_close_are_final_and_stop_the_worker():
    machine = started()
    assert machine.handle(Event.FAILED) is State.FAILED
    assert machine.handle(Event.SESSION_RESTORED) is State.FAILED
    assert machine.next_work(timeout=0) is Work.STOP
    closed = started()
    assert closed.handle(Event.CLOSE_REQUESTED) is State.CLOSED
    assert closed.handle(Event.GROUP_CHANGED) is State.CLOSED
    assert closed.next_work(timeout=0) is Work.STOP


def test_a_waiting_worker_wakes_on_an_event_from_another_thread():
    machine = started()
    machine.next_work(timeout=0)
    machine.handle(Event.REBALANCE_DONE)
    got = []
    worker = threading.Thread(target=lambda: got.append(machine.next_work(timeout=10)))
    worker.start()
    machine.handle(Event.GROUP_CHANGED)
    worker.join(timeout=10)
    assert got == [Work.REBALANCE]


def test_wait_for_reports_the_state_reached():
    machine = started()
    assert machine.wait_for({State.STABLE}, timeout=0) is None
    machine.next_work(timeout=0)
    machine.handle(Event.REBALANCE_DONE)
    assert machine.wait_for({State.STABLE}, timeout=0) is State.STABLE

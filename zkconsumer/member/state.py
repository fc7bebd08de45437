"""The member's life as named states and explicit transitions, behind one lock.

ZooKeeper watches, session events and the user's `close()` arrive on different threads; they only
report events here. A single worker thread asks `next_work()` what to do, so rebalances never run
concurrently and a burst of watch events becomes one rebalance, not many.
"""

from __future__ import annotations

import threading
from enum import Enum


class State(Enum):
    NEW = "new"                  # not registered yet
    REBALANCING = "rebalancing"  # a rebalance is due or running
    STABLE = "stable"            # owning our slice, fetching
    EXPIRED = "expired"          # the ZooKeeper session died: registration and owners are gone
    FAILED = "failed"            # gave up (e.g. rebalance attempts exhausted); streams raise
    CLOSED = "closed"


class Event(Enum):
    STARTED = "started"
    GROUP_CHANGED = "group_changed"
    REBALANCE_DONE = "rebalance_done"
    FAILED = "failed"
    SESSION_EXPIRED = "session_expired"
    SESSION_RESTORED = "session_restored"
    CLOSE_REQUESTED = "close_requested"


class Work(Enum):
    REBALANCE = "rebalance"
    REREGISTER = "reregister"
    STOP = "stop"


class MemberStateMachine:
    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._state = State.NEW
        self._rebalance_due = False
        self._reregister_due = False

    @property
    def state(self) -> State:
        with self._lock:
            return self._state

    def handle(self, event: Event) -> State:
        """Apply an event; returns the new state. Events that do not apply are ignored."""
        with self._lock:
            state = self._state
            if state in (State.CLOSED, State.FAILED):
                return state
            if event is Event.CLOSE_REQUESTED:
                self._state = State.CLOSED
            elif event is Event.SESSION_EXPIRED:
                self._state = State.EXPIRED
                self._rebalance_due = False
            elif event is Event.SESSION_RESTORED and state is State.EXPIRED:
                self._state = State.REBALANCING
                self._reregister_due = True
                self._rebalance_due = True
            elif event is Event.STARTED and state is State.NEW or event is Event.GROUP_CHANGED and state in (State.STABLE, State.REBALANCING):
                self._state = State.REBALANCING
                self._rebalance_due = True
            elif event is Event.REBALANCE_DONE and state is State.REBALANCING:
                if not self._rebalance_due:
                    self._state = State.STABLE
            elif event is Event.FAILED:
                self._state = State.FAILED
            self._lock.notify_all()
            return self._state

    def next_work(self, timeout: float | None = None) -> Work | None:
        """Block until there is something to do; None when `timeout` passes with nothing."""
        with self._lock:
            ready = self._lock.wait_for(self._has_work, timeout)
            if not ready:
                return None
            if self._state in (State.CLOSED, State.FAILED):
                return Work.STOP
            if self._reregister_due:
                self._reregister_due = False
                return Work.REREGISTER
            self._rebalance_due = False
            return Work.REBALANCE

    def wait_for(self, states: set[State], timeout: float | None = None) -> State | None:
        with self._lock:
            if self._lock.wait_for(lambda: self._state in states, timeout):
                return self._state
            return None

    def _has_work(self) -> bool:
        return (self._state in (State.CLOSED, State.FAILED)
                or self._reregister_due
                or (self._rebalance_due and self._state is State.REBALANCING))

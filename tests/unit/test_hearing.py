"""How long a ZooKeeper connection may stay silent: two thirds of the session timeout the
server granted, counted from the last thing heard on this connection, and no limit before the
first answer (the handshake is kazoo's to time)."""

from __future__ import annotations

import pytest

from zkconsumer.zk.hearing import SILENCE_SHARE, Hearing, silence_deadline


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_deadline_leaves_a_third_of_the_session_timeout_before_the_server_can_expire():
    assert silence_deadline(10.0, 6.0) == pytest.approx(14.0)
    assert silence_deadline(10.0, 4.0) == pytest.approx(10.0 + 4.0 - 4.0 / 3)


def test_nothing_is_due_before_the_connection_heard_anything():
    clock = Clock()
    hearing = Hearing(4.0, clock)
    clock.now += 1000
    assert hearing.time_left() is None


def test_the_time_left_counts_from_the_last_thing_heard():
    clock = Clock()
    hearing = Hearing(6.0, clock)
    hearing.heard()
    clock.now += 3.0
    assert hearing.time_left() == pytest.approx(1.0)
    hearing.heard()
    assert hearing.time_left() == pytest.approx(4.0)
    clock.now += 4.5
    assert hearing.time_left() == pytest.approx(-0.5)
    assert "nothing heard from ZooKeeper for 4.5s" in hearing.silence()


def test_a_new_connection_forgets_what_the_last_one_heard():
    clock = Clock()
    hearing = Hearing(6.0, clock)
    hearing.heard()
    clock.now += 10
    hearing.new_connection()
    assert hearing.time_left() is None


def test_the_negotiated_timeout_replaces_the_one_asked_for():
    clock = Clock()
    hearing = Hearing(60.0, clock)
    hearing.heard()
    hearing.negotiated(40.0)  # the server's maxSessionTimeout
    assert hearing.session_timeout_s == 40.0
    assert hearing.time_left() == pytest.approx(SILENCE_SHARE * 40.0)


# -- the lease: what an answer proves -----------------------------------------------------------

def test_an_answer_proves_the_session_from_when_the_connection_was_last_seen_quiet():
    clock = Clock()
    hearing = Hearing(6.0, clock)
    renewals: list[float] = []
    hearing.on_renewed(renewals.append)
    hearing.new_connection()
    assert hearing.lease_deadline() == float("-inf"), "nothing proven before an answer"
    clock.now += 1.0
    hearing.quiet(clock.now)
    clock.now += 0.5
    hearing.heard()
    assert hearing.proven == 101.0
    assert renewals == [pytest.approx(101.0 + 4.0)] == [hearing.lease_deadline()]


def test_an_answer_read_after_a_freeze_proves_nothing_after_the_freeze():
    """A process frozen while an answer waited unread reads it when it runs again: the answer
    came after the connection was last seen quiet, before the freeze, so the lease it proves
    has lapsed already and is not renewed by the reading."""
    clock = Clock()
    hearing = Hearing(6.0, clock)
    renewals: list[float] = []
    hearing.new_connection()
    hearing.quiet(clock.now)
    hearing.heard()
    hearing.on_renewed(renewals.append)
    before = hearing.lease_deadline()
    hearing.quiet(clock.now + 0.1)  # looked at, then the wait began: frozen in it
    clock.now += 15.0
    hearing.heard()  # what arrived while frozen
    assert hearing.lease_deadline() == pytest.approx(100.1 + 4.0)
    assert hearing.lease_deadline() > before
    assert hearing.lease_deadline() < clock.now, "lapsed: nothing to hand out"
    hearing.heard()  # more of the same, still unread since the freeze: proves no more
    assert renewals == [pytest.approx(104.1)]


def test_a_new_connection_proves_from_its_own_start():
    clock = Clock()
    hearing = Hearing(6.0, clock)
    clock.now += 20.0
    hearing.new_connection()
    clock.now += 0.2
    hearing.heard()  # the handshake's answer
    assert hearing.proven == 120.0

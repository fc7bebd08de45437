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

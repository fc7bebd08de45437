"""The request window: a pipelined call never has more than the session's window unanswered,
and gives every answer back in the order asked; the window follows how fast answers come."""

from __future__ import annotations

import pytest
from kazoo.exceptions import ConnectionLoss

from zkconsumer.zk.window import (
    DEFAULT_WINDOW,
    FASTEST_SPAN_S,
    SLOW_S,
    START,
    Window,
    answered,
    set_window,
    window_of,
)


class Session:
    """Stands for a kazoo client: only its identity is used, to look its window up."""


class Request:
    """An asynchronous request, answered when waited on; counts what is in flight."""

    exception = None

    def __init__(self, flight: list[int], value: int) -> None:
        self._flight = flight
        self._value = value
        self._waited = False

    def wait(self) -> None:
        if not self._waited:
            self._waited = True
            self._flight[0] -= 1

    def get(self) -> int:
        self.wait()
        return self._value


def test_no_more_than_the_window_is_unanswered_and_answers_keep_their_order():
    session = Session()
    set_window(session, 3)
    flight, highest = [0], [0]

    def send(key: int) -> Request:
        flight[0] += 1
        highest[0] = max(highest[0], flight[0])
        return Request(flight, key * 10)

    got = [(key, request.get()) for key, request in answered(session, range(10), send)]
    assert got == [(key, key * 10) for key in range(10)]
    assert (highest[0], flight[0]) == (3, 0)


def test_a_session_without_settings_gets_the_default_and_a_window_must_be_positive():
    assert window_of(Session()).ceiling == DEFAULT_WINDOW
    with pytest.raises(ValueError, match="positive"):
        set_window(Session(), 0)


def _answer(window: Window, round_trip_s: float, now: float = 0.0) -> None:
    window.answered(window.sent(), round_trip_s, now)


def test_answers_as_fast_as_the_fastest_grow_the_window_by_one_per_window_up_to_its_ceiling():
    window = Window(12)
    assert window.limit == START
    for _ in range(START + 1):
        _answer(window, 0.001)
    assert window.limit == START + 1
    for _ in range(500):
        _answer(window, 0.001)
    assert window.limit == 12


def test_queued_answers_halve_the_window_once_per_round_trip_down_to_one():
    window = Window(64, size=32.0)
    _answer(window, 0.001)  # the fastest seen
    in_flight = [window.sent() for _ in range(32)]
    for number in in_flight:
        window.answered(number, 0.001 + 2 * SLOW_S, 0.0)
    assert window.limit == 16, "a window of slow answers sent together halves it once"
    for _ in range(10):
        _answer(window, 1.0)
    assert window.limit == 1


def test_a_slow_server_keeps_few_requests_in_flight():
    """Answers that each take longer the more are queued (a server doing 1,000 a second):
    the window settles where the queue costs about SLOW_S, not at its ceiling."""
    session = Session()
    set_window(session, 64)
    now, flight, highest = [0.0], [0], [0]

    class Queued(Request):
        def wait(self) -> None:
            if not self._waited:
                now[0] += 0.001  # a millisecond per answer, in the order sent
            super().wait()

    def send(key: int) -> Request:
        flight[0] += 1
        return Queued(flight, key)

    for _key, _request in answered(session, range(2000), send, clock=lambda: now[0]):
        highest[0] = max(highest[0], flight[0] + 1)
    queued = round(SLOW_S / 0.001)  # the most in flight whose answers are not slow
    assert highest[0] <= queued + 2, "never far past the queue the window allows"
    assert queued // 2 <= window_of(session).limit <= queued + 1


def test_the_fastest_answer_is_learned_again_after_a_move_to_a_farther_server():
    """Answers of 0.5 ms, then of 30 ms (another server, farther away): the window shrinks
    at first, and grows again once the 30 ms are the fastest of the recent spans."""
    window = Window(64)
    for index in range(300):
        _answer(window, 0.0005, now=index * 0.001)
    for index in range(1000):
        _answer(window, 0.030, now=1.0 + index * 0.030)
    assert window.limit == 1, "queued, as far as the window can tell"
    for index in range(2000):
        _answer(window, 0.030, now=1.0 + 2 * FASTEST_SPAN_S + index * 0.030)
    assert window.limit > START


def test_failures_without_a_round_trip_are_not_timed():
    session = Session()
    set_window(session, 64)
    now = [0.0]

    class Lost(Request):
        exception = ConnectionLoss()

    class Slow(Request):
        def wait(self) -> None:
            now[0] += 0.1  # every real answer 100 ms
            super().wait()

    flight = [0]
    for _ in answered(session, range(40), lambda key: Slow(flight, key), clock=lambda: now[0]):
        pass
    limit = window_of(session).limit
    for _ in answered(session, range(3), lambda key: Lost(flight, key), clock=lambda: now[0]):
        pass
    for _ in answered(session, range(40), lambda key: Slow(flight, key), clock=lambda: now[0]):
        pass
    assert window_of(session).limit >= limit, "an instant failure became the fastest answer"

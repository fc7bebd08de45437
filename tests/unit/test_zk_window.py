"""The request window: a pipelined call never has more than the session's window unanswered,
and gives every answer back in the order asked."""

from __future__ import annotations

import pytest

from zkconsumer.zk.window import DEFAULT_WINDOW, answered, set_window, window_of


class Session:
    """Stands for a kazoo client: only its identity is used, to look its window up."""


class Request:
    """An asynchronous request, answered when waited on; counts what is in flight."""

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
    assert window_of(Session()) == DEFAULT_WINDOW
    with pytest.raises(ValueError, match="positive"):
        set_window(Session(), 0)

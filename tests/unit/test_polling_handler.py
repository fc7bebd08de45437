"""The wait kazoo's connection thread makes before every read and write: the same answers as
kazoo's own selector-based wait, on socket pairs."""

from __future__ import annotations

import selectors
import socket
import types

import pytest
from kazoo.handlers.utils import selector_select

from zkconsumer.zk.polling_handler import PollingHandler, poll_select

_KAZOO_WAIT_ON_POLL = types.SimpleNamespace(DefaultSelector=selectors.PollSelector,
                                            EVENT_READ=selectors.EVENT_READ,
                                            EVENT_WRITE=selectors.EVENT_WRITE)


def kazoo_select(*args, **kwargs):
    return selector_select(*args, selectors_module=_KAZOO_WAIT_ON_POLL, **kwargs)


@pytest.fixture
def pair():
    ours, theirs = socket.socketpair()
    yield ours, theirs
    ours.close()
    theirs.close()


def both(rlist, wlist, timeout):
    """Our answer, checked against kazoo's own."""
    answer = poll_select(rlist, wlist, [], timeout)
    assert answer == kazoo_select(rlist, wlist, [], timeout)
    return answer


def test_nothing_to_read_waits_out_the_timeout(pair):
    ours, _theirs = pair
    assert both([ours], [], 0.01) == ([], [], [])


def test_data_waiting_is_readable(pair):
    ours, theirs = pair
    theirs.sendall(b"x")
    assert both([ours], [], 1.0) == ([ours], [], [])


def test_a_socket_with_room_is_writable(pair):
    ours, _theirs = pair
    assert both([], [ours], 0) == ([], [ours], [])


def test_a_socket_both_readable_and_writable_counts_as_readable(pair):
    ours, theirs = pair
    theirs.sendall(b"x")
    readable, writable, _ = both([ours], [ours], 0)
    assert set(readable) == {ours} and writable == []


def test_a_hang_up_is_readable_so_the_reader_finds_the_end(pair):
    ours, theirs = pair
    theirs.close()
    assert both([ours], [], 1.0) == ([ours], [], [])


def test_only_the_ready_ones_of_several_are_answered(pair):
    ours, theirs = pair
    quiet, other = socket.socketpair()
    try:
        theirs.sendall(b"x")
        assert both([quiet, ours], [], 0) == ([ours], [], [])
    finally:
        quiet.close()
        other.close()


def test_a_negative_timeout_or_a_closed_socket_is_refused(pair):
    ours, theirs = pair
    with pytest.raises(ValueError):
        poll_select([ours], [], [], -1)
    theirs.close()
    ours.close()
    with pytest.raises(TypeError):
        poll_select([ours], [], [], 0)


def test_the_handler_waits_with_it(pair):
    ours, theirs = pair
    theirs.sendall(b"x")
    assert PollingHandler().select([ours], [], [], 0) == ([ours], [], [])

"""The wait kazoo's connection thread makes before every read and write: the same answers as
kazoo's own selector-based wait, on socket pairs; and with a `Hearing`, no wait outlasts the
silence the connection is allowed, counted from the last time its server's socket had
something to read."""

from __future__ import annotations

import selectors
import socket
import threading
import time
import types

import pytest
from kazoo.handlers.utils import selector_select

from zkconsumer.zk.hearing import Hearing
from zkconsumer.zk.polling_handler import ConnectionSilentError, PollingHandler, poll_select

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


# -- timing the silence of the connection thread's socket -------------------------------------

class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server_socket():
    """A handler with a `Hearing` (3 s session timeout: 2 s of silence allowed, on a clock the
    test sets), its connection to a local server as kazoo's thread makes it, the server's end
    of it, and the clock."""
    listener = socket.create_server(("127.0.0.1", 0))
    clock = Clock()
    handler = PollingHandler(Hearing(3.0, clock))
    connection = handler.create_connection(listener.getsockname(), timeout=5.0)
    server, _ = listener.accept()
    yield handler, connection, server, clock
    for sock in (connection, server, listener):
        sock.close()


def test_before_the_server_first_answers_no_wait_is_cut_short(server_socket):
    handler, connection, _server, clock = server_socket
    clock.now = 1000.0
    assert handler.select([connection], [], [], 0.01) == ([], [], [])


def test_a_wait_ends_at_the_silence_limit_and_then_the_connection_is_given_up(server_socket):
    handler, connection, server, clock = server_socket
    server.sendall(b"x")
    assert handler.select([connection], [], [], 1.0) == ([connection], [], [])  # heard at 0
    connection.recv(1)
    clock.now = 1.99
    started = time.monotonic()
    assert handler.select([connection], [], [], 60.0) == ([], [], [])
    assert time.monotonic() - started < 5.0  # the 10 ms left, not the 60 s asked for
    clock.now = 2.0
    with pytest.raises(ConnectionSilentError, match="nothing heard from ZooKeeper for 2.0s"):
        handler.select([connection], [], [], 60.0)


def test_only_the_server_s_socket_counts_as_hearing_from_it(server_socket, pair):
    handler, connection, server, clock = server_socket
    wakeup, waker = pair  # kazoo's own wake-up socket: a request to send
    server.sendall(b"x")
    handler.select([connection], [], [], 1.0)
    connection.recv(1)
    clock.now = 1.5
    waker.sendall(b"r")
    assert handler.select([connection, wakeup], [], [], 1.0) == ([wakeup], [], [])
    clock.now = 2.5
    with pytest.raises(ConnectionSilentError):
        handler.select([connection, wakeup], [], [], 1.0)  # sending does not count
    server.sendall(b"y")
    assert handler.select([connection, wakeup], [], [], 1.0) == ([connection, wakeup], [], [])
    clock.now = 4.0
    assert handler.select([], [connection], [], 1.0) == ([], [connection], [])  # 0.5s left


def test_a_new_connection_starts_unheard(server_socket):
    handler, connection, server, clock = server_socket
    server.sendall(b"x")
    handler.select([connection], [], [], 1.0)
    clock.now = 10.0
    listener = socket.create_server(("127.0.0.1", 0))
    with listener, handler.create_connection(listener.getsockname(), timeout=5.0) as again:
        assert handler.select([again], [], [], 0.01) == ([], [], [])


def test_an_answer_waiting_unread_during_a_wait_to_write_counts_as_heard(server_socket):
    handler, connection, server, clock = server_socket
    server.sendall(b"x")
    handler.select([connection], [], [], 1.0)
    connection.recv(1)
    server.sendall(b"y")  # arrives while kazoo waits to write, not to read
    clock.now = 2.5
    assert handler.select([], [connection], [], 1.0) == ([], [connection], [])
    assert handler.hearing is not None and handler.hearing.time_left() == pytest.approx(2.0)


def test_an_answer_that_waited_unread_proves_the_session_only_from_the_last_quiet_look(
        server_socket):
    """The lease counts an answer from the last moment the socket was seen with nothing
    unread: one read at once proves from when the wait began, one that was waiting already
    when the thread looked (a frozen process running again) proves nothing newer."""
    handler, connection, server, clock = server_socket
    hearing = handler.hearing
    assert hearing is not None
    clock.now = 1.0
    threading.Timer(0.05, server.sendall, args=(b"x",)).start()
    assert handler.select([connection], [], [], 5.0) == ([connection], [], [])
    connection.recv(1)
    assert hearing.proven == 1.0
    server.sendall(b"y")  # arrives unread, as while the process is frozen
    clock.now = 30.0
    assert handler.select([connection], [], [], 1.0) == ([connection], [], [])
    assert hearing.proven == 1.0 and hearing.lease_deadline() < clock.now
    connection.recv(1)
    clock.now = 31.0
    threading.Timer(0.05, server.sendall, args=(b"z",)).start()
    assert handler.select([connection], [], [], 5.0) == ([connection], [], [])
    assert hearing.proven == 31.0

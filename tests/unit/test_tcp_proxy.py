"""The loopback proxy the fault runner cuts ZooKeeper connections with: it forwards both ways,
a cut drops every connection and refuses new ones, a blackhole forwards nothing and closes
nothing, a restore lets clients reconnect (and a blackholed connection go on)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from zkconsumer.testing.tcp_proxy import TcpProxy

TIMEOUT_S = 5.0


@pytest.fixture
def echo_port():
    """A local server that sends back whatever it receives, on every connection."""
    server = socket.create_server(("127.0.0.1", 0))

    def echo(connection: socket.socket) -> None:
        with connection:
            try:
                while data := connection.recv(4096):
                    connection.sendall(data)
            except OSError:
                return

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=echo, args=(connection,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.shutdown(socket.SHUT_RDWR)
    server.close()


@pytest.fixture
def proxy(echo_port):
    with TcpProxy(echo_port) as running:
        yield running


def _connect(proxy: TcpProxy) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=TIMEOUT_S)
    sock.settimeout(TIMEOUT_S)
    return sock


def _round_trip(sock: socket.socket, payload: bytes) -> bytes:
    sock.sendall(payload)
    received = b""
    while len(received) < len(payload):
        chunk = sock.recv(len(payload) - len(received))
        if not chunk:
            break
        received += chunk
    return received


def _silent(sock: socket.socket, wait_s: float = 0.5) -> bool:
    """True when nothing arrives within `wait_s` and the connection stays open."""
    sock.settimeout(wait_s)
    try:
        sock.recv(1)  # data, or the end of the connection: not silent
        return False
    except TimeoutError:
        return True
    finally:
        sock.settimeout(TIMEOUT_S)


def _dropped(sock: socket.socket) -> bool:
    """True when the other end closed or reset the connection (within the socket timeout)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_forwards_both_ways_on_every_connection(proxy):
    with _connect(proxy) as first, _connect(proxy) as second:
        assert _round_trip(first, b"ping") == b"ping"
        assert _round_trip(second, b"x" * 200_000) == b"x" * 200_000


def test_cut_drops_open_connections(proxy):
    with _connect(proxy) as sock:
        assert _round_trip(sock, b"before") == b"before"
        proxy.cut()
        assert _dropped(sock)


def test_connections_made_while_cut_are_dropped_at_once(proxy):
    proxy.cut()
    with _connect(proxy) as sock:
        assert _dropped(sock)


def test_restore_lets_new_connections_through_again(proxy):
    proxy.cut()
    proxy.restore()
    with _connect(proxy) as sock:
        assert _round_trip(sock, b"after") == b"after"


def test_a_connection_is_dropped_when_the_server_is_unreachable():
    unused = socket.create_server(("127.0.0.1", 0))
    port = unused.getsockname()[1]
    unused.close()  # nothing listens there now
    with TcpProxy(port) as proxy, _connect(proxy) as sock:
        assert _dropped(sock)


def test_close_stops_listening(echo_port):
    proxy = TcpProxy(echo_port)
    open_connection = _connect(proxy)
    proxy.close()
    assert _dropped(open_connection)
    open_connection.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", proxy.port), timeout=TIMEOUT_S)


def test_a_blackhole_forwards_nothing_and_closes_nothing_until_restored(proxy):
    with _connect(proxy) as sock:
        assert _round_trip(sock, b"before") == b"before"
        proxy.blackhole()
        sock.sendall(b"held")
        assert _silent(sock)
        proxy.restore()
        assert sock.recv(4) == b"held"  # what was sent meanwhile arrives, as a healed network


def test_connections_made_while_blackholed_get_no_server_and_are_dropped_on_restore(proxy):
    proxy.blackhole()
    with _connect(proxy) as sock:
        sock.sendall(b"hello?")
        assert _silent(sock)
        proxy.restore()
        assert _dropped(sock)
    with _connect(proxy) as sock:
        assert _round_trip(sock, b"after") == b"after"


def test_a_cut_ends_a_blackhole_s_connections(proxy):
    with _connect(proxy) as sock:
        proxy.blackhole()
        proxy.cut()
        assert _dropped(sock)


def test_the_last_forward_to_the_server_is_known_and_a_blackhole_stops_it(proxy):
    with _connect(proxy) as sock:
        before = time.monotonic()
        assert _round_trip(sock, b"up") == b"up"
        forwarded = proxy.last_forwarded_upstream
        assert forwarded is not None and forwarded >= before
        proxy.blackhole()
        sock.sendall(b"lost")
        assert _silent(sock)
        assert proxy.last_forwarded_upstream == forwarded

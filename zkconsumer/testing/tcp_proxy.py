"""A loopback TCP proxy whose traffic can be cut, to partition one client from a server.

Freezing a process (SIGSTOP) also stops everything else it does; a member cut off from
ZooKeeper while it keeps fetching from Kafka is a different and more dangerous case: it goes on
running while its session expires on the server and others take its partitions. Giving each
such client its own proxy to the server lets a test or the fault runner cut exactly that
client's connections and later restore them, with no privileges and no firewall.

Two ways to cut: `cut()` resets the connections (what a client sees when a peer or a firewall
answers with a reset: it knows at once), `blackhole()` lets nothing through either way and
tells nobody (what a network partition does: both ends keep their sockets, writes are accepted
and go nowhere, and each side learns of it only from its own timeouts).

It also runs as a process of its own, forwarding one fixed address until SIGTERM (for a client
in another network namespace, whose own loopback must lead to a server's advertised address):

    python -m zkconsumer.testing.tcp_proxy --listen 127.0.0.1:9092 --to 10.0.0.1:41234

prints "listening" once it is.
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
import threading
import time

_CHUNK = 65536


class TcpProxy:
    """Forwards every connection made to `address` to the target, until `cut()` or
    `blackhole()`.

    While cut, current connections are closed and new ones are accepted and closed at once (the
    client sees its connection drop, as when a network path fails and a peer resets it), until
    `restore()`. While blackholed, nothing is forwarded either way and nothing is closed: what
    each side sends is held, new connections are accepted and left without a server, until
    `restore()`, which delivers what was held (a healed network retransmits it) and drops the
    connections made meanwhile (their clients retry). Each connection uses two threads, one
    per direction.
    """

    def __init__(self, target_port: int, target_host: str = "127.0.0.1", *,
                 listen: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        """`listen`: the address clients connect to (a free loopback port by default)."""
        self._target = (target_host, target_port)
        self._listener = socket.create_server(listen)
        self._host: str = listen[0]
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Condition()
        self._sockets: set[socket.socket] = set()
        self._stranded: set[socket.socket] = set()  # accepted while blackholed
        self._cut = False
        self._silent = False
        self._closed = False
        self._last_upstream: float | None = None
        self._acceptor = threading.Thread(target=self._accept, name=f"tcp-proxy-{self.port}",
                                          daemon=True)
        self._acceptor.start()

    @property
    def address(self) -> str:
        """host:port to give the client instead of the server's."""
        return f"{self._host}:{self.port}"

    @property
    def last_forwarded_upstream(self) -> float | None:
        """When (`time.monotonic()`) bytes from a client were last passed on to the server:
        the server's last packet from this proxy's clients reached it no earlier."""
        with self._lock:
            return self._last_upstream

    def cut(self) -> None:
        """Drop every current connection and refuse new ones until `restore()`."""
        with self._lock:
            self._cut = True
        self._drop_connections()

    def blackhole(self) -> None:
        """Forward nothing either way, and close nothing, until `restore()`: a network
        partition, noticed by each end only through its own timeouts."""
        with self._lock:
            self._silent = True

    def restore(self) -> None:
        """Forward again: new connections, and what blackholed connections held (dropped ones
        stay dropped: clients reconnect)."""
        with self._lock:
            self._cut = False
            self._silent = False
            stranded, self._stranded = self._stranded, set()
            self._lock.notify_all()
        for sock in stranded:
            _drop(sock)

    def close(self) -> None:
        """Stop listening and drop every connection."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        self._drop_connections()
        # shutdown() wakes the acceptor blocked in accept(); close() alone would not.
        _drop(self._listener)
        self._acceptor.join(timeout=10)

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------------

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                refused = self._cut or self._closed
                if self._silent and not refused:
                    self._stranded.add(client)
                    continue
            if refused:
                _drop(client)
                continue
            try:
                upstream = socket.create_connection(self._target, timeout=5.0)
            except OSError:
                _drop(client)  # the server is down: the client sees what it would see directly
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._cut or self._closed:  # cut while we connected
                    _drop(client)
                    _drop(upstream)
                    continue
                self._sockets.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink, source is client),
                                 daemon=True, name=f"tcp-proxy-{self.port}-pump").start()

    def _drop_connections(self) -> None:
        with self._lock:
            dropped, self._sockets = self._sockets, set()
            dropped |= self._stranded
            self._stranded = set()
            self._lock.notify_all()
        for sock in dropped:
            _drop(sock)

    def _pump(self, source: socket.socket, sink: socket.socket, upstream: bool) -> None:
        """Copy one direction until either side ends; then end the whole connection. While
        blackholed, a chunk read is held until the restore."""
        try:
            while data := source.recv(_CHUNK):
                if not self._may_forward(source):
                    break
                if upstream:
                    with self._lock:
                        self._last_upstream = time.monotonic()
                sink.sendall(data)
        except OSError:
            pass
        with self._lock:
            self._sockets.discard(source)
            self._sockets.discard(sink)
        _drop(source)
        _drop(sink)

    def _may_forward(self, source: socket.socket) -> bool:
        """Waits out a blackhole; False once the connection was dropped or the proxy closed."""
        with self._lock:
            self._lock.wait_for(lambda: not self._silent or self._closed
                                or source not in self._sockets)
            return not self._closed and source in self._sockets


def _drop(sock: socket.socket) -> None:
    """Shut down (which wakes a thread blocked on the socket) and close, ignoring a socket that
    is already gone."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Forward one address to another until SIGTERM.")
    parser.add_argument("--listen", type=_host_port, required=True, metavar="HOST:PORT")
    parser.add_argument("--to", type=_host_port, required=True, metavar="HOST:PORT")
    args = parser.parse_args(argv)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    with TcpProxy(args.to[1], args.to[0], listen=args.listen):
        print("listening", flush=True)
        stopped.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())

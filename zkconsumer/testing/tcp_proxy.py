"""A loopback TCP proxy whose traffic can be cut, to partition one client from a server.

Freezing a process (SIGSTOP) also stops everything else it does; a member cut off from
ZooKeeper while it keeps fetching from Kafka is a different and more dangerous case: it goes on
running while its session expires on the server and others take its partitions. Giving each
such client its own proxy to the server lets a test or the fault runner cut exactly that
client's connections and later restore them, with no privileges and no firewall.
"""

from __future__ import annotations

import socket
import threading

_CHUNK = 65536


class TcpProxy:
    """Forwards every connection made to `address` to the target, until `cut()`.

    While cut, current connections are closed and new ones are accepted and closed at once (the
    client sees its connection drop, as when a network path fails and a peer resets it), until
    `restore()`. Each connection uses two threads, one per direction.
    """

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self._target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._cut = False
        self._closed = False
        self._acceptor = threading.Thread(target=self._accept, name=f"tcp-proxy-{self.port}",
                                          daemon=True)
        self._acceptor.start()

    @property
    def address(self) -> str:
        """host:port to give the client instead of the server's."""
        return f"127.0.0.1:{self.port}"

    def cut(self) -> None:
        """Drop every current connection and refuse new ones until `restore()`."""
        with self._lock:
            self._cut = True
        self._drop_connections()

    def restore(self) -> None:
        """Forward new connections again (dropped ones stay dropped: clients reconnect)."""
        with self._lock:
            self._cut = False

    def close(self) -> None:
        """Stop listening and drop every connection."""
        with self._lock:
            self._closed = True
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
                threading.Thread(target=self._pump, args=(source, sink), daemon=True,
                                 name=f"tcp-proxy-{self.port}-pump").start()

    def _drop_connections(self) -> None:
        with self._lock:
            dropped, self._sockets = self._sockets, set()
        for sock in dropped:
            _drop(sock)

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        """Copy one direction until either side ends; then end the whole connection."""
        try:
            while data := source.recv(_CHUNK):
                sink.sendall(data)
        except OSError:
            pass
        with self._lock:
            self._sockets.discard(source)
            self._sockets.discard(sink)
        _drop(source)
        _drop(sink)


def _drop(sock: socket.socket) -> None:
    """Shut down (which wakes a thread blocked on the socket) and close, ignoring a socket that
    is already gone."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()

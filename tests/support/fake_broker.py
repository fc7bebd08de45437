"""What the fake brokers of the tests share: a listener on 127.0.0.1 serving each connection
on a thread of its own, request frame by request frame, until it closes."""

from __future__ import annotations

import socket
import struct
import threading


class FakeBroker:
    """Each request frame (after its size) goes to `answer`, whose bytes are sent back with
    their size; None closes the connection, b"" leaves the request unanswered."""

    def __init__(self, name: str) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._name = f"{name}-{self.port}"
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        threading.Thread(target=self._accept, name=self._name, daemon=True).start()

    def answer(self, frame: bytes) -> bytes | None:
        raise NotImplementedError

    def close(self) -> None:
        _drop(self._listener)
        with self._lock:
            connections, self._connections = self._connections, set()
        for connection in connections:
            _drop(connection)

    def __enter__(self):
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                self._connections.add(connection)
            threading.Thread(target=self._serve, args=(connection,), daemon=True,
                             name=f"{self._name}-connection").start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            while (frame := _read_frame(connection)) is not None:
                answer = self.answer(frame)
                if answer is None:
                    break
                if answer:
                    connection.sendall(struct.pack(">i", len(answer)) + answer)
        except OSError:
            pass
        with self._lock:
            self._connections.discard(connection)
        _drop(connection)


def _read_frame(connection: socket.socket) -> bytes | None:
    """The next request after its size; None once the client closed the connection."""
    head = _read_exactly(connection, 4)
    if head is None:
        return None
    return _read_exactly(connection, struct.unpack(">i", head)[0])


def _read_exactly(connection: socket.socket, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _drop(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()

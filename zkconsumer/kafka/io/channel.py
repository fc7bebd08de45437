"""One connection to one broker: framed requests out, framed responses back, in order.

Kafka answers the requests of a connection in the order they were sent, so a channel needs no
bookkeeping beyond the correlation id it expects next. Blocking sockets with a timeout keep this
small; the fetcher decides when to read by asking `selectors` which channels have data.
"""

from __future__ import annotations

import socket
import ssl
from collections import deque

from zkconsumer.kafka.errors import ChannelError
from zkconsumer.kafka.protocol.codec import frame_request, response_correlation_id
from zkconsumer.kafka.protocol.sasl import (
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    SaslExchange,
    authenticate_request,
)


class _ClosedByBroker(ConnectionError):
    pass


# A response's buffer starts at most this large and doubles as its bytes arrive.
_FIRST_ALLOCATION = 1 << 20


class BrokerChannel:
    def __init__(self, host: str, port: int, *, client_id: str, timeout_s: float,
                 ssl_context: ssl.SSLContext | None = None, receive_buffer_bytes: int = 0
                 ) -> None:
        self.address = f"{host}:{port}"
        self._client_id = client_id
        self._timeout_s = timeout_s
        self._next_correlation_id = 0
        self._expected: deque[int] = deque()
        try:
            sock = socket.create_connection((host, port), timeout=timeout_s)
        except (OSError, UnicodeError) as exc:  # UnicodeError: a host name IDNA refuses
            raise ChannelError(f"cannot connect to broker {self.address}: {exc}") from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if receive_buffer_bytes > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_bytes)
            if ssl_context is not None:
                sock = ssl_context.wrap_socket(
                    sock, server_hostname=host if ssl_context.check_hostname else None)
        except OSError as exc:
            sock.close()
            raise ChannelError(f"cannot set up the connection to {self.address}: {exc}") from exc
        self._socket = sock

    def fileno(self) -> int:
        return self._socket.fileno()

    def has_buffered_data(self) -> bool:
        """TLS may hold decrypted bytes that a readiness check on the socket cannot see."""
        return isinstance(self._socket, ssl.SSLSocket) and self._socket.pending() > 0

    def send(self, api_key: int, version: int, body: bytes) -> None:
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
        try:
            self._socket.sendall(frame_request(api_key, version, correlation_id,
                                               self._client_id, body))
        except OSError as exc:
            self.close()
            raise ChannelError(f"sending to broker {self.address} failed: {exc}") from exc
        self._expected.append(correlation_id)

    def receive(self, timeout_s: float | None = None) -> bytearray:
        """The next response, correlation id first; blocks up to `timeout_s`, by default the
        channel's timeout. It is the buffer read into, handed over rather than copied: a fetch
        response runs to megabytes, and copying it took as long as the rest of the receive."""
        payload = self._read_frame(timeout_s, smallest=4)
        expected = self._expected.popleft()
        if response_correlation_id(payload) != expected:
            self.close()
            raise ChannelError(f"broker {self.address} answered out of order")
        return payload

    def request(self, api_key: int, version: int, body: bytes,
                timeout_s: float | None = None) -> bytearray:
        """Send and wait for the answer; only on a channel with nothing else outstanding."""
        self.send(api_key, version, body)
        return self.receive(timeout_s)

    def exchange_bare_token(self, token: bytes) -> bytearray:
        """Send a SASL token as a bare length-prefixed frame and read the broker's, as brokers
        speak them after SaslHandshake v0: no request header, no correlation id."""
        self.send_bare_token(token)
        return self._read_frame(None, smallest=0)

    def send_bare_token(self, token: bytes) -> None:
        """A login's last bare token, which the broker does not answer (GSSAPI's)."""
        try:
            self._socket.sendall(len(token).to_bytes(4, "big") + token)
        except OSError as exc:
            self.close()
            raise ChannelError(f"sending to broker {self.address} failed: {exc}") from exc

    def close(self) -> None:
        self._expected.clear()
        try:
            self._socket.close()
        except OSError:
            pass

    def _read_frame(self, timeout_s: float | None, smallest: int) -> bytearray:
        try:
            if timeout_s is not None:
                self._socket.settimeout(timeout_s)
            size = int.from_bytes(self._read_exactly(4), "big", signed=True)
            if size < smallest:
                raise ChannelError(f"broker {self.address} sent a response of {size} bytes")
            payload = self._read_exactly(size)
            if timeout_s is not None:
                self._socket.settimeout(self._timeout_s)
        except OSError as exc:
            self.close()
            raise ChannelError(f"reading from broker {self.address} failed: {exc}",
                               closed_by_broker=isinstance(exc, _ClosedByBroker),
                               timed_out=isinstance(exc, TimeoutError)) from exc
        return payload

    def _read_exactly(self, size: int) -> bytearray:
        """`size` bytes, in a buffer that grows (doubling) as they arrive: a size a broker
        announces is not trusted with memory before its bytes come (four bytes of an HTTP
        server's answer read as a size ask for a gigabyte)."""
        buffer = bytearray(min(size, _FIRST_ALLOCATION))
        received = 0
        while received < size:
            if received == len(buffer):
                buffer.extend(bytes(min(received, size - received)))
            count = self._socket.recv_into(memoryview(buffer)[received:],
                                           len(buffer) - received)
            if count == 0:
                raise _ClosedByBroker("the broker closed the connection")
            received += count
        return buffer


def sasl_login(channel: BrokerChannel, exchange: SaslExchange) -> None:
    """Log in on a fresh connection (after ApiVersions, before any other request). Raises
    SaslLoginError when the broker refuses the login or closes the connection during it, and
    ChannelError when the connection fails otherwise (a timeout, a reset)."""
    versions = exchange.versions
    token: bytes | None
    try:
        token = exchange.handshake_answered(
            channel.request(SASL_HANDSHAKE, versions.handshake, exchange.handshake()))
        while token is not None:
            if versions.authenticate is None and exchange.final:
                channel.send_bare_token(token)
                token = None
            elif versions.authenticate is None:
                token = exchange.token_answered(bytes(channel.exchange_bare_token(token)))
            else:
                token = exchange.authenticate_answered(channel.request(
                    SASL_AUTHENTICATE, versions.authenticate, authenticate_request(token)))
    except ChannelError as exc:
        if exc.closed_by_broker:
            raise exchange.closed(str(exc)) from None
        raise

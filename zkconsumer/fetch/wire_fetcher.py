"""Fetching a member's partitions with our own Kafka wire client: the fast backend.

Measured on 100-byte records, kafka-python's consumer spends most of its time per record in its
own fetch pipeline rather than on the network. This fetcher speaks Metadata, ListOffsets and
Fetch, as the legacy consumer did, in whichever version each broker speaks (from 0.8 to 4.x,
see `kafka.protocol.codec`), and decodes record sets straight into `Message` tuples, more than twice
as fast (see scripts/bench). It keeps one fetch in flight per leader and sends the next one as
soon as a response is decoded, so the broker prepares data while the streams are being consumed.

What to ask, of whom, and what the answers mean is `fetch_session`'s, which does no I/O; this
module is the I/O around it: the connections, a selector over the fetch connections, a waker,
and the clock. Each broker is asked which versions it speaks (ApiVersions) on the first
connection to its address and again after a request to it failed; one that never answered it
and leaves it unanswered until the timeout (0.9) is connected to again and spoken to in the
legacy consumer's versions.

It covers PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL with every mechanism kafka-python has
(PLAIN, SCRAM-SHA-256/512, OAUTHBEARER, GSSAPI: see `sasl`): every connection logs in right
after ApiVersions, and a refused login fails the member at once with one line, since no retry
can cure a wrong password. A kafka-python option it does not know makes the connector choose
the kafka-python backend instead: see `fetcher.py`.
"""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from zkconsumer.kafka.errors import ChannelError, FetchError
from zkconsumer.kafka.io.channel import BrokerChannel
from zkconsumer.kafka.io.connect import parse_servers
from zkconsumer.kafka.io.opener import Dialer, open_broker
from zkconsumer.kafka.protocol.broker_versions import Link
from zkconsumer.kafka.protocol.fetch_session import FetchSession, Received, Request
from zkconsumer.kafka.protocol.sasl import SASL_SECURITY_PROTOCOLS, SaslVersions
from zkconsumer.logs import get_logger
from zkconsumer.model import TopicPartition

if TYPE_CHECKING:
    from zkconsumer.records.columns import RecordColumns

log = get_logger(__name__)

# The kafka-python options this fetcher honours; any other one chooses the kafka-python backend.
WIRE_OPTIONS = frozenset({
    "bootstrap_servers", "api_version", "group_id", "enable_auto_commit", "client_id",
    "max_partition_fetch_bytes", "fetch_min_bytes", "fetch_max_wait_ms", "request_timeout_ms",
    "connections_max_idle_ms", "retry_backoff_ms", "auto_offset_reset", "receive_buffer_bytes",
    "check_crcs", "security_protocol", "ssl_cafile", "ssl_certfile", "ssl_keyfile",
    "ssl_password", "ssl_check_hostname", "ssl_crlfile", "ssl_ciphers", "isolation_level",
    "sasl_mechanism", "sasl_plain_username", "sasl_plain_password", "sasl_oauth_token_provider",
    "sasl_kerberos_service_name", "sasl_kerberos_domain_name", "sasl_kerberos_name",
})
WIRE_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", *SASL_SECURITY_PROTOCOLS)
# kafka-python's default: below the broker's own connections.max.idle.ms (10 minutes).
_MAX_IDLE_MS = 540_000


class _Connection:
    """A channel to a broker, with what the session knows of it (`link`) and when a request
    last started on it (monotonic seconds)."""

    __slots__ = ("channel", "link", "used_at")

    def __init__(self, channel: BrokerChannel, link: Link, now: float) -> None:
        self.channel = channel
        self.link = link
        self.used_at = now


class _SessionVersions:
    """The fetch session's knowledge of each broker's versions, as the opener asks for it."""

    def __init__(self, session: FetchSession) -> None:
        self._session = session

    def known(self, address: str) -> Link | None:
        return self._session.link(address)

    def answered(self, address: str, payload: bytearray) -> Link:
        return self._session.api_versions_answered(address, payload)

    def unanswered(self, address: str, failure: ChannelError) -> Link:
        return self._session.api_versions_failed(address, failure)

    def sasl(self, known: Link) -> SaslVersions:
        return self._session.sasl_versions(known.address)


class WireFetcher:
    """Same interface as the kafka-python backend. Not thread-safe: the fetch loop serialises
    every call.

    A partition whose leader is unknown, moved or unreachable, or that its leader answered with
    a retriable error, is set aside (its leader forgotten) until the next metadata refresh, at
    most every `refresh.leader.backoff.ms`; the other partitions keep flowing meanwhile (see
    `fetch_session`).
    """

    ends_polls_at_answers = True  # `_collect` returns with the first answers

    def __init__(self, settings: Mapping[str, Any],
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`clock` (monotonic seconds) is every time the fetcher and its session go by, so
        tests can move it instead of waiting it out."""
        self._clock = clock
        self._session = FetchSession(settings, parse_servers(settings["bootstrap_servers"]))
        self._max_idle_s = settings.get("connections_max_idle_ms", _MAX_IDLE_MS) / 1000.0
        try:
            self._dialer = Dialer.from_settings(settings)
        except (OSError, ValueError) as exc:
            raise FetchError(f"cannot set up TLS for Kafka: {exc}") from exc
        self._versions = _SessionVersions(self._session)
        self._fetch_connections: dict[int, _Connection] = {}
        self._control_connections: dict[int, _Connection] = {}
        # One selector for the fetcher's life: making one per poll cost more CPU than everything
        # else an idle member does.
        self._selector = selectors.DefaultSelector()
        self._selected: set[int] = set()  # nodes whose fetch channel the selector watches
        # `wakeup` writes here to end a wait early (data None marks it in the selector).
        self._waker, self._wake_signal = socket.socketpair()
        self._waker.setblocking(False)
        self._wake_signal.setblocking(False)
        self._selector.register(self._waker, selectors.EVENT_READ, None)
        # Told (broker "host:port", seconds from request sent to response read) of each fetch
        # response: the member's metrics set it.
        self.observe_fetch: Callable[[str, float], None] | None = None

    # -- the fetcher interface ----------------------------------------------------------------

    def assign(self, positions: Mapping[TopicPartition, int | None],
               restart: Collection[TopicPartition] = ()) -> None:
        """Fetch exactly these partitions; those already assigned keep their position unless
        listed in `restart`."""
        self._session.assign(positions, restart, self._clock())

    def poll(self, timeout_ms: int) -> dict[TopicPartition, RecordColumns]:
        session = self._session
        if not session.assigned:
            return {}
        now = self._clock()
        deadline = now + timeout_ms / 1000.0
        if session.metadata_due(now):
            self._refresh_metadata(now)
        self._reset_positions()
        self._send_fetches(session.fetch_nodes())
        return self._collect(deadline)

    def position(self, tp: TopicPartition) -> int | None:
        """The next offset to fetch; None while a reset by `auto.offset.reset` is pending."""
        return self._session.position(tp)

    def high_watermark(self, tp: TopicPartition) -> int | None:
        """The partition's high watermark in its leader's last fetch answer; None before one."""
        return self._session.high_watermark(tp)

    def wakeup(self) -> None:
        """End the current `poll` at once; safe from any thread (the fetch loop's routing)."""
        try:
            self._wake_signal.send(b"\0")
        except (BlockingIOError, OSError):
            pass  # a wake-up is already pending, or the fetcher is closed

    def close(self) -> None:
        self._drop_channels({*self._fetch_connections, *self._control_connections})
        self._selector.close()
        self._waker.close()
        self._wake_signal.close()

    # -- requests -----------------------------------------------------------------------------

    def _refresh_metadata(self, now: float) -> None:
        """Ask the brokers the session names, in turn, until one answers, each on a connection
        of its own, closed at once."""
        session = self._session
        for host, port in session.metadata_round(now):
            try:
                connection = self._open(host, port)
            except ChannelError as exc:
                session.metadata_unreachable(str(exc))
                continue
            try:
                received = self._exchange(
                    connection, session.metadata_request(connection.link, self._clock()))
            finally:
                connection.channel.close()
            if received is not None and received.answered:
                return
        session.metadata_unanswered(self._clock())

    def _reset_positions(self) -> None:
        session = self._session
        for node in session.reset_nodes():
            try:
                connection = self._control_connection(node)
            except ChannelError as exc:
                self._lose_node(node, str(exc))
                continue
            self._exchange(connection,
                           session.offsets_request(node, connection.link, self._clock()))

    def _exchange(self, connection: _Connection, request: Request) -> Received | None:
        """One request answered on a control connection, handed to the session; None when the
        connection failed (the session was told, and the channels it gave up are dropped)."""
        try:
            payload = connection.channel.request(request.api_key, request.version, request.body)
        except ChannelError as exc:
            self._drop_channels(self._session.failed(request, exc, self._clock()))
            return None
        received = self._session.receive(request, payload, self._clock())
        self._drop_channels(received.lost)
        return received

    def _send_fetches(self, nodes: Iterable[int]) -> None:
        for node in nodes:
            try:
                connection = self._connection(self._fetch_connections, node)
            except ChannelError as exc:
                self._lose_node(node, str(exc))
                continue
            request = self._session.fetch_request(node, connection.link, self._clock())
            if request is None:
                continue
            try:
                connection.channel.send(request.api_key, request.version, request.body)
            except ChannelError as exc:
                self._lose_node(node, str(exc))
                continue
            if node not in self._selected:
                self._selector.register(connection.channel, selectors.EVENT_READ, node)
                self._selected.add(node)

    def _collect(self, deadline: float) -> dict[TopicPartition, RecordColumns]:
        """Wait for the first answers, up to the deadline, and ask each broker that answered
        for more at once, so that it prepares the next response while this one is consumed."""
        session = self._session
        results: dict[TopicPartition, RecordColumns] = {}
        for node in self._ready_nodes(session.wait_until(deadline, self._clock())):
            connection = self._fetch_connections[node]
            request = session.in_flight.get(node)
            if request is None:
                # Readable with nothing asked: the broker closed the connection.
                self._lose_node(node, f"broker {connection.link.address} closed the connection")
                continue
            try:
                payload = connection.channel.receive()
            except ChannelError as exc:
                self._drop_channels(session.failed(request, exc, self._clock()))
                continue
            now = self._clock()
            if self.observe_fetch is not None:
                self.observe_fetch(connection.link.address, now - request.sent_at)
            received = session.receive(request, payload, now)
            self._drop_channels(received.lost)
            if received.answered:
                results.update(received.records)
                self._send_fetches([node])
        self._drop_channels(session.expire(self._clock()))
        return results

    def _ready_nodes(self, deadline: float) -> list[int]:
        buffered = [node for node in self._session.in_flight
                    if self._fetch_connections[node].channel.has_buffered_data()]
        if buffered:
            return buffered
        ready = self._selector.select(max(0.0, deadline - self._clock()))
        nodes = [key.data for key, _ in ready if key.data is not None]
        if len(nodes) < len(ready):
            self._drain_wakeups()
        return nodes

    def _drain_wakeups(self) -> None:
        try:
            while self._waker.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    # -- connections --------------------------------------------------------------------------

    def _connection(self, connections: dict[int, _Connection], node: int) -> _Connection:
        """The node's open connection, or a new one."""
        connection = connections.get(node)
        if connection is None:
            host, port = self._session.address_of(node)
            connection = connections[node] = self._open(host, port)
        return connection

    def _control_connection(self, node: int) -> _Connection:
        """The connection for the node's ListOffsets requests, which may sit unused for hours
        between offset resets. A broker closes a connection idle for its
        connections.max.idle.ms, so one idle for longer than `connections_max_idle_ms` (set
        below the broker's) is opened again rather than found closed by the next request. Idle
        counts from when the last request started: the safe side."""
        now = self._clock()
        connection = self._control_connections.get(node)
        if connection is not None and now - connection.used_at > self._max_idle_s:
            del self._control_connections[node]
            connection.channel.close()
        connection = self._connection(self._control_connections, node)
        connection.used_at = now
        return connection

    def _open(self, host: str, port: int) -> _Connection:
        """A connection to the broker (`open_broker`), in the versions known for its address or
        else in those its ApiVersions answer gives, logged in if SASL is set. ChannelError: the
        connection failed, that answer included; SaslLoginError (a FetchError): the login was
        refused."""
        opened = open_broker(self._dialer, host, port, self._versions)
        return _Connection(opened.channel, opened.known, self._clock())

    def _lose_node(self, node: int, reason: str) -> None:
        """A broker failed us: close its connections and set its partitions aside."""
        self._session.node_lost(node, reason, self._clock())
        self._drop_channels([node])

    def _drop_channels(self, nodes: Iterable[int]) -> None:
        for node in nodes:
            fetch_connection = self._fetch_connections.pop(node, None)
            if fetch_connection is not None:
                if node in self._selected:
                    # also once closed: found by identity
                    self._selector.unregister(fetch_connection.channel)
                    self._selected.discard(node)
                fetch_connection.channel.close()
            control_connection = self._control_connections.pop(node, None)
            if control_connection is not None:
                control_connection.channel.close()


def wire_unsupported_reason(settings: Mapping[str, Any]) -> str | None:
    """Why the wire backend cannot honour these kafka-python settings, or None if it can
    (every SASL mechanism it can: an unknown one is the opener's ConfigError on any path)."""
    protocol_name = settings.get("security_protocol", "PLAINTEXT")
    if protocol_name not in WIRE_SECURITY_PROTOCOLS:
        return f"kafka.security.protocol={protocol_name}"
    foreign = sorted(set(settings) - WIRE_OPTIONS)
    if foreign:
        return "kafka." + foreign[0].replace("_", ".")
    return None

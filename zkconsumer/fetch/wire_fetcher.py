"""Fetching a member's partitions with our own Kafka wire client: the fast backend.

Measured on 100-byte records, kafka-python's consumer spends most of its time per record in its
own fetch pipeline rather than on the network. This fetcher speaks Metadata, ListOffsets and
Fetch, as the legacy consumer did, in whichever version each broker speaks (from 0.8 to 4.x,
see `kafka_protocol`), and decodes record sets straight into `Message` tuples, more than twice
as fast (see scripts/bench). It keeps one fetch in flight per leader and sends the next one as
soon as a response is decoded, so the broker prepares data while the streams are being consumed.

Each broker is asked first which versions it speaks (ApiVersions, on the first connection to
its address and again after a request to it failed) and spoken to in the newest both sides
know; one that never answered it and leaves it unanswered until the timeout (0.9) gets the
legacy consumer's versions. A broker that answers a version in a form that cannot be read, with UNSUPPORTED_VERSION, or by
closing a connection before it answered that request on it, is asked again a few times before
the member fails with one line naming the broker and the request. `broker_versions` keeps that
bookkeeping; this module is the fetch loop around it.

It covers PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL with the mechanisms PLAIN, SCRAM-SHA-256
and SCRAM-SHA-512 (see `sasl`): every connection logs in right after ApiVersions, and a refused
login fails the member at once with one line, since no retry can cure a wrong password. Anything
else (GSSAPI, OAUTHBEARER, or a kafka-python option it does not know) makes the connector choose
the kafka-python backend instead: see `fetcher.py`.

Transient trouble (a broker restarting, a leader moving, a connection dropping, an error code
Kafka calls retriable, or an unknown server error) sets the partitions concerned aside until
metadata names a reachable leader again, asked at most every `refresh.leader.backoff.ms`, for as
long as it lasts, as the legacy consumer did; the other partitions keep flowing. Errors no retry
can fix (a message larger than `fetch.message.max.bytes`, corrupt data, any other error code:
see `retry_policy`) raise `FetchError`.
"""

from __future__ import annotations

import selectors
import socket
import ssl
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from zkconsumer.fetch import kafka_protocol as protocol
from zkconsumer.fetch.broker_channel import BrokerChannel, ChannelError, sasl_login
from zkconsumer.fetch.broker_versions import BrokerVersions, Connection, Trouble
from zkconsumer.fetch.errors import FetchError
from zkconsumer.fetch.message_sets import CorruptMessageError
from zkconsumer.fetch.records import decode_records
from zkconsumer.fetch.retry_policy import (
    OFFSET_OUT_OF_RANGE,
    describe_error,
    error_name,
    is_retriable,
)
from zkconsumer.fetch.sasl import (
    SASL_SECURITY_PROTOCOLS,
    WIRE_MECHANISMS,
    SaslExchange,
    credentials_from,
)
from zkconsumer.logs import get_logger
from zkconsumer.model import Message, TopicPartition
from zkconsumer.throttled_log import RetryWarnings

log = get_logger(__name__)

# The kafka-python options this fetcher honours; any other one chooses the kafka-python backend.
WIRE_OPTIONS = frozenset({
    "bootstrap_servers", "api_version", "group_id", "enable_auto_commit", "client_id",
    "max_partition_fetch_bytes", "fetch_min_bytes", "fetch_max_wait_ms", "request_timeout_ms",
    "connections_max_idle_ms", "retry_backoff_ms", "auto_offset_reset", "receive_buffer_bytes",
    "check_crcs", "security_protocol", "ssl_cafile", "ssl_certfile", "ssl_keyfile",
    "ssl_password", "ssl_check_hostname", "ssl_crlfile", "ssl_ciphers", "isolation_level",
    "sasl_mechanism", "sasl_plain_username", "sasl_plain_password",
})
WIRE_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", *SASL_SECURITY_PROTOCOLS)
_TLS_PROTOCOLS = ("SSL", "SASL_SSL")
ISOLATION_LEVELS = {"read_uncommitted": protocol.READ_UNCOMMITTED,
                    "read_committed": protocol.READ_COMMITTED}
_IDLE_S = 0.01
# A broker that speaks ApiVersions answers it at once; 0.9 never does, so waiting for it is
# bounded by this rather than by `request_timeout_ms`.
_API_VERSIONS_TIMEOUT_S = 5.0
# kafka-python's default: below the broker's own connections.max.idle.ms (10 minutes).
_MAX_IDLE_MS = 540_000
# Partitions with no known leader are normal for a moment: a topic just created, a leader
# being elected. Every member of a group that meets one warned at once (a line per member per
# rebalance); a wait that outlasts this is worth a warning.
LEADER_WAIT_WARN_S = 5.0


class WireFetcher:
    """Same interface as the kafka-python backend. Not thread-safe: the fetch loop serialises
    every call.

    A partition whose leader is unknown, moved or unreachable, or that its leader answered with
    a retriable error, is set aside (its leader forgotten) until the next metadata refresh, at
    most every `refresh.leader.backoff.ms`; the other partitions keep flowing meanwhile.
    """

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self._addresses = parse_servers(settings["bootstrap_servers"])
        self._isolation_level = ISOLATION_LEVELS[settings.get("isolation_level",
                                                              "read_uncommitted")]
        self._versions = BrokerVersions(settings.get("api_version"), self._isolation_level)
        self._client_id = settings["client_id"]
        self._max_wait_ms = settings["fetch_max_wait_ms"]
        self._min_bytes = settings["fetch_min_bytes"]
        self._max_bytes = settings["max_partition_fetch_bytes"]
        self._timeout_s = settings["request_timeout_ms"] / 1000.0
        self._api_versions_timeout_s = min(self._timeout_s, _API_VERSIONS_TIMEOUT_S)
        self._backoff_s = settings["retry_backoff_ms"] / 1000.0
        self._max_idle_s = settings.get("connections_max_idle_ms", _MAX_IDLE_MS) / 1000.0
        self._reset_time = (protocol.EARLIEST if settings["auto_offset_reset"] == "earliest"
                            else protocol.LATEST)
        self._check_crcs = settings.get("check_crcs", True)
        self._receive_buffer_bytes = settings.get("receive_buffer_bytes") or 0
        try:
            self._ssl_context = ssl_context_for(settings)
        except (OSError, ValueError) as exc:
            raise FetchError(f"cannot set up TLS for Kafka: {exc}") from exc
        self._credentials = credentials_from(settings)
        # None: reset before fetching. In fetch order: a partition that got data moves last, so
        # that a response filled up (Fetch v3+) cannot starve the partitions asked for after it.
        self._positions: dict[TopicPartition, int | None] = {}
        self._high_watermarks: dict[TopicPartition, int] = {}
        self._leaders: dict[TopicPartition, int] = {}
        self._nodes: dict[int, tuple[str, int]] = {}
        self._fetch_connections: dict[int, Connection] = {}
        self._control_connections: dict[int, Connection] = {}
        # per node: the offsets asked for, when the request was sent, the Fetch version asked
        self._in_flight: dict[int, tuple[dict[TopicPartition, int], float, int]] = {}
        # per node: the last fetch request, with what it asked (see `_fetch_request`)
        self._last_requests: dict[int, tuple[tuple, bytes]] = {}
        self._refresh_at = 0.0  # no metadata refresh before this (monotonic seconds)
        self._warnings = RetryWarnings(log)
        # Partitions set aside that have not fetched since; the trouble lasts while any is left.
        self._troubled: set[TopicPartition] = set()
        self._trouble_since: float | None = None
        self._trouble_warned = False  # whether this trouble has been warned about
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
        listed in `restart`. A response in flight for a partition that moved is dropped when it
        arrives, because the position it was asked for no longer matches."""
        wanted = set(positions)
        new = (wanted - self._positions.keys()) | (set(restart) & wanted)
        self._positions = {tp: positions[tp] if tp in new else self._positions[tp]
                           for tp in positions}
        self._high_watermarks = {tp: mark for tp, mark in self._high_watermarks.items()
                                 if tp in wanted}
        self._settle(self._troubled - wanted)

    def poll(self, timeout_ms: int) -> dict[TopicPartition, Sequence[Message]]:
        if not self._positions:
            return {}
        deadline = time.monotonic() + timeout_ms / 1000.0
        leaderless = any(tp not in self._leaders for tp in self._positions)
        if leaderless and time.monotonic() >= self._refresh_at:
            self._refresh_metadata()
        self._reset_positions()
        self._send_fetches(self._nodes_to_fetch_from())
        return self._collect(deadline)

    def position(self, tp: TopicPartition) -> int | None:
        """The next offset to fetch; None while a reset by `auto.offset.reset` is pending."""
        return self._positions.get(tp)

    def high_watermark(self, tp: TopicPartition) -> int | None:
        """The partition's high watermark in its leader's last fetch answer; None before one."""
        return self._high_watermarks.get(tp)

    def wakeup(self) -> None:
        """End the current `poll` at once; safe from any thread (the fetch loop's routing)."""
        try:
            self._wake_signal.send(b"\0")
        except (BlockingIOError, OSError):
            pass  # a wake-up is already pending, or the fetcher is closed

    def close(self) -> None:
        for node in {*self._fetch_connections, *self._control_connections}:
            self._drop_channels(node)
        self._selector.close()
        self._waker.close()
        self._wake_signal.close()

    # -- fetching ---------------------------------------------------------------------------

    def _nodes_to_fetch_from(self) -> set[int]:
        return {self._leaders[tp] for tp, position in self._positions.items()
                if position is not None and tp in self._leaders}

    def _send_fetches(self, nodes: Collection[int]) -> None:
        for node in nodes:
            if node in self._in_flight:
                continue
            offsets = {tp: position for tp, position in self._positions.items()
                       if position is not None and self._leaders.get(tp) == node}
            if not offsets:
                continue
            try:
                connection = self._connection(self._fetch_connections, node)
                version = connection.versions.fetch
                connection.channel.send(protocol.FETCH, version,
                                        self._fetch_request(node, offsets, version))
            except ChannelError as exc:
                self._lose_node(node, str(exc))
                continue
            if node not in self._selected:
                self._selector.register(connection.channel, selectors.EVENT_READ, node)
                self._selected.add(node)
            self._in_flight[node] = (offsets, time.monotonic(), version)

    def _fetch_request(self, node: int, offsets: dict[TopicPartition, int], version: int
                       ) -> bytes:
        """The request body, built again only when what is asked changed: a member that keeps
        up asks the same offsets, in the same order, poll after poll, and building the request
        was most of an idle poll's cost."""
        asked = (version, tuple(offsets.items()))
        last = self._last_requests.get(node)
        if last is None or last[0] != asked:
            last = self._last_requests[node] = (asked, protocol.fetch_request(
                self._max_wait_ms, self._min_bytes, offsets, self._max_bytes, version,
                self._isolation_level))
        return last[1]

    def _collect(self, deadline: float) -> dict[TopicPartition, Sequence[Message]]:
        """Wait for the first answers, up to the deadline, and ask each broker that answered
        for more at once, so that it prepares the next response while this one is consumed."""
        results: dict[TopicPartition, Sequence[Message]] = {}
        if not self._in_flight:
            # Every partition waits for a leader or a reset: nothing can arrive before the next
            # metadata refresh, unless a wake-up comes.
            deadline = min(deadline, max(self._refresh_at, time.monotonic() + _IDLE_S))
        for node in self._ready_nodes(deadline):
            if node not in self._in_flight:
                # Readable with nothing asked: the broker closed the connection.
                self._lose_node(node, f"broker {self._fetch_connections[node].address} closed "
                                      "the connection")
                continue
            offsets, sent, version = self._in_flight.pop(node)
            connection = self._fetch_connections[node]
            try:
                response = protocol.decode_fetch(version, connection.channel.receive())
            except (ChannelError, protocol.ProtocolError) as exc:
                self._setback(node, self._versions.failed(connection, protocol.FETCH, version,
                                                          exc))
                continue
            if self.observe_fetch is not None:
                self.observe_fetch(connection.address, time.monotonic() - sent)
            if not self._took_version(node, connection, protocol.FETCH, version, [
                    response.error, *(fetched.error for fetched in response.partitions)]):
                continue
            errors: dict[int, list[TopicPartition]] = {}
            if response.error:
                for tp in offsets:
                    _note_error(errors, response.error, tp)
            for fetched in response.partitions:
                self._absorb(fetched, offsets, results, errors)
            self._set_aside(errors)
            self._send_fetches([node])
        self._expire_overdue()
        return results

    def _ready_nodes(self, deadline: float) -> list[int]:
        buffered = [node for node in self._in_flight
                    if self._fetch_connections[node].channel.has_buffered_data()]
        if buffered:
            return buffered
        ready = self._selector.select(max(0.0, deadline - time.monotonic()))
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

    def _absorb(self, fetched: protocol.FetchedPartition, offsets: Mapping[TopicPartition, int],
                results: dict[TopicPartition, Sequence[Message]],
                errors: dict[int, list[TopicPartition]]) -> None:
        """Take one partition's answer: its messages into `results`, a retriable error code
        into `errors`, to be set aside once the whole response is read."""
        tp = fetched.partition
        asked = offsets.get(tp)
        if asked is None or self._positions.get(tp) != asked:
            return  # released or moved since the request went out
        if fetched.error == OFFSET_OUT_OF_RANGE:
            log.warning("offset out of range, resetting", partition=str(tp), offset=asked,
                        reset_to="earliest" if self._reset_time == protocol.EARLIEST
                        else "latest")
            self._positions[tp] = None
            return
        if fetched.error:
            _note_error(errors, fetched.error, tp)
            return
        self._high_watermarks[tp] = fetched.high_watermark
        if self._troubled:
            self._settle([tp])
        aborted = None
        if self._isolation_level == protocol.READ_COMMITTED:
            aborted = fetched.aborted or []
        try:
            decoded = decode_records(fetched.records, tp.topic, tp.partition, asked,
                                     self._check_crcs, aborted, fetch_bytes=self._max_bytes)
        except CorruptMessageError as exc:
            raise FetchError(str(exc)) from exc
        if decoded.next_offset is not None:
            del self._positions[tp]  # to the end of the fetch order
            self._positions[tp] = decoded.next_offset
        elif decoded.truncated:
            raise FetchError(
                f"the message at offset {asked} of {tp} is larger than fetch.message.max.bytes "
                f"({self._max_bytes}); raise it to consume this partition")
        if decoded.messages:
            results[tp] = decoded.messages

    def _expire_overdue(self) -> None:
        now = time.monotonic()
        for node in [n for n, (_, sent, _) in self._in_flight.items()
                     if sent + self._timeout_s < now]:
            self._lose_node(node, f"broker {self._fetch_connections[node].address} did not answer "
                                  "a fetch in time")

    # -- metadata and offset resets ---------------------------------------------------------

    def _refresh_metadata(self) -> None:
        self._refresh_at = time.monotonic() + self._backoff_s
        topics = sorted({tp.topic for tp in self._positions})
        failures = []
        given_up = None  # a broker asked too often in vain: fatal if none answers
        for host, port in dict.fromkeys([*self._nodes.values(), *self._addresses]):
            try:
                connection = self._open(host, port)
            except ChannelError as exc:
                failures.append(str(exc))
                continue
            version = connection.versions.metadata
            try:
                metadata = protocol.decode_metadata(connection.channel.request(
                    protocol.METADATA, version, protocol.metadata_request(topics, version)),
                    version)
            except (ChannelError, protocol.ProtocolError) as exc:
                trouble = self._versions.failed(connection, protocol.METADATA, version, exc)
                failures.append(trouble.reason)
                given_up = trouble.given_up or given_up
                continue
            finally:
                connection.close()
            self._versions.answered(connection, protocol.METADATA, version)
            self._apply_metadata(metadata)
            return
        if given_up is not None:
            raise FetchError(given_up)
        self._report_trouble("no broker answered a metadata request; retrying",
                             [tp for tp in self._positions if tp not in self._leaders],
                             errors=failures[-3:], retry_in_ms=round(self._backoff_s * 1000))

    def _apply_metadata(self, metadata: protocol.Metadata) -> None:
        for node, address in list(self._nodes.items()):
            if metadata.brokers.get(node) != address:
                self._drop_channels(node)
        self._nodes = dict(metadata.brokers)
        # Every partition of the topics, not only those fetched now: the next rebalance then
        # finds its new partitions' leaders known (a stale one answers "not the leader").
        self._leaders = {tp: leader for tp, leader in metadata.leaders.items()
                         if leader in self._nodes}
        missing = [tp for tp in self._positions if tp not in self._leaders]
        if missing:
            self._report_trouble("waiting for partition leaders", missing,
                                 quiet_for_s=LEADER_WAIT_WARN_S)

    def _reset_positions(self) -> None:
        by_node: dict[int, dict[TopicPartition, int]] = {}
        errors: dict[int, list[TopicPartition]] = {}
        for tp, position in self._positions.items():
            if position is None and tp in self._leaders:
                by_node.setdefault(self._leaders[tp], {})[tp] = self._reset_time
        for node, times in by_node.items():
            try:
                connection = self._control_connection(node)
            except ChannelError as exc:
                self._lose_node(node, str(exc))
                continue
            version = connection.versions.list_offsets
            try:
                answer = protocol.decode_list_offsets(connection.channel.request(
                    protocol.LIST_OFFSETS, version, protocol.list_offsets_request(
                        times, version, self._isolation_level, round(self._timeout_s * 1000))),
                    version)
            except (ChannelError, protocol.ProtocolError) as exc:
                self._setback(node, self._versions.failed(connection, protocol.LIST_OFFSETS,
                                                          version, exc))
                continue
            if not self._took_version(node, connection, protocol.LIST_OFFSETS, version,
                                      [error for error, _ in answer.values()]):
                continue
            for tp, (error, offset) in answer.items():
                if tp not in times or self._positions.get(tp, 0) is not None:
                    continue
                if error:
                    _note_error(errors, error, tp)
                elif offset is None:
                    raise FetchError(f"the broker answered no log offset for {tp}")
                else:
                    self._positions[tp] = offset
        self._set_aside(errors)

    def _set_aside(self, errors: Mapping[int, list[TopicPartition]]) -> None:
        """Set aside the partitions a broker answered with retriable errors, one report per
        error code."""
        for code, partitions in errors.items():
            self._forget_leaders(partitions, f"Kafka error {code} {error_name(code)}")

    def _forget_leaders(self, partitions: Collection[TopicPartition], reason: str) -> None:
        """Set these partitions aside until metadata names their leaders again."""
        for tp in partitions:
            self._leaders.pop(tp, None)
        self._refresh_at = max(self._refresh_at, time.monotonic() + self._backoff_s)
        self._report_trouble("partitions wait for their leader",
                             [tp for tp in partitions if tp in self._positions], reason=reason,
                             retry_in_ms=round(self._backoff_s * 1000))

    def _report_trouble(self, event: str, partitions: list[TopicPartition],
                        reason: str | None = None, quiet_for_s: float = 0.0,
                        **fields: Any) -> None:
        """Count these partitions troubled until they fetch again, and report the trouble:
        warned about when it starts (or once it has lasted `quiet_for_s`; debug before), then
        at most every 30 s per event and reason (see `RetryWarnings`)."""
        now = time.monotonic()
        self._troubled.update(partitions)
        if self._troubled and self._trouble_since is None:
            self._trouble_since = now
        if reason is not None:
            fields["reason"] = reason
        lasted = round(now - (self._trouble_since or now), 1)
        details = {"for_s": lasted, "partitions": [str(tp) for tp in partitions[:8]],
                   "count": len(partitions), **fields}
        if lasted < quiet_for_s:
            log.debug(event, **details)
            return
        self._trouble_warned |= self._warnings.report((event, reason), event, **details)

    def _settle(self, partitions: Collection[TopicPartition]) -> None:
        """These partitions fetch again, or are no longer ours: once none is left troubled, say
        that the trouble is over (at info if it was warned about)."""
        self._troubled.difference_update(partitions)
        if self._troubled or self._trouble_since is None:
            return
        report = log.info if self._trouble_warned else log.debug
        report("every partition fetches again",
               after_s=round(time.monotonic() - self._trouble_since, 1))
        self._trouble_since = None
        self._trouble_warned = False

    # -- connections ------------------------------------------------------------------------

    def _connection(self, connections: dict[int, Connection], node: int) -> Connection:
        """The node's open connection, or a new one."""
        connection = connections.get(node)
        if connection is None:
            host, port = self._nodes[node]
            connection = connections[node] = self._open(host, port)
        return connection

    def _control_connection(self, node: int) -> Connection:
        """The connection for the node's ListOffsets requests, which may sit unused for hours
        between offset resets. A broker closes a connection idle for its
        connections.max.idle.ms, so one idle for longer than `connections_max_idle_ms` (set
        below the broker's) is opened again rather than found closed by the next request. Idle
        counts from when the last request started: the safe side."""
        now = time.monotonic()
        connection = self._control_connections.get(node)
        if connection is not None and now - connection.used_at > self._max_idle_s:
            del self._control_connections[node]
            connection.close()
        connection = self._connection(self._control_connections, node)
        connection.used_at = now
        return connection

    def _open(self, host: str, port: int) -> Connection:
        """A connection to the broker, in the versions known for its address or else in those
        its ApiVersions answer gives, logged in if SASL is set. ChannelError: the connection
        failed, that answer included; SaslLoginError (a FetchError): the login was refused."""
        channel = self._connect(host, port)
        try:
            versions = self._versions.known(channel.address)
            connection = (Connection(channel, versions) if versions is not None
                          else self._ask_versions(channel, host, port))
        except (ChannelError, FetchError):
            channel.close()
            raise
        if self._credentials is not None:
            try:
                sasl_login(connection.channel, SaslExchange(
                    connection.address, self._credentials,
                    self._versions.sasl(connection.address)))
            except (ChannelError, FetchError):
                connection.close()
                raise
            log.debug("logged in", broker=connection.address,
                      mechanism=self._credentials.mechanism, user=self._credentials.username)
        return connection

    def _ask_versions(self, channel: BrokerChannel, host: str, port: int) -> Connection:
        """Ask the broker which versions it speaks. One that leaves the question unanswered
        (0.9) is connected to again and spoken to as a pre-0.10 broker: one more connection
        per broker, not per request."""
        address = channel.address
        try:
            offered = protocol.decode_api_versions(channel.request(
                protocol.API_VERSIONS, 0, protocol.API_VERSIONS_REQUEST,
                timeout_s=self._api_versions_timeout_s))
        except (ChannelError, protocol.ProtocolError) as exc:
            versions = self._versions.not_answered(address, exc)
            log.info("broker does not answer ApiVersions; speaking the pre-0.10 versions",
                     broker=address, reason=str(exc), **versions._asdict())
            channel.close()
            return Connection(self._connect(host, port), versions)
        versions = self._versions.offered(address, offered)
        log.debug("broker versions negotiated", broker=address, **versions._asdict())
        return Connection(channel, versions)

    def _connect(self, host: str, port: int) -> BrokerChannel:
        return BrokerChannel(host, port, client_id=self._client_id, timeout_s=self._timeout_s,
                             ssl_context=self._ssl_context,
                             receive_buffer_bytes=self._receive_buffer_bytes)

    def _took_version(self, node: int, connection: Connection, api_key: int, version: int,
                      errors: Collection[int]) -> bool:
        """Whether the broker took this request version, answering with these error codes;
        if it did not (UNSUPPORTED_VERSION), it is asked again after the backoff."""
        trouble = self._versions.answered(connection, api_key, version, errors)
        if trouble is not None:
            self._setback(node, trouble)
        return trouble is None

    def _setback(self, node: int, trouble: Trouble) -> None:
        """A request to this node got no usable answer: fail if its version was rejected too
        often in a row, else set its partitions aside until the backoff has passed."""
        if trouble.given_up is not None:
            raise FetchError(trouble.given_up)
        self._lose_node(node, trouble.reason)

    def _lose_node(self, node: int, reason: str) -> None:
        """A broker failed us: close its connections and set its partitions aside."""
        self._drop_channels(node)
        self._forget_leaders([tp for tp, leader in self._leaders.items() if leader == node],
                             reason)

    def _drop_channels(self, node: int) -> None:
        self._in_flight.pop(node, None)
        fetch_connection = self._fetch_connections.pop(node, None)
        if fetch_connection is not None:
            if node in self._selected:
                # also once closed: found by identity
                self._selector.unregister(fetch_connection.channel)
                self._selected.discard(node)
            fetch_connection.close()
        control_connection = self._control_connections.pop(node, None)
        if control_connection is not None:
            control_connection.close()


def wire_unsupported_reason(settings: Mapping[str, Any]) -> str | None:
    """Why the wire backend cannot honour these kafka-python settings, or None if it can."""
    protocol_name = settings.get("security_protocol", "PLAINTEXT")
    if protocol_name not in WIRE_SECURITY_PROTOCOLS:
        return f"kafka.security.protocol={protocol_name}"
    mechanism = settings.get("sasl_mechanism")
    if (protocol_name in SASL_SECURITY_PROTOCOLS and mechanism is not None
            and mechanism not in WIRE_MECHANISMS):
        return f"kafka.sasl.mechanism={mechanism}"
    foreign = sorted(set(settings) - WIRE_OPTIONS)
    if foreign:
        return "kafka." + foreign[0].replace("_", ".")
    return None


def _note_error(errors: dict[int, list[TopicPartition]], code: int, tp: TopicPartition) -> None:
    """Collect a retriable error code to set its partition aside; raise on any other."""
    if not is_retriable(code):
        raise FetchError(describe_error(code, tp))
    errors.setdefault(code, []).append(tp)


def parse_servers(servers: str) -> list[tuple[str, int]]:
    addresses = []
    for server in servers.split(","):
        host, _, port = server.strip().rpartition(":")
        addresses.append((host.strip("[]"), int(port)))
    return addresses


def ssl_context_for(settings: Mapping[str, Any]) -> ssl.SSLContext | None:
    """The same TLS set-up kafka-python makes from the same options."""
    if settings.get("security_protocol", "PLAINTEXT") not in _TLS_PROTOCOLS:
        return None
    context = ssl.create_default_context(cafile=settings.get("ssl_cafile"))
    context.check_hostname = bool(settings.get("ssl_check_hostname", True))
    if settings.get("ssl_certfile"):
        context.load_cert_chain(settings["ssl_certfile"], settings.get("ssl_keyfile"),
                                settings.get("ssl_password"))
    if settings.get("ssl_crlfile"):
        context.load_verify_locations(settings["ssl_crlfile"])
        context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
    if settings.get("ssl_ciphers"):
        context.set_ciphers(settings["ssl_ciphers"])
    return context

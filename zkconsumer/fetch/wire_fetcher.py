"""Fetching a member's partitions with our own Kafka wire client: the fast backend.

Measured on 100-byte records, kafka-python's consumer spends most of its time per record in its
own fetch pipeline rather than on the network. This fetcher speaks the three requests the legacy
consumer spoke (Metadata, ListOffsets, Fetch) and decodes record sets straight into `Message`
tuples, more than twice as fast (see scripts/bench). It keeps one fetch in flight per leader
and sends the next one as soon as a response is decoded, so the broker prepares data while the
streams are being consumed.

Each broker is asked first which versions of those requests it speaks (ApiVersions, once per
address, and again after a request to it failed), and spoken to in the newest both sides know;
brokers older than 0.10 get the legacy consumer's versions (`protocol_versions`). A broker that answers a
version in a form that cannot be read, with UNSUPPORTED_VERSION, or (having offered it) by
closing the connection, is asked again, versions included, a few times before the member
fails with one line naming the broker and the request (`RejectedRequests`).

It covers PLAINTEXT and SSL. Anything else (SASL, or a kafka-python option it does not know)
makes the connector choose the kafka-python backend instead: see `fetcher.py`.

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
from collections.abc import Collection, Mapping
from typing import Any

import structlog

from zkconsumer.fetch import kafka_protocol as protocol
from zkconsumer.fetch.broker_channel import BrokerChannel, ChannelError
from zkconsumer.fetch.errors import FetchError
from zkconsumer.fetch.message_sets import CorruptMessageError
from zkconsumer.fetch.protocol_versions import (
    CONFIGURED,
    UNANSWERED,
    Versions,
    asks_api_versions,
    legacy_versions,
    negotiate,
)
from zkconsumer.fetch.records import decode_records
from zkconsumer.fetch.retry_policy import (
    OFFSET_OUT_OF_RANGE,
    UNSUPPORTED_VERSION,
    RejectedRequests,
    RetryWarnings,
    describe_error,
    error_name,
    is_retriable,
)
from zkconsumer.model import Message, TopicPartition

log = structlog.get_logger(__name__)

# The kafka-python options this fetcher honours; any other one chooses the kafka-python backend.
WIRE_OPTIONS = frozenset({
    "bootstrap_servers", "api_version", "group_id", "enable_auto_commit", "client_id",
    "max_partition_fetch_bytes", "fetch_min_bytes", "fetch_max_wait_ms", "request_timeout_ms",
    "connections_max_idle_ms", "retry_backoff_ms", "auto_offset_reset", "receive_buffer_bytes",
    "check_crcs", "security_protocol", "ssl_cafile", "ssl_certfile", "ssl_keyfile",
    "ssl_password", "ssl_check_hostname", "ssl_crlfile", "ssl_ciphers", "isolation_level",
})
WIRE_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL")
ISOLATION_LEVELS = {"read_uncommitted": protocol.READ_UNCOMMITTED,
                    "read_committed": protocol.READ_COMMITTED}
_IDLE_S = 0.01
# A broker that speaks ApiVersions answers it at once; 0.9 never does, so waiting for it is
# bounded by this rather than by `request_timeout_ms`.
_API_VERSIONS_TIMEOUT_S = 5.0


class WireFetcher:
    """Same interface as the kafka-python backend. Not thread-safe: the fetch loop serialises
    every call.

    A partition whose leader is unknown, moved or unreachable, or that its leader answered with
    a retriable error, is set aside (its leader forgotten) until the next metadata refresh, at
    most every `refresh.leader.backoff.ms`; the other partitions keep flowing meanwhile.
    """

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self._addresses = _parse_servers(settings["bootstrap_servers"])
        api_version = settings.get("api_version")
        self._asks_api_versions = asks_api_versions(api_version)
        self._configured_versions = legacy_versions(api_version, CONFIGURED)
        self._unanswered_versions = legacy_versions(api_version, UNANSWERED)
        self._isolation_level = ISOLATION_LEVELS[settings.get("isolation_level",
                                                              "read_uncommitted")]
        self._client_id = settings["client_id"]
        self._max_wait_ms = settings["fetch_max_wait_ms"]
        self._min_bytes = settings["fetch_min_bytes"]
        self._max_bytes = settings["max_partition_fetch_bytes"]
        self._timeout_s = settings["request_timeout_ms"] / 1000.0
        self._api_versions_timeout_s = min(self._timeout_s, _API_VERSIONS_TIMEOUT_S)
        self._backoff_s = settings["retry_backoff_ms"] / 1000.0
        self._reset_time = (protocol.EARLIEST if settings["auto_offset_reset"] == "earliest"
                            else protocol.LATEST)
        self._check_crcs = settings.get("check_crcs", True)
        self._receive_buffer_bytes = settings.get("receive_buffer_bytes") or 0
        try:
            self._ssl_context = _ssl_context(settings)
        except (OSError, ValueError) as exc:
            raise FetchError(f"cannot set up TLS for Kafka: {exc}") from exc
        # None: reset before fetching. In fetch order: a partition that got data moves last, so
        # that a response filled up (Fetch v3+) cannot starve the partitions asked for after it.
        self._positions: dict[TopicPartition, int | None] = {}
        self._high_watermarks: dict[TopicPartition, int] = {}
        self._leaders: dict[TopicPartition, int] = {}
        self._nodes: dict[int, tuple[str, int]] = {}
        self._fetch_channels: dict[int, BrokerChannel] = {}
        self._control_channels: dict[int, BrokerChannel] = {}
        # per broker address ("host:port"): the request versions last chosen, and the addresses
        # whose versions are to be asked again at the next connection
        self._versions: dict[str, Versions] = {}
        self._ask_again: set[str] = set()
        self._rejections = RejectedRequests()
        # per node: the offsets asked for, when the answer is overdue, the Fetch version asked
        self._in_flight: dict[int, tuple[dict[TopicPartition, int], float, int]] = {}
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

    def poll(self, timeout_ms: int) -> dict[TopicPartition, list[Message]]:
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
        for node in {*self._fetch_channels, *self._control_channels}:
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
                channel = self._channel(self._fetch_channels, node)
                version = self._versions[channel.address].fetch
                channel.send(protocol.FETCH, version, protocol.fetch_request(
                    self._max_wait_ms, self._min_bytes, offsets, self._max_bytes, version,
                    self._isolation_level))
            except ChannelError as exc:
                self._lose_node(node, str(exc))
                continue
            if node not in self._selected:
                self._selector.register(channel, selectors.EVENT_READ, node)
                self._selected.add(node)
            self._in_flight[node] = (offsets, time.monotonic() + self._timeout_s, version)

    def _collect(self, deadline: float) -> dict[TopicPartition, list[Message]]:
        """Wait for the first answers, up to the deadline, and ask each broker that answered
        for more at once, so that it prepares the next response while this one is consumed."""
        results: dict[TopicPartition, list[Message]] = {}
        if not self._in_flight:
            # Every partition waits for a leader or a reset: nothing can arrive before the next
            # metadata refresh, unless a wake-up comes.
            deadline = min(deadline, max(self._refresh_at, time.monotonic() + _IDLE_S))
        for node in self._ready_nodes(deadline):
            if node not in self._in_flight:
                # Readable with nothing asked: the broker closed the connection.
                self._lose_node(node, f"broker {self._fetch_channels[node].address} closed "
                                      "the connection")
                continue
            offsets, _, version = self._in_flight.pop(node)
            address = self._fetch_channels[node].address
            try:
                response = protocol.decode_fetch(version, self._fetch_channels[node].receive())
            except (ChannelError, protocol.ProtocolError) as exc:
                self._request_failed(node, address, protocol.FETCH, version, exc)
                continue
            if response.error == UNSUPPORTED_VERSION or any(
                    fetched.error == UNSUPPORTED_VERSION for fetched in response.partitions):
                self._reject(node, address, protocol.FETCH, version,
                             f"Kafka error {UNSUPPORTED_VERSION} UNSUPPORTED_VERSION")
                continue
            self._answered(address, protocol.FETCH)
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
                    if self._fetch_channels[node].has_buffered_data()]
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
                results: dict[TopicPartition, list[Message]],
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
                                     self._check_crcs, aborted)
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
        for node in [n for n, (_, overdue, _) in self._in_flight.items() if overdue < now]:
            self._lose_node(node, f"broker {self._fetch_channels[node].address} did not answer "
                                  "a fetch in time")

    # -- metadata and offset resets ---------------------------------------------------------

    def _refresh_metadata(self) -> None:
        self._refresh_at = time.monotonic() + self._backoff_s
        topics = sorted({tp.topic for tp in self._positions})
        failures = []
        given_up = None  # a broker asked too often in vain: fatal if none answers
        for host, port in dict.fromkeys([*self._nodes.values(), *self._addresses]):
            try:
                channel = self._open_channel(host, port)
            except ChannelError as exc:
                failures.append(str(exc))
                continue
            address = channel.address
            version = self._versions[address].metadata
            try:
                metadata = protocol.decode_metadata(channel.request(
                    protocol.METADATA, version, protocol.metadata_request(topics, version)),
                    version)
            except (ChannelError, protocol.ProtocolError) as exc:
                failures.append(f"broker {address}: {exc}" if isinstance(
                    exc, protocol.ProtocolError) else str(exc))
                reason = self._rejection_reason(address, exc)
                if reason is None:
                    self._forget_versions(address)
                else:
                    given_up = self._rejection(address, protocol.METADATA, version,
                                               reason) or given_up
                continue
            finally:
                channel.close()
            self._answered(address, protocol.METADATA)
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
            self._report_trouble("waiting for partition leaders", missing)

    def _reset_positions(self) -> None:
        by_node: dict[int, dict[TopicPartition, int]] = {}
        errors: dict[int, list[TopicPartition]] = {}
        for tp, position in self._positions.items():
            if position is None and tp in self._leaders:
                by_node.setdefault(self._leaders[tp], {})[tp] = self._reset_time
        for node, times in by_node.items():
            try:
                channel = self._channel(self._control_channels, node)
            except ChannelError as exc:
                self._lose_node(node, str(exc))
                continue
            address = channel.address
            version = self._versions[address].list_offsets
            try:
                answer = protocol.decode_list_offsets(channel.request(
                    protocol.LIST_OFFSETS, version, protocol.list_offsets_request(
                        times, version, self._isolation_level, round(self._timeout_s * 1000))),
                    version)
            except (ChannelError, protocol.ProtocolError) as exc:
                self._request_failed(node, address, protocol.LIST_OFFSETS, version, exc)
                continue
            if any(error == UNSUPPORTED_VERSION for error, _ in answer.values()):
                self._reject(node, address, protocol.LIST_OFFSETS, version,
                             f"Kafka error {UNSUPPORTED_VERSION} UNSUPPORTED_VERSION")
                continue
            self._answered(address, protocol.LIST_OFFSETS)
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
                        reason: str | None = None, **fields: Any) -> None:
        """Count these partitions troubled until they fetch again, and report the trouble:
        warned about when it starts, then at most every 30 s per event and reason (see
        `RetryWarnings`)."""
        now = time.monotonic()
        self._troubled.update(partitions)
        if self._troubled and self._trouble_since is None:
            self._trouble_since = now
        if reason is not None:
            fields["reason"] = reason
        self._trouble_warned |= self._warnings.report(
            (event, reason), event, for_s=round(now - (self._trouble_since or now), 1),
            partitions=[str(tp) for tp in partitions[:8]], count=len(partitions), **fields)

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

    def _channel(self, channels: dict[int, BrokerChannel], node: int) -> BrokerChannel:
        """The node's open channel, or a new one if there is none or its broker's versions were
        forgotten since it opened."""
        channel = channels.get(node)
        if channel is not None and channel.address in self._ask_again:
            self._drop_channels(node)
            channel = None
        if channel is None:
            host, port = self._nodes[node]
            channel = channels[node] = self._open_channel(host, port)
        return channel

    def _open_channel(self, host: str, port: int) -> BrokerChannel:
        """A connection to the broker, whose versions are known once this returns: asked with
        ApiVersions on the first connection to an address, and remembered until a request to it
        fails. A broker that leaves the question unanswered (0.8, 0.9) is connected to again
        and spoken to as a pre-0.10 broker: one more connection per broker, not per request."""
        channel = self._connect(host, port)
        address = channel.address
        if address in self._versions and address not in self._ask_again:
            return channel
        self._ask_again.discard(address)
        if not self._asks_api_versions:
            self._versions[address] = self._configured_versions
            return channel
        try:
            offered = protocol.decode_api_versions(channel.request(
                protocol.API_VERSIONS, 0, protocol.API_VERSIONS_REQUEST,
                timeout_s=self._api_versions_timeout_s))
        except (ChannelError, protocol.ProtocolError) as exc:
            channel.close()
            versions = self._versions[address] = self._unanswered_versions
            log.info("broker does not answer ApiVersions; speaking the pre-0.10 versions",
                     broker=address, reason=str(exc), **versions._asdict())
            return self._connect(host, port)
        try:
            versions = self._versions[address] = negotiate(address, offered)
        except FetchError:
            channel.close()
            raise
        log.debug("broker versions negotiated", broker=address, **versions._asdict())
        return channel

    def _connect(self, host: str, port: int) -> BrokerChannel:
        return BrokerChannel(host, port, client_id=self._client_id, timeout_s=self._timeout_s,
                             ssl_context=self._ssl_context,
                             receive_buffer_bytes=self._receive_buffer_bytes)

    def _request_failed(self, node: int, address: str, api_key: int, version: int,
                        failure: ChannelError | protocol.ProtocolError) -> None:
        """A request to this broker got no usable answer: a rejection of its version, or
        transient trouble, retried for as long as it lasts."""
        reason = self._rejection_reason(address, failure)
        if reason is not None:
            self._reject(node, address, api_key, version, reason)
        else:
            self._forget_versions(address)
            self._lose_node(node, str(failure))

    def _reject(self, node: int, address: str, api_key: int, version: int, reason: str) -> None:
        """The broker did not take a request version: ask again, versions first, after the
        backoff, or fail once that happened too often in a row."""
        message = self._rejection(address, api_key, version, reason)
        if message is not None:
            raise FetchError(message)
        self._lose_node(node, f"broker {address} did not answer {protocol.API_NAMES[api_key]} "
                              f"v{version} in a form we can read ({reason})")

    def _rejection(self, address: str, api_key: int, version: int, reason: str) -> str | None:
        """Count one rejection; the line to fail with once there were too many in a row."""
        versions = self._forget_versions(address)
        return self._rejections.note(address, protocol.API_NAMES[api_key], version, reason,
                                     versions.hint())

    def _rejection_reason(self, address: str, failure: ChannelError | protocol.ProtocolError
                          ) -> str | None:
        """Why this failure means the broker rejects the request version, or None if it does
        not: an answer that does not parse does, and so does a connection closed in answer by
        a broker that offered the version; any other connection failure is transient."""
        if isinstance(failure, protocol.ProtocolError):
            return str(failure)
        if failure.closed_by_broker and self._versions[address].negotiated:
            return "it closed the connection"
        return None

    def _forget_versions(self, address: str) -> Versions:
        """Ask the broker again at the next connection (it may be restarting as another
        version); the versions spoken until now."""
        self._ask_again.add(address)
        return self._versions[address]

    def _answered(self, address: str, api_key: int) -> None:
        """The broker answered this request in a usable form: its rejections are over."""
        self._rejections.clear(address, protocol.API_NAMES[api_key])

    def _lose_node(self, node: int, reason: str) -> None:
        """A broker failed us: close its connections and set its partitions aside."""
        self._drop_channels(node)
        self._forget_leaders([tp for tp, leader in self._leaders.items() if leader == node],
                             reason)

    def _drop_channels(self, node: int) -> None:
        self._in_flight.pop(node, None)
        fetch_channel = self._fetch_channels.pop(node, None)
        if fetch_channel is not None:
            if node in self._selected:
                self._selector.unregister(fetch_channel)  # also once closed: found by identity
                self._selected.discard(node)
            fetch_channel.close()
        control_channel = self._control_channels.pop(node, None)
        if control_channel is not None:
            control_channel.close()


def wire_unsupported_reason(settings: Mapping[str, Any]) -> str | None:
    """Why the wire backend cannot honour these kafka-python settings, or None if it can."""
    protocol_name = settings.get("security_protocol", "PLAINTEXT")
    if protocol_name not in WIRE_SECURITY_PROTOCOLS:
        return f"kafka.security.protocol={protocol_name}"
    foreign = sorted(set(settings) - WIRE_OPTIONS)
    if foreign:
        return "kafka." + foreign[0].replace("_", ".")
    return None


def _note_error(errors: dict[int, list[TopicPartition]], code: int, tp: TopicPartition) -> None:
    """Collect a retriable error code to set its partition aside; raise on any other."""
    if not is_retriable(code):
        raise FetchError(describe_error(code, tp))
    errors.setdefault(code, []).append(tp)


def _parse_servers(servers: str) -> list[tuple[str, int]]:
    addresses = []
    for server in servers.split(","):
        host, _, port = server.strip().rpartition(":")
        addresses.append((host.strip("[]"), int(port)))
    return addresses


def _ssl_context(settings: Mapping[str, Any]) -> ssl.SSLContext | None:
    """The same TLS set-up kafka-python makes from the same options."""
    if settings.get("security_protocol", "PLAINTEXT") != "SSL":
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

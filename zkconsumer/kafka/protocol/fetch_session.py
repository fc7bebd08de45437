"""The wire fetcher's protocol without its I/O: what to ask each broker, and what answers mean.

`WireFetcher` owns the sockets, the selector and the clock; this session owns every decision
(which leader to fetch which partitions from, in which request version, which partitions to set
aside after an error and when to look their leaders up again, when to reset an offset, what a
response's error codes mean) and is told the time with every call. The split is h11's: a
protocol that only turns bytes and times into bytes and events can be tested by handing it
both, where the loop around sockets could only be tested with sockets.

A request goes to one connection (`Link`), whose versions were chosen when it opened: the
newest both sides know, from the broker's ApiVersions answer (see `broker_versions`), or the
legacy consumer's for a broker that predates the question. So the driver opens a connection
first (asking `link`, `api_versions_answered` or `api_versions_failed` what it speaks), then
asks for the request to send on it. A broker that answers a version in a form that cannot be
read, with UNSUPPORTED_VERSION, or by closing a connection before it answered that request on
it, is asked again a few times before the member fails with one line naming the broker and the
request.

Transient trouble (a broker restarting, a leader moving, a connection dropping, an error code
Kafka calls retriable, or an unknown server error) sets the partitions concerned aside until
metadata names a reachable leader again, asked at most every `refresh.leader.backoff.ms`, for as
long as it lasts, as the legacy consumer did; the other partitions keep flowing. Errors no retry
can fix (a message larger than `fetch.message.max.bytes`, corrupt data, any other error code:
see `retry_policy`) raise `FetchError`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from zkconsumer.kafka.errors import ChannelError, FetchError
from zkconsumer.kafka.protocol import codec as protocol
from zkconsumer.kafka.protocol.broker_versions import BrokerVersions, Link, Trouble
from zkconsumer.kafka.protocol.retry_policy import (
    OFFSET_OUT_OF_RANGE,
    describe_error,
    error_name,
    is_retriable,
)
from zkconsumer.kafka.protocol.sasl import SaslVersions
from zkconsumer.logs import get_logger
from zkconsumer.model import TopicPartition
from zkconsumer.records.message_sets import CorruptMessageError
from zkconsumer.throttled_log import RetryWarnings

if TYPE_CHECKING:
    from zkconsumer.records.columns import RecordColumns
    from zkconsumer.records.decoding import DecodedSet

log = get_logger(__name__)


def decode_records(data: bytes | memoryview, topic: str, partition: int, fetch_offset: int,
                   *how: Any, **bounds: Any) -> DecodedSet:
    """`records.decoding.decode_records`, imported at the first answer that carries records: its
    reader (aiokafka's) is the dearest import of a member's start, and a member decodes nothing
    before it holds partitions."""
    from zkconsumer.records.decoding import decode_records as decode
    return decode(data, topic, partition, fetch_offset, *how, **bounds)

ISOLATION_LEVELS = {"read_uncommitted": protocol.READ_UNCOMMITTED,
                    "read_committed": protocol.READ_COMMITTED}
# With nothing in flight, a poll still returns this soon: a partition may be reset or assigned.
_IDLE_S = 0.01
# Partitions with no known leader are normal for a moment: a topic just created, a leader
# being elected. Every member of a group that meets one warned at once (a line per member per
# rebalance); a wait that outlasts this is worth a warning.
LEADER_WAIT_WARN_S = 5.0
# The node of a Metadata request, which any broker answers (Kafka's node ids are not negative).
ANY_BROKER = -1


class Request(NamedTuple):
    """One request to send on `link`, and what the session needs to read its answer."""

    node: int  # ANY_BROKER for Metadata
    api_key: int
    version: int
    body: bytes
    link: Link
    asked: Mapping[TopicPartition, int]  # Fetch: the offsets; ListOffsets: the times
    sent_at: float


class Received(NamedTuple):
    """What an answer (or its failure) brought: the messages fetched, the nodes whose
    connections must close (lost, or moved to another address), and whether the broker's
    answer was usable."""

    records: dict[TopicPartition, RecordColumns]
    lost: list[int]
    answered: bool


class PartitionFetch:
    """One assigned partition's fetch state, all of it in one record (as aiokafka's
    `TopicPartitionState`): the session keeps one per partition it fetches, and a partition
    no longer assigned is one record deleted.

    - `position`: the next offset to fetch; None while a reset by `auto.offset.reset` waits;
    - `high_watermark`: the partition's high watermark in its leader's last fetch answer; None
      before one;
    - `leader`: the node it is fetched from; None while it is set aside, until metadata names a
      reachable leader again;
    - `troubled`: set aside (or waiting for its first leader) and not fetched since: the
      session's trouble lasts while any partition is troubled."""

    __slots__ = ("position", "high_watermark", "leader", "troubled")

    def __init__(self, position: int | None, leader: int | None) -> None:
        self.position = position
        self.high_watermark: int | None = None
        self.leader = leader
        self.troubled = False


class FetchSession:
    """Not thread-safe: the driver serialises every call. `now` is monotonic seconds."""

    def __init__(self, settings: Mapping[str, Any], bootstrap: Sequence[tuple[str, int]]
                 ) -> None:
        self._bootstrap = list(bootstrap)
        self._isolation_level = ISOLATION_LEVELS[settings.get("isolation_level",
                                                              "read_uncommitted")]
        self._versions = BrokerVersions(settings.get("api_version"), self._isolation_level)
        self._max_wait_ms = settings["fetch_max_wait_ms"]
        self._min_bytes = settings["fetch_min_bytes"]
        self._max_bytes = settings["max_partition_fetch_bytes"]
        self._timeout_s = settings["request_timeout_ms"] / 1000.0
        self._backoff_s = settings["retry_backoff_ms"] / 1000.0
        self._reset_time = (protocol.EARLIEST if settings["auto_offset_reset"] == "earliest"
                            else protocol.LATEST)
        self._check_crcs = settings.get("check_crcs", True)
        # The assigned partitions' records, in fetch order: a partition that got data moves
        # last, so that a response filled up (Fetch v3+) cannot starve those asked after it.
        self._partitions: dict[TopicPartition, PartitionFetch] = {}
        # The leaders the last metadata answer named for every partition of the topics, less
        # those found wrong since: where a partition assigned later starts (see `assign`).
        self._named_leaders: dict[TopicPartition, int] = {}
        self._nodes: dict[int, tuple[str, int]] = {}
        self._in_flight: dict[int, Request] = {}  # the Fetch awaiting its answer, per node
        # per node: the last fetch request, with what it asked (see `_fetch_body`)
        self._last_requests: dict[int, tuple[tuple, bytes]] = {}
        # per node: the last fetch request answered idle, and that answer (see `_as_before`)
        self._idle_answers: dict[int, tuple[bytes, bytes]] = {}
        self._refresh_at = 0.0  # no metadata refresh before this
        # The metadata round under way: why each broker asked failed, and the line to fail with
        # if one of them was asked too often in vain and none answers.
        self._round_failures: list[str] = []
        self._round_given_up: str | None = None
        # RetryWarnings reads its clock when told of trouble: the time of the call that tells.
        self._reported_at = 0.0
        self._warnings = RetryWarnings(log, clock=lambda: self._reported_at)
        # Since when some partition is troubled (see `PartitionFetch.troubled`).
        self._trouble_since: float | None = None
        self._trouble_warned = False  # whether this trouble has been warned about

    # -- the assignment -----------------------------------------------------------------------

    def assign(self, positions: Mapping[TopicPartition, int | None],
               restart: Collection[TopicPartition], now: float) -> None:
        """Fetch exactly these partitions; those already assigned keep their position unless
        listed in `restart`. A response in flight for a partition that moved is dropped when it
        arrives, because the position it was asked for no longer matches."""
        restarted = set(restart)
        kept = self._partitions
        self._partitions = {}
        self._idle_answers.clear()  # a partition assigned again starts with no high watermark
        for tp, position in positions.items():
            record = kept.pop(tp, None)
            if record is None:
                record = PartitionFetch(position, self._named_leaders.get(tp))
            elif tp in restarted:
                record.position = position
            self._partitions[tp] = record
        if any(record.troubled for record in kept.values()):  # those dropped
            self._settle(now)

    @property
    def assigned(self) -> bool:
        return bool(self._partitions)

    def position(self, tp: TopicPartition) -> int | None:
        """The next offset to fetch; None while a reset by `auto.offset.reset` is pending."""
        record = self._partitions.get(tp)
        return None if record is None else record.position

    def high_watermark(self, tp: TopicPartition) -> int | None:
        """The partition's high watermark in its leader's last fetch answer; None before one."""
        record = self._partitions.get(tp)
        return None if record is None else record.high_watermark

    # -- the versions of a new connection -----------------------------------------------------

    def link(self, address: str) -> Link | None:
        """A new connection to this broker, in the versions known for it; None: ask it first
        (ApiVersions), then tell `api_versions_answered` or `api_versions_failed`."""
        versions = self._versions.known(address)
        return None if versions is None else Link(address, versions)

    def api_versions_answered(self, address: str, payload: bytes | bytearray) -> Link:
        """The connection on which the broker answered ApiVersions, in the newest versions both
        sides know. FetchError: none in common, or garbled answers too often in a row;
        ChannelError: a garbled answer, to be retried on another connection."""
        try:
            offered = protocol.decode_api_versions(payload)
        except protocol.ProtocolError as exc:
            return self.api_versions_failed(address, exc)
        versions = self._versions.offered(address, offered)
        log.debug("broker versions negotiated", broker=address, **versions._asdict())
        return Link(address, versions)

    def api_versions_failed(self, address: str, failure: ChannelError | protocol.ProtocolError
                            ) -> Link:
        """ApiVersions got no usable answer: the link for a new connection in the legacy
        versions if the broker is older than 0.10 (its connection, left unanswered, is no use);
        otherwise this raises, as trouble of the connection or, too often, FetchError."""
        versions = self._versions.not_answered(address, failure)
        log.info("broker does not answer ApiVersions; speaking the pre-0.10 versions",
                 broker=address, reason=str(failure), **versions._asdict())
        return Link(address, versions)

    def sasl_versions(self, address: str) -> SaslVersions:
        return self._versions.sasl(address)

    # -- what to ask --------------------------------------------------------------------------

    def metadata_due(self, now: float) -> bool:
        """Whether to look leaders up: some partition has none, and the backoff has passed."""
        return self._waiting_for_a_leader() and now >= self._refresh_at

    def metadata_round(self, now: float) -> list[tuple[str, int]]:
        """Start a metadata look-up: the brokers to ask in turn until one answers (the cluster's
        known brokers, then the bootstrap ones). Each is told back: `metadata_unreachable`,
        `failed` or `receive`; `metadata_unanswered` if none answered."""
        self._refresh_at = now + self._backoff_s
        self._round_failures = []
        self._round_given_up = None
        return list(dict.fromkeys([*self._nodes.values(), *self._bootstrap]))

    def metadata_request(self, link: Link, now: float) -> Request:
        version = link.versions.metadata
        topics = sorted({tp.topic for tp in self._partitions})
        return Request(ANY_BROKER, protocol.METADATA, version,
                       protocol.metadata_request(topics, version), link, {}, now)

    def metadata_unreachable(self, reason: str) -> None:
        """No connection to a broker of the round could be opened."""
        self._round_failures.append(reason)

    def metadata_unanswered(self, now: float) -> None:
        """No broker of the round answered: fail if one was asked too often in vain, else wait
        for the next round."""
        if self._round_given_up is not None:
            raise FetchError(self._round_given_up)
        self._report_trouble("no broker answered a metadata request; retrying",
                             self._leaderless(), now,
                             errors=self._round_failures[-3:],
                             retry_in_ms=round(self._backoff_s * 1000))

    def reset_nodes(self) -> list[int]:
        """The leaders to ask for the offsets of partitions that wait for a reset."""
        return list(dict.fromkeys(record.leader for record in self._partitions.values()
                                  if record.position is None and record.leader is not None))

    def offsets_request(self, node: int, link: Link, now: float) -> Request:
        times = {tp: self._reset_time for tp, record in self._partitions.items()
                 if record.position is None and record.leader == node}
        version = link.versions.list_offsets
        return Request(node, protocol.LIST_OFFSETS, version, protocol.list_offsets_request(
            times, version, self._isolation_level, round(self._timeout_s * 1000)),
            link, times, now)

    def fetch_nodes(self) -> set[int]:
        """The leaders to send a Fetch to: those of partitions with a position, with none in
        flight. The session keeps one fetch in flight per leader."""
        return {record.leader for record in self._partitions.values()
                if record.position is not None and record.leader is not None
                } - self._in_flight.keys()

    def fetch_request(self, node: int, link: Link, now: float) -> Request | None:
        """The Fetch to send to this leader now, counted in flight; None when there is none to
        send (one is in flight, or none of its partitions has a position)."""
        if node in self._in_flight:
            return None
        offsets = {tp: record.position for tp, record in self._partitions.items()
                   if record.position is not None and record.leader == node}
        if not offsets:
            return None
        version = link.versions.fetch
        request = self._in_flight[node] = Request(
            node, protocol.FETCH, version, self._fetch_body(node, offsets, version), link,
            offsets, now)
        return request

    @property
    def in_flight(self) -> Mapping[int, Request]:
        """The Fetch awaiting its answer, per node."""
        return self._in_flight

    def address_of(self, node: int) -> tuple[str, int]:
        return self._nodes[node]

    def wait_until(self, deadline: float, now: float) -> float:
        """How long a poll may wait for answers: to its deadline, unless a partition waits for
        a leader, when the poll ends for the next metadata look-up (also while other
        partitions' fetches are in flight: a long fetch.wait.max.ms must not hold back the
        look-up of a partition whose leader moved); with nothing in flight at all (every
        partition waits for a leader or a reset), nothing can arrive before that look-up
        either."""
        if self._in_flight and not self._waiting_for_a_leader():
            return deadline
        return min(deadline, max(self._refresh_at, now + _IDLE_S))

    def _fetch_body(self, node: int, offsets: dict[TopicPartition, int], version: int
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

    # -- what came back -----------------------------------------------------------------------

    def receive(self, request: Request, payload: bytes | bytearray, now: float) -> Received:
        """The broker's answer to `request` (correlation id first)."""
        if request.api_key == protocol.FETCH:
            self._in_flight.pop(request.node, None)
            if self._as_before(request, payload):
                return Received({}, [], True)
        try:  # only the decoders raise ProtocolError
            if request.api_key == protocol.METADATA:
                return self._metadata_answered(
                    request, protocol.decode_metadata(payload, request.version), now)
            if request.api_key == protocol.LIST_OFFSETS:
                return self._offsets_answered(
                    request, protocol.decode_list_offsets(payload, request.version), now)
            return self._fetch_answered(request, protocol.decode_fetch(request.version, payload),
                                        now, payload)
        except protocol.ProtocolError as exc:
            return Received({}, self.failed(request, exc, now), False)

    def failed(self, request: Request, failure: ChannelError | protocol.ProtocolError,
               now: float) -> list[int]:
        """`request` got no usable answer. A broker asked Metadata is one failure of the round;
        a leader's node is lost, its partitions set aside, unless its version was rejected too
        often in a row (FetchError). The nodes whose connections must close."""
        trouble = self._versions.failed(request.link, request.api_key, request.version, failure)
        if request.api_key == protocol.METADATA:
            self._round_failures.append(trouble.reason)
            self._round_given_up = trouble.given_up or self._round_given_up
            return []
        return self._setback(request.node, trouble, now)

    def node_lost(self, node: int, reason: str, now: float) -> None:
        """A broker failed us (a connection that failed or closed, an answer overdue): set its
        partitions aside; its connections are to close."""
        self._in_flight.pop(node, None)
        self._forget_leaders(list(dict.fromkeys(
            [*(tp for tp, leader in self._named_leaders.items() if leader == node),
             *(tp for tp, record in self._partitions.items() if record.leader == node)])),
            reason, now)

    def expire(self, now: float) -> list[int]:
        """Give up on fetches unanswered for `request.timeout.ms`: the nodes lost."""
        overdue = [request for request in self._in_flight.values()
                   if request.sent_at + self._timeout_s < now]
        for request in overdue:
            self.node_lost(request.node,
                           f"broker {request.link.address} did not answer a fetch in time", now)
        return [request.node for request in overdue]

    def _metadata_answered(self, request: Request, metadata: protocol.Metadata, now: float
                           ) -> Received:
        self._versions.answered(request.link, protocol.METADATA, request.version)
        moved = [node for node, address in self._nodes.items()
                 if metadata.brokers.get(node) != address]
        for node in moved:
            self._in_flight.pop(node, None)
        self._nodes = dict(metadata.brokers)
        # Every partition of the topics, not only those fetched now: the next rebalance then
        # finds its new partitions' leaders known (a stale one answers "not the leader").
        self._named_leaders = {tp: leader for tp, leader in metadata.leaders.items()
                               if leader in self._nodes}
        for tp, record in self._partitions.items():
            record.leader = self._named_leaders.get(tp)
        missing = self._leaderless()
        if missing:
            self._report_trouble("waiting for partition leaders", missing, now,
                                 quiet_for_s=LEADER_WAIT_WARN_S)
        return Received({}, moved, True)

    def _offsets_answered(self, request: Request,
                          answer: dict[TopicPartition, tuple[int, int | None]], now: float
                          ) -> Received:
        rejected = self._rejected(request, [error for error, _ in answer.values()], now)
        if rejected is not None:
            return rejected
        errors: dict[int, list[TopicPartition]] = {}
        for tp, (error, offset) in answer.items():
            record = self._partitions.get(tp)
            if tp not in request.asked or record is None or record.position is not None:
                continue
            if error:
                _note_error(errors, error, tp)
            elif offset is None:
                raise FetchError(f"the broker answered no log offset for {tp}")
            else:
                record.position = offset
        self._set_aside(errors, now)
        return Received({}, [], True)

    def _as_before(self, request: Request, payload: bytes | bytearray) -> bool:
        """Whether this answer repeats, byte for byte after its correlation id, the last idle
        answer to the same request, on a connection that proved the request's version, with
        none of its partitions troubled since: it then brings
        nothing (no records, the same high watermarks, no errors) and is not decoded again. An
        idle member asks and is answered the same ten times a second; decoding was most of an
        idle poll's cost, and 200 members on one machine spent most of its CPU on it."""
        last = self._idle_answers.get(request.node)
        if last is None or last[0] is not request.body or memoryview(payload)[4:] != last[1] \
                or (request.api_key, request.version) not in request.link.proven:
            return False  # a connection whose version no decoded answer proved yet is decoded
        partitions = self._partitions
        return not any(tp in partitions and partitions[tp].troubled for tp in request.asked)

    def _fetch_answered(self, request: Request, response: protocol.FetchResponse, now: float,
                        payload: bytes | bytearray) -> Received:
        self._idle_answers.pop(request.node, None)
        rejected = self._rejected(
            request, [response.error, *(fetched.error for fetched in response.partitions)], now)
        if rejected is not None:
            return rejected
        errors: dict[int, list[TopicPartition]] = {}
        if response.error:
            for tp in request.asked:
                _note_error(errors, response.error, tp)
        records: dict[TopicPartition, RecordColumns] = {}
        for fetched in response.partitions:
            self._absorb(fetched, request.asked, records, errors, now)
        self._set_aside(errors, now)
        if not response.error and not any(fetched.error or fetched.records
                                          for fetched in response.partitions):
            self._idle_answers[request.node] = (request.body, bytes(memoryview(payload)[4:]))
        return Received(records, [], True)

    def _absorb(self, fetched: protocol.FetchedPartition, offsets: Mapping[TopicPartition, int],
                records: dict[TopicPartition, RecordColumns],
                errors: dict[int, list[TopicPartition]], now: float) -> None:
        """Take one partition's answer: its messages into `records`, a retriable error code
        into `errors`, to be set aside once the whole response is read."""
        tp = fetched.partition
        asked = offsets.get(tp)
        record = self._partitions.get(tp)
        if asked is None or record is None or record.position != asked:
            return  # released or moved since the request went out
        if fetched.error == OFFSET_OUT_OF_RANGE:
            log.warning("offset out of range, resetting", partition=str(tp), offset=asked,
                        reset_to="earliest" if self._reset_time == protocol.EARLIEST
                        else "latest")
            record.position = None
            return
        if fetched.error:
            _note_error(errors, fetched.error, tp)
            return
        record.high_watermark = fetched.high_watermark
        if record.troubled:
            record.troubled = False
            self._settle(now)
        if not fetched.records:  # an idle partition's answer: nothing to decode
            return
        aborted = None
        if self._isolation_level == protocol.READ_COMMITTED:
            aborted = fetched.aborted or []
        try:
            decoded = decode_records(fetched.records, tp.topic, tp.partition, asked,
                                     self._check_crcs, aborted, fetch_bytes=self._max_bytes)
        except CorruptMessageError as exc:
            raise FetchError(str(exc)) from exc
        if decoded.next_offset is not None:
            record.position = decoded.next_offset
            self._partitions[tp] = self._partitions.pop(tp)  # to the end of the fetch order
        elif decoded.truncated:
            raise FetchError(
                f"the message at offset {asked} of {tp} is larger than fetch.message.max.bytes "
                f"({self._max_bytes}); raise it to consume this partition")
        if decoded.messages:
            records[tp] = decoded.messages

    def _rejected(self, request: Request, errors: Collection[int], now: float
                  ) -> Received | None:
        """None if the broker took the request's version, answering with these error codes;
        if it did not (UNSUPPORTED_VERSION), the node is lost, to be asked again after the
        backoff."""
        trouble = self._versions.answered(request.link, request.api_key, request.version, errors)
        if trouble is None:
            return None
        return Received({}, self._setback(request.node, trouble, now), False)

    def _setback(self, node: int, trouble: Trouble, now: float) -> list[int]:
        """A request to this node got no usable answer: fail if its version was rejected too
        often in a row, else set its partitions aside until the backoff has passed."""
        if trouble.given_up is not None:
            raise FetchError(trouble.given_up)
        self.node_lost(node, trouble.reason, now)
        return [node]

    # -- trouble ------------------------------------------------------------------------------

    def _set_aside(self, errors: Mapping[int, list[TopicPartition]], now: float) -> None:
        """Set aside the partitions a broker answered with retriable errors, one report per
        error code."""
        for code, partitions in errors.items():
            self._forget_leaders(partitions, f"Kafka error {code} {error_name(code)}", now)

    def _forget_leaders(self, partitions: Collection[TopicPartition], reason: str, now: float
                        ) -> None:
        """Set these partitions aside until metadata names their leaders again."""
        for tp in partitions:
            self._named_leaders.pop(tp, None)
            record = self._partitions.get(tp)
            if record is not None:
                record.leader = None
        self._refresh_at = max(self._refresh_at, now + self._backoff_s)
        self._report_trouble("partitions wait for their leader",
                             [tp for tp in partitions if tp in self._partitions], now,
                             reason=reason, retry_in_ms=round(self._backoff_s * 1000))

    def _report_trouble(self, event: str, partitions: list[TopicPartition], now: float,
                        reason: str | None = None, quiet_for_s: float = 0.0,
                        **fields: Any) -> None:
        """Count these partitions troubled until they fetch again, and report the trouble:
        warned about when it starts (or once it has lasted `quiet_for_s`; debug before), then
        at most every 30 s per event and reason (see `RetryWarnings`)."""
        for tp in partitions:
            self._partitions[tp].troubled = True
        if self._trouble_since is None and self._troubled():
            self._trouble_since = now
        if reason is not None:
            fields["reason"] = reason
        lasted = 0.0 if self._trouble_since is None else round(now - self._trouble_since, 1)
        details = {"for_s": lasted, "partitions": [str(tp) for tp in partitions[:8]],
                   "count": len(partitions), **fields}
        if lasted < quiet_for_s:
            log.debug(event, **details)
            return
        self._reported_at = now
        self._trouble_warned |= self._warnings.report((event, reason), event, **details)

    def _troubled(self) -> bool:
        return any(record.troubled for record in self._partitions.values())

    def _leaderless(self) -> list[TopicPartition]:
        return [tp for tp, record in self._partitions.items() if record.leader is None]

    def _waiting_for_a_leader(self) -> bool:
        return any(record.leader is None for record in self._partitions.values())

    def _settle(self, now: float) -> None:
        """A troubled partition fetches again, or is no longer ours: once none is left
        troubled, say that the trouble is over (at info if it was warned about)."""
        if self._trouble_since is None or self._troubled():
            return
        report = log.info if self._trouble_warned else log.debug
        report("every partition fetches again", after_s=round(now - self._trouble_since, 1))
        self._trouble_since = None
        self._trouble_warned = False


def _note_error(errors: dict[int, list[TopicPartition]], code: int, tp: TopicPartition) -> None:
    """Collect a retriable error code to set its partition aside; raise on any other."""
    if not is_retriable(code):
        raise FetchError(describe_error(code, tp))
    errors.setdefault(code, []).append(tp)

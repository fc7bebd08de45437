"""The wire fetcher's connections and polls against brokers that misbehave, and brokers of
several generations: what the fetch session decides (tests/unit/test_fetch_session.py) carried
out over connections.

Each broker is asked once which versions it speaks (ApiVersions), on the first connection to its
address and again on the next one after a request to it failed; one that leaves the question
unanswered until the timeout, having never answered it (0.9), is spoken to in the legacy
versions, at the cost of one more connection. Connections that close, reset or answer in a form
that cannot be read are opened again for as long as the session retries; a control connection
idle for longer than connections.max.idle.ms is opened again before it is used. The channel
itself tells a request left unanswered from a connection closed or reset, and takes memory for a
response only as its bytes arrive.

The broker is a stand-in for `BrokerChannel`: it answers ApiVersions, Metadata, ListOffsets and
Fetch at once, in the version asked (see `support.kafka_answers`)."""

from __future__ import annotations

import itertools
import socket
import struct
import time
import tracemalloc
from collections import Counter, deque
from collections.abc import Callable, Iterator
from functools import partial

import pytest
from kafka.protocol.admin import ListGroupsResponse
from support.kafka_answers import (
    API_VERSIONS,
    FETCH,
    HEALTHY,
    KAFKA_0_10_0,
    KAFKA_4_0,
    LIST_OFFSETS,
    MESSAGES,
    METADATA,
    NOT_LEADER,
    SICK,
    UNKNOWN_SERVER_ERROR,
    api_versions_answer,
    encoded,
    fetch_answer,
    list_offsets_answer,
    metadata_answer,
)
from support.log_capture import captured_logs

from zkconsumer.fetch import KafkaAccess, LogOffsets, wire_fetcher
from zkconsumer.fetch.wire_fetcher import WireFetcher
from zkconsumer.kafka.errors import ChannelError, FetchError, OffsetsNotAnswered
from zkconsumer.kafka.io import opener
from zkconsumer.kafka.io.channel import BrokerChannel
from zkconsumer.kafka.io.cluster import Cluster
from zkconsumer.kafka.io.cluster_calls import list_offsets
from zkconsumer.kafka.io.opener import Dialer
from zkconsumer.kafka.protocol.codec import LATEST, LIST_GROUPS
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import GroupOffsetsReader, KafkaReadError
from zkconsumer.offsets.kafka_reader import SharedWire

KAFKA_0_9 = None  # an ApiVersions question left unanswered, as 0.9 does


class FakeBroker:
    """Node 0 at fake:9092, leader of both partitions, each holding MESSAGES messages.

    `fetch_errors` and `offset_errors` give, per partition, the codes to answer its next
    requests with (one code used up per request; 0 or exhausted: answer normally). `garbled`,
    `closing`, `resetting` and `timing_out` give, per API key, whether to answer its next
    requests with bytes that do not parse, by closing the connection, by resetting it, or not
    at all until the client's timeout (one used up per request; exhausted: answer)."""

    def __init__(self, offered: dict[int, tuple[int, int]] | None = KAFKA_0_10_0) -> None:
        self.offered = offered
        self.fetch_errors: dict[TopicPartition, Iterator[int]] = {}
        self.offset_errors: dict[TopicPartition, Iterator[int]] = {}
        self.garbled: dict[int, Iterator[bool]] = {}
        self.closing: dict[int, Iterator[bool]] = {}
        self.resetting: dict[int, Iterator[bool]] = {}
        self.timing_out: dict[int, Iterator[bool]] = {}
        self.requests: Counter[tuple[int, int]] = Counter()  # per (API key, version)
        self.connections = 0
        self.sent_on: list[tuple[int, int]] = []  # (connection number, API key) of each request

    @property
    def metadata_requests(self) -> int:
        return sum(count for (api_key, _), count in self.requests.items() if api_key == METADATA)

    def versions_used(self) -> set[tuple[int, int]]:
        return set(self.requests)

    def answer(self, api_key: int, version: int, body: bytes) -> bytes:
        """The response to one request; ChannelError where the connection would end."""
        self.requests[(api_key, version)] += 1
        closing, resetting, timing_out, garbled = (
            next(failures.get(api_key, iter(())), False)
            for failures in (self.closing, self.resetting, self.timing_out, self.garbled))
        if closing:
            raise ChannelError("reading from broker fake:9092 failed: the broker closed the "
                               "connection", closed_by_broker=True)
        if resetting:
            raise ChannelError("reading from broker fake:9092 failed: [Errno 104] Connection "
                               "reset by peer")
        if timing_out or (api_key == API_VERSIONS and self.offered is None):
            raise ChannelError("reading from broker fake:9092 failed: timed out", timed_out=True)
        if garbled:
            return struct.pack(">i", 0) + b"\x00\x00"
        if api_key == API_VERSIONS:
            return api_versions_answer(self.offered)
        if api_key == METADATA:
            return metadata_answer(version, {SICK: 0, HEALTHY: 0}, {0: ("fake", 9092)})
        if api_key == LIST_OFFSETS:
            return list_offsets_answer(version, body, partial(_next_code, self.offset_errors))
        if api_key == LIST_GROUPS:
            return encoded(ListGroupsResponse[version](throttle_time_ms=0, error_code=0, groups=[
                ListGroupsResponse.ListedGroup(group_id="g", protocol_type="consumer",
                                               group_state="Stable")]))
        return fetch_answer(version, body, MESSAGES, partial(_next_code, self.fetch_errors))


def _next_code(codes: dict[TopicPartition, Iterator[int]], tp: TopicPartition) -> int:
    return next(codes.get(tp, iter(())), 0)


class FakeChannel:
    """What the fetcher needs of a `BrokerChannel`: answers queued as requests are sent (or the
    ChannelError the broker's answer was), and a socket the fetcher's selector sees readable
    while an answer waits."""

    def __init__(self, broker: FakeBroker, host: str, port: int, **_options) -> None:
        self.address = f"{host}:{port}"
        self._broker = broker
        broker.connections += 1
        self._number = broker.connections
        self._answers: deque[bytes | ChannelError] = deque()
        self._readable, self._signal = socket.socketpair()

    def fileno(self) -> int:
        return self._readable.fileno()

    def has_buffered_data(self) -> bool:
        return False

    def send(self, api_key: int, version: int, body: bytes) -> None:
        self._broker.sent_on.append((self._number, api_key))
        try:
            self._answers.append(self._broker.answer(api_key, version, body))
        except ChannelError as failure:
            self._answers.append(failure)
        self._signal.send(b"\0")

    def receive(self, timeout_s: float | None = None) -> bytes:
        self._readable.recv(1)
        answer = self._answers.popleft()
        if isinstance(answer, ChannelError):
            raise answer
        return answer

    def request(self, api_key: int, version: int, body: bytes,
                timeout_s: float | None = None) -> bytes:
        self.send(api_key, version, body)
        return self.receive(timeout_s)

    def close(self) -> None:
        self._readable.close()
        self._signal.close()


@pytest.fixture
def broker(monkeypatch) -> FakeBroker:
    fake = FakeBroker()
    monkeypatch.setattr(opener, "BrokerChannel", partial(FakeChannel, fake))
    return fake


@pytest.fixture
def open_fetcher():
    opened = []

    def open_with(backoff_ms: int, api_version: tuple[int, ...] | None = (0, 10),
                  clock: Callable[[], float] = time.monotonic, **settings) -> WireFetcher:
        fetcher = WireFetcher({
            "bootstrap_servers": "fake:9092", "api_version": api_version, "client_id": "test",
            "fetch_max_wait_ms": 100, "fetch_min_bytes": 1, "max_partition_fetch_bytes": 1 << 20,
            "request_timeout_ms": 30_000, "retry_backoff_ms": backoff_ms,
            "auto_offset_reset": "earliest", **settings}, clock)
        opened.append(fetcher)
        return fetcher

    yield open_with
    for fetcher in opened:
        fetcher.close()


def delivered(fetcher: WireFetcher, polls: int) -> dict[TopicPartition, list[int]]:
    """The offsets each partition delivered over this many polls (each answers at once)."""
    offsets: dict[TopicPartition, list[int]] = {SICK: [], HEALTHY: []}
    for _ in range(polls):
        for tp, messages in fetcher.poll(timeout_ms=0).items():
            offsets[tp].extend(m.offset for m in messages)
    return offsets


EVERYTHING = {SICK: list(range(MESSAGES)), HEALTHY: list(range(MESSAGES))}


# -- Kafka error codes ----------------------------------------------------------------------

@pytest.mark.parametrize("code", [UNKNOWN_SERVER_ERROR, NOT_LEADER])
def test_a_retriable_fetch_error_sets_the_partition_aside_and_retries_it(
        broker, open_fetcher, code):
    broker.fetch_errors[SICK] = iter([code])
    fetcher = open_fetcher(backoff_ms=0)
    fetcher.assign({SICK: 0, HEALTHY: 0})
    assert delivered(fetcher, polls=10) == EVERYTHING  # nothing lost, nothing twice
    assert broker.metadata_requests == 2  # the first look-up, then its leader found again


def test_an_error_no_retry_can_fix_fails_the_poll_with_one_line(broker, open_fetcher):
    broker.offset_errors[SICK] = iter([29])
    fetcher = open_fetcher(backoff_ms=0)
    fetcher.assign({SICK: None, HEALTHY: 0})
    with pytest.raises(FetchError, match="^Kafka error 29 TOPIC_AUTHORIZATION_FAILED for t-0$"):
        delivered(fetcher, polls=5)


# -- versions -------------------------------------------------------------------------------

def test_a_modern_broker_is_asked_once_and_spoken_to_in_the_newest_versions(
        broker, open_fetcher):
    broker.offered = KAFKA_4_0
    broker.fetch_errors[SICK] = iter([NOT_LEADER, NOT_LEADER])  # two more metadata look-ups
    fetcher = open_fetcher(backoff_ms=0, api_version=None)
    fetcher.assign({SICK: None, HEALTHY: 0})
    assert delivered(fetcher, polls=10) == EVERYTHING
    assert broker.versions_used() == {(API_VERSIONS, 0), (METADATA, 12), (LIST_OFFSETS, 10),
                                      (FETCH, 12)}
    assert broker.requests[(API_VERSIONS, 0)] == 1  # the answer holds for the broker's address
    assert broker.metadata_requests == 3


def test_a_broker_leaving_api_versions_unanswered_gets_legacy_versions_for_one_more_connection(
        broker, open_fetcher):
    broker.offered = KAFKA_0_9
    fetcher = open_fetcher(backoff_ms=0, api_version=None)
    fetcher.assign({SICK: None, HEALTHY: 0})
    with captured_logs() as logs:
        assert delivered(fetcher, polls=10) == EVERYTHING
    assert broker.versions_used() == {(API_VERSIONS, 0), (METADATA, 0), (LIST_OFFSETS, 0),
                                      (FETCH, 2)}
    assert broker.requests[(API_VERSIONS, 0)] == 1
    # metadata (asked, then connected again), list offsets, fetch
    assert broker.connections == 4
    assert [e["event"] for e in logs if e["log_level"] == "info"] == [
        "broker does not answer ApiVersions; speaking the pre-0.10 versions"]


def test_an_api_versions_answer_lost_after_the_broker_answered_once_keeps_its_versions(
        broker, open_fetcher):
    """A reset fetch connection has the broker asked again, and that answer does not come in
    time. The broker answered before, so it is not older than 0.10: spoken to in Fetch v2, a
    4.x broker would refuse it, a 0.11-3.x one convert its data down, headers dropped."""
    broker.offered = KAFKA_4_0
    broker.resetting[FETCH] = iter([True])
    broker.timing_out[API_VERSIONS] = iter([False, True])
    fetcher = open_fetcher(backoff_ms=0, api_version=None)
    fetcher.assign({SICK: 0, HEALTHY: 0})
    with captured_logs() as logs:
        assert delivered(fetcher, polls=10) == EVERYTHING
    assert broker.versions_used() == {(API_VERSIONS, 0), (METADATA, 12), (FETCH, 12)}
    assert broker.requests[(API_VERSIONS, 0)] == 3  # answered, lost, answered
    assert not [e for e in logs if e["event"].startswith("broker does not answer ApiVersions")]


@pytest.mark.parametrize("failure", ["closing", "resetting"])
def test_a_connection_closed_or_reset_when_asked_api_versions_is_retried(
        broker, open_fetcher, failure):
    """Not an answer, and not the silence of a 0.9 broker either: trouble of the connection.
    A broker older than 0.9 closes it, so that case says how to tell it apart."""
    broker.offered = KAFKA_4_0
    getattr(broker, failure)[API_VERSIONS] = iter([True, True])
    fetcher = open_fetcher(backoff_ms=0, api_version=None)
    fetcher.assign({SICK: None, HEALTHY: 0})
    with captured_logs() as logs:
        assert delivered(fetcher, polls=10) == EVERYTHING
    assert broker.versions_used() == {(API_VERSIONS, 0), (METADATA, 12), (LIST_OFFSETS, 10),
                                      (FETCH, 12)}
    assert broker.requests[(API_VERSIONS, 0)] == 3
    (retry, *_) = [e for e in logs if e["event"] == "no broker answered a metadata request; "
                                                    "retrying"]
    assert ("set kafka.api.version to its version" in retry["errors"][0]) is (
        failure == "closing")


def test_brokers_known_to_predate_api_versions_are_not_asked(broker, open_fetcher):
    broker.offered = KAFKA_0_9
    fetcher = open_fetcher(backoff_ms=0, api_version=(0, 9))
    fetcher.assign({SICK: None, HEALTHY: 0})
    assert delivered(fetcher, polls=10) == EVERYTHING
    assert broker.versions_used() == {(METADATA, 0), (LIST_OFFSETS, 0), (FETCH, 1)}
    assert broker.connections == 3


# -- answers that cannot be used: bounded retries -------------------------------------------

@pytest.mark.parametrize("api_key, request_name, positions", [
    (LIST_OFFSETS, "ListOffsets v0", {SICK: None, HEALTHY: 0}),
    (FETCH, "Fetch v2", {SICK: 0, HEALTHY: 0}),
    (METADATA, "Metadata v1", {SICK: 0, HEALTHY: 0}),
])
def test_answers_that_do_not_parse_fail_after_three_attempts_with_one_line(
        broker, open_fetcher, api_key, request_name, positions):
    broker.garbled[api_key] = itertools.repeat(True)
    fetcher = open_fetcher(backoff_ms=0)
    fetcher.assign(positions)
    with pytest.raises(FetchError) as failure:
        delivered(fetcher, polls=20)
    assert str(failure.value) == (
        f"broker fake:9092 did not answer {request_name} in a form we can read (response ends "
        "early: 6 bytes, a field of 4 at byte 4) 3 times; the broker offered this version in "
        "its ApiVersions answer")
    assert broker.requests[(api_key, int(request_name[-1]))] == 3
    assert broker.requests[(API_VERSIONS, 0)] == 3  # asked again each time, in case it changed


def test_a_broker_closing_connections_now_and_then_is_retried(broker, open_fetcher):
    broker.offered = KAFKA_4_0
    broker.closing[FETCH] = iter([True, True, False] * 4)  # a broker restarting, repeatedly
    fetcher = open_fetcher(backoff_ms=0, api_version=None)
    fetcher.assign({SICK: 0, HEALTHY: 0})
    assert delivered(fetcher, polls=40) == EVERYTHING


@pytest.mark.parametrize("idle_s, reopened", [(61.0, True), (59.0, False)])
def test_a_control_connection_idle_longer_than_connections_max_idle_ms_is_opened_again(
        broker, open_fetcher, idle_s, reopened):
    """Offset resets are rare: rather than have the broker close the connection they use
    after its connections.max.idle.ms and find out from the next request, open a new one."""
    idle = [0.0]  # time the test lets pass, on top of the real clock
    fetcher = open_fetcher(backoff_ms=0, connections_max_idle_ms=60_000,
                           clock=lambda: time.monotonic() + idle[0])
    fetcher.assign({SICK: None, HEALTHY: 0})
    delivered(fetcher, polls=3)
    idle[0] = idle_s
    fetcher.assign({SICK: None, HEALTHY: 0}, restart=[SICK])
    assert delivered(fetcher, polls=3)[SICK] == list(range(MESSAGES))
    first, second = [number for number, api_key in broker.sent_on if api_key == LIST_OFFSETS]
    assert (first != second) is reopened


def test_the_channel_tells_a_request_left_unanswered_from_a_closed_or_reset_connection():
    """Only the first is what a 0.9 broker does with ApiVersions."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        host, port = server.getsockname()
        failures = {}
        silent = BrokerChannel(host, port, client_id="test", timeout_s=5)
        closing = BrokerChannel(host, port, client_id="test", timeout_s=5)
        resetting = BrokerChannel(host, port, client_id="test", timeout_s=5)
        (kept, _), (closed, _), (reset, _) = server.accept(), server.accept(), server.accept()
        closed.close()  # before the request: the channel reads the end of the stream
        resetting.send(API_VERSIONS, 0, b"")
        reset.close()  # with the request unread: the broker's end resets the connection
        for name, channel, request in [
                ("silent", silent, lambda c: c.request(API_VERSIONS, 0, b"", timeout_s=0.05)),
                ("closing", closing, lambda c: c.request(API_VERSIONS, 0, b"")),
                ("resetting", resetting, lambda c: c.receive())]:
            with pytest.raises(ChannelError) as failure:
                request(channel)
            failures[name] = (failure.value.timed_out, failure.value.closed_by_broker)
        kept.close()
    assert failures == {"silent": (True, False), "closing": (False, True),
                        "resetting": (False, False)}


def test_closed_connections_to_a_legacy_broker_are_retried_for_as_long_as_they_last(
        broker, open_fetcher):
    """0.9 never offered the version, so a closed connection is trouble of the connection (a
    broker restarting, a proxy cut off), not a rejection."""
    broker.offered = KAFKA_0_9
    broker.closing[FETCH] = iter([True] * 12)
    broker.closing[LIST_OFFSETS] = iter([True] * 12)
    fetcher = open_fetcher(backoff_ms=0, api_version=(0, 9))
    fetcher.assign({SICK: None, HEALTHY: 0})
    assert delivered(fetcher, polls=80) == EVERYTHING


# -- what the requests carry ------------------------------------------------------------------

def test_isolation_level_is_a_wire_option():
    assert wire_fetcher.wire_unsupported_reason({"isolation_level": "read_committed"}) is None


def test_a_huge_announced_response_size_costs_memory_only_as_its_bytes_arrive():
    """Four bytes of an HTTP server's answer ("HTTP") read as a size announce 1.2 GB."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    channel = BrokerChannel("127.0.0.1", server.getsockname()[1], client_id="t", timeout_s=5)
    peer, _ = server.accept()
    try:
        channel.send(18, 0, b"")
        peer.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        peer.close()
        tracemalloc.start()
        with pytest.raises(ChannelError, match="reading from broker"):  # a close or a reset
            channel.receive()
        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 16 * 2**20, f"{peak} bytes allocated for a 29-byte answer"
    finally:
        channel.close()
        server.close()


def test_a_broker_host_name_that_cannot_be_encoded_is_a_channel_error():
    with pytest.raises(ChannelError, match="cannot connect to broker"):
        BrokerChannel("a" * 64 + ".example", 9092, client_id="t", timeout_s=1)


def test_the_cluster_client_asks_metadata_only_for_a_leader_unknown_or_moved(broker):
    """Log offsets (lag, resets) are asked of the leaders the cluster client knows: one
    Metadata request for the first question, another only after a leader answered
    NOT_LEADER_FOR_PARTITION or its connection failed."""
    cluster = Cluster(Dialer("test", 30.0, None, None), "fake:9092", (0, 10))
    both = {SICK: LATEST, HEALTHY: LATEST}

    def ask() -> dict:
        return list_offsets(cluster, both, timeout_s=5.0, sleep=lambda _s: None)

    try:
        assert ask() == ask() == {SICK: 0, HEALTHY: 0}
        assert broker.metadata_requests == 1
        broker.offset_errors[SICK] = iter([NOT_LEADER])
        assert ask() == {SICK: 0, HEALTHY: 0}
        assert broker.metadata_requests == 2
        broker.resetting[LIST_OFFSETS] = iter([True])
        assert ask() == ask() == {SICK: 0, HEALTHY: 0}
        assert broker.metadata_requests == 3
    finally:
        cluster.close()


def test_log_offsets_and_groups_are_read_over_one_connection_per_broker(broker):
    """The admin commands and the exporter read groups (`GroupOffsetsReader`) over the
    connections of their log-offsets client (`SharedWire`): one per broker, not two."""
    broker.offered = {**KAFKA_0_10_0, LIST_GROUPS: (0, 0)}
    log = LogOffsets("fake:9092", (0, 10))
    reader = GroupOffsetsReader(KafkaAccess("fake:9092", (0, 10)), {},
                                wire=lambda: SharedWire(log))
    try:
        assert log.latest([SICK, HEALTHY]) == {SICK: 0, HEALTHY: 0}
        assert [group.group_id for group in reader.list_groups()] == ["g"]
        assert log.latest([SICK]) == {SICK: 0}
        assert broker.connections == 1
    finally:
        reader.close()
        log.close()
    with pytest.raises(KafkaReadError, match="closed"):
        GroupOffsetsReader(KafkaAccess("fake:9092", (0, 10)), {},
                           wire=lambda: SharedWire(log)).list_groups()


def test_offsets_asked_until_the_timeout_carry_what_was_answered(broker):
    """A partition whose leader keeps answering NOT_LEADER_FOR_PARTITION is named when the time
    is up, and the partitions answered meanwhile come with the error, so that nobody asks them
    (and waits) again."""
    cluster = Cluster(Dialer("test", 30.0, None, None), "fake:9092", (0, 10))
    broker.offset_errors[SICK] = itertools.repeat(NOT_LEADER)
    ticks = itertools.count(step=0.4)
    try:
        with pytest.raises(OffsetsNotAnswered, match="no offsets for 1 partitions") as raised:
            list_offsets(cluster, {SICK: LATEST, HEALTHY: LATEST}, timeout_s=2.0,
                         clock=lambda: next(ticks), sleep=lambda _s: None)
        assert raised.value.found == {HEALTHY: 0} and raised.value.missing == [SICK]
    finally:
        cluster.close()

"""The wire fetcher against brokers that misbehave, and brokers of several generations.

Error codes: retriable ones set only their partition aside until its leader is found again, at
most every refresh.leader.backoff.ms, and are warned about once; the others fail the member
with one line naming partition, code and name.

Versions: each broker is asked once which versions it speaks (ApiVersions), and spoken to in
the newest both sides know; one that leaves the question unanswered until the timeout, having
never answered it (0.9), is spoken to in the legacy versions, at the cost of one more
connection. A broker that answers a version in a form that cannot be read, with
UNSUPPORTED_VERSION, or (having offered it) by closing a connection before it answered that
request on it, is asked again a few times, then the member fails with one line naming broker
and request; other connection trouble is retried for as long as it lasts.

The broker is a stand-in for `BrokerChannel`: it answers ApiVersions, Metadata, ListOffsets and
Fetch at once, in the version asked, with responses encoded by kafka-python, an independent
implementation of the same layouts."""

from __future__ import annotations

import itertools
import socket
import struct
import time
import tracemalloc
from collections import Counter, deque
from collections.abc import Iterator
from functools import partial

import pytest
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata.api_versions import ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataResponse
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from support.log_capture import captured_logs

from zkconsumer.fetch import kafka_protocol as protocol
from zkconsumer.fetch import wire_fetcher
from zkconsumer.fetch.broker_channel import BrokerChannel, ChannelError
from zkconsumer.fetch.broker_versions import RejectedRequests
from zkconsumer.fetch.errors import FetchError
from zkconsumer.fetch.wire_fetcher import WireFetcher
from zkconsumer.model import TopicPartition

TOPIC = "t"
SICK, HEALTHY = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
MESSAGES = 3  # in each partition's log
NOT_LEADER, OFFSET_NOT_AVAILABLE, KAFKA_STORAGE_ERROR, UNKNOWN_SERVER_ERROR = 6, 78, 56, -1
UNSUPPORTED_VERSION = 35
FETCH, LIST_OFFSETS, METADATA, API_VERSIONS = (protocol.FETCH, protocol.LIST_OFFSETS,
                                               protocol.METADATA, protocol.API_VERSIONS)
# ApiVersions answers (None: the question is left unanswered, as 0.9 does)
KAFKA_0_10_0 = {FETCH: (0, 2), LIST_OFFSETS: (0, 0), METADATA: (0, 1), API_VERSIONS: (0, 0)}
KAFKA_0_10_2 = {FETCH: (0, 3), LIST_OFFSETS: (0, 1), METADATA: (0, 2), API_VERSIONS: (0, 0)}
KAFKA_4_0 = {FETCH: (4, 17), LIST_OFFSETS: (1, 10), METADATA: (0, 13), API_VERSIONS: (0, 4)}
KAFKA_0_9 = None


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
        self.aborted: list[tuple[int, int]] = []  # in every v4+ fetch answer
        self.leaderless: dict[TopicPartition, Iterator[bool]] = {}  # per metadata answer
        self.fetches: Counter[TopicPartition] = Counter()  # fetch requests naming each partition
        self.requests: Counter[tuple[int, int]] = Counter()  # per (API key, version)
        self.fetched_orders: list[list[TopicPartition]] = []  # partitions of each fetch, in order
        self.fetched_offsets: list[dict[TopicPartition, int]] = []  # what each fetch asked
        self.fetch_bodies: list[bytes] = []  # each fetch request as sent
        self.isolation_levels: set[int] = set()  # of the fetch and list offsets requests
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
            response = ApiVersionsResponse[0](error_code=0, api_keys=[
                ApiVersionsResponse.ApiVersion(api_key=key, min_version=low, max_version=high)
                for key, (low, high) in self.offered.items()])
        elif api_key == METADATA:
            partition = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
            response = MetadataResponse[version](
                brokers=[MetadataResponse.MetadataResponseBroker(node_id=0, host="fake",
                                                                 port=9092)],
                topics=[MetadataResponse.MetadataResponseTopic(
                    error_code=0, name=TOPIC, partitions=[
                        partition(error_code=0, partition_index=tp.partition,
                                  leader_id=-1 if next(self.leaderless.get(tp, iter(())), False)
                                  else 0, replica_nodes=[0], isr_nodes=[0], offline_replicas=[])
                        for tp in (SICK, HEALTHY)])])
        elif api_key == LIST_OFFSETS:
            request = ListOffsetsRequest.decode(body, version=version)
            self.isolation_levels.add(request.isolation_level if version >= 2 else 0)
            response = ListOffsetsResponse[version](throttle_time_ms=0, topics=[
                ListOffsetsResponse.ListOffsetsTopicResponse(name=topic.name, partitions=[
                    self._offsets(TopicPartition(topic.name, p.partition_index))
                    for p in topic.partitions]) for topic in request.topics])
        else:
            request = FetchRequest.decode(body, version=version)
            self.isolation_levels.add(request.isolation_level if version >= 4 else 0)
            self.fetched_orders.append([TopicPartition(topic.topic, p.partition)
                                        for topic in request.topics for p in topic.partitions])
            self.fetched_offsets.append({TopicPartition(topic.topic, p.partition): p.fetch_offset
                                         for topic in request.topics for p in topic.partitions})
            self.fetch_bodies.append(body)
            response = FetchResponse[version](throttle_time_ms=0, error_code=0, session_id=0,
                                              responses=[
                FetchResponse.FetchableTopicResponse(topic=topic.topic, partitions=[
                    self._fetch(TopicPartition(topic.topic, p.partition), p.fetch_offset)
                    for p in topic.partitions]) for topic in request.topics])
        return self._encode(response)

    @staticmethod
    def _encode(response) -> bytes:
        response.with_header(correlation_id=0)
        return bytes(response.encode(header=True))

    def _offsets(self, tp: TopicPartition):
        error = next(self.offset_errors.get(tp, iter(())), 0)
        return ListOffsetsResponse.ListOffsetsTopicResponse.ListOffsetsPartitionResponse(
            partition_index=tp.partition, error_code=error,
            old_style_offsets=[] if error else [0], timestamp=-1, offset=-1 if error else 0)

    def _fetch(self, tp: TopicPartition, offset: int):
        self.fetches[tp] += 1
        error = next(self.fetch_errors.get(tp, iter(())), 0)
        data = FetchResponse.FetchableTopicResponse.PartitionData
        if error:
            return data(partition_index=tp.partition, error_code=error, high_watermark=-1,
                        records=b"")
        builder = LegacyRecordBatchBuilder(1, 0, 1 << 20)
        for position in range(offset, MESSAGES):
            builder.append(position, 1_700_000_000_000, None, b"%s@%d" % (str(tp).encode(),
                                                                         position))
        return data(partition_index=tp.partition, error_code=0, high_watermark=MESSAGES,
                    last_stable_offset=MESSAGES, aborted_transactions=self.aborted,
                    records=bytes(builder.build()))


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
    monkeypatch.setattr(wire_fetcher, "BrokerChannel", partial(FakeChannel, fake))
    return fake


@pytest.fixture
def open_fetcher():
    opened = []

    def open_with(backoff_ms: int, api_version: tuple[int, ...] | None = (0, 10),
                  **settings) -> WireFetcher:
        fetcher = WireFetcher({
            "bootstrap_servers": "fake:9092", "api_version": api_version, "client_id": "test",
            "fetch_max_wait_ms": 100, "fetch_min_bytes": 1, "max_partition_fetch_bytes": 1 << 20,
            "request_timeout_ms": 30_000, "retry_backoff_ms": backoff_ms,
            "auto_offset_reset": "earliest", **settings})
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

@pytest.mark.parametrize("code", [UNKNOWN_SERVER_ERROR, KAFKA_STORAGE_ERROR, NOT_LEADER,
                                  OFFSET_NOT_AVAILABLE])
def test_a_retriable_fetch_error_sets_the_partition_aside_and_retries_it(
        broker, open_fetcher, code):
    broker.fetch_errors[SICK] = iter([code])
    fetcher = open_fetcher(backoff_ms=0)
    fetcher.assign({SICK: 0, HEALTHY: 0})
    assert delivered(fetcher, polls=10) == EVERYTHING  # nothing lost, nothing twice
    assert broker.metadata_requests == 2  # the first look-up, then its leader found again


def test_a_partition_in_error_waits_the_backoff_while_the_others_keep_flowing(
        broker, open_fetcher):
    broker.fetch_errors[SICK] = itertools.repeat(KAFKA_STORAGE_ERROR)
    fetcher = open_fetcher(backoff_ms=600_000)
    fetcher.assign({SICK: 0, HEALTHY: 0})
    offsets = delivered(fetcher, polls=50)
    assert offsets == {SICK: [], HEALTHY: list(range(MESSAGES))}
    assert broker.fetches[SICK] == 1  # not asked again before refresh.leader.backoff.ms
    assert broker.fetches[HEALTHY] >= 40  # while this one was asked at every poll
    assert broker.metadata_requests == 1


def test_a_retriable_list_offsets_error_retries_the_reset(broker, open_fetcher):
    broker.offset_errors[SICK] = iter([UNKNOWN_SERVER_ERROR, KAFKA_STORAGE_ERROR])
    fetcher = open_fetcher(backoff_ms=0)
    fetcher.assign({SICK: None, HEALTHY: 0})
    assert delivered(fetcher, polls=10) == EVERYTHING
    assert broker.metadata_requests == 3


@pytest.mark.parametrize("errors", [
    pytest.param([NOT_LEADER] * 20, id="persistent"),
    pytest.param([UNKNOWN_SERVER_ERROR, 0] * 20, id="on-and-off"),
])
def test_an_error_that_keeps_coming_back_is_warned_about_once(broker, open_fetcher, errors):
    broker.fetch_errors[SICK] = iter(errors)
    fetcher = open_fetcher(backoff_ms=0)
    fetcher.assign({SICK: 0, HEALTHY: 0})
    with captured_logs() as logs:
        assert delivered(fetcher, polls=len(errors) * 3) == EVERYTHING
    assert broker.fetches[SICK] > len(errors)  # every error was retried, then it fetched again
    retries = [e for e in logs if e["event"] == "partitions wait for their leader"]
    assert len(retries) == errors.count(NOT_LEADER) + errors.count(UNKNOWN_SERVER_ERROR)
    assert [(e["log_level"], e["event"]) for e in logs if e["log_level"] != "debug"] == [
        ("warning", "partitions wait for their leader"),
        ("info", "every partition fetches again")]


def test_a_leader_unknown_for_a_moment_is_not_warned_about(broker, open_fetcher):
    """As when a topic was just created: every member meeting it warned, a line per member."""
    broker.leaderless[SICK] = iter([True] * 3)
    fetcher = open_fetcher(backoff_ms=0)
    fetcher.assign({SICK: 0, HEALTHY: 0})
    with captured_logs() as logs:
        assert delivered(fetcher, polls=20) == EVERYTHING
    waits = [e for e in logs if e["event"] == "waiting for partition leaders"]
    assert waits and {e["log_level"] for e in waits} == {"debug"}
    assert [e for e in logs if e["log_level"] != "debug"] == []


def test_a_leader_unknown_for_longer_is_warned_about_once(broker, open_fetcher, monkeypatch):
    monkeypatch.setattr(wire_fetcher, "LEADER_WAIT_WARN_S", 0.0)
    broker.leaderless[SICK] = iter([True] * 5)
    fetcher = open_fetcher(backoff_ms=0)
    fetcher.assign({SICK: 0, HEALTHY: 0})
    with captured_logs() as logs:
        assert delivered(fetcher, polls=20) == EVERYTHING
    assert [(e["log_level"], e["event"]) for e in logs if e["log_level"] != "debug"] == [
        ("warning", "waiting for partition leaders"), ("info", "every partition fetches again")]


@pytest.mark.parametrize("code, line", [
    (29, "Kafka error 29 TOPIC_AUTHORIZATION_FAILED for t-0"),
    (2, "Kafka error 2 CORRUPT_MESSAGE for t-0"),
    (9999, "Kafka error 9999 UNRECOGNIZED for t-0"),
])
@pytest.mark.parametrize("request_kind", ["fetch", "list-offsets"])
def test_an_error_no_retry_can_fix_fails_with_one_line_naming_it(
        broker, open_fetcher, code, line, request_kind):
    if request_kind == "fetch":
        broker.fetch_errors[SICK] = iter([code])
    else:
        broker.offset_errors[SICK] = iter([code])
    fetcher = open_fetcher(backoff_ms=0)
    fetcher.assign({SICK: 0 if request_kind == "fetch" else None, HEALTHY: 0})
    with pytest.raises(FetchError) as failure:
        delivered(fetcher, polls=5)
    assert str(failure.value) == line


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


@pytest.mark.parametrize("offered, api_version, fetch_version", [
    pytest.param(KAFKA_0_10_2, None, 3, id="0.10.2"),
    pytest.param(KAFKA_0_9, None, 2, id="0.9-unanswered"),
    pytest.param(KAFKA_0_9, (0, 9), 1, id="0.9-configured"),
])
def test_read_committed_from_a_broker_older_than_0_11_fails_with_one_line(
        broker, open_fetcher, offered, api_version, fetch_version):
    """A Fetch below v4 has no isolation level: the broker would deliver aborted records."""
    broker.offered = offered
    fetcher = open_fetcher(backoff_ms=0, api_version=api_version,
                           isolation_level="read_committed")
    fetcher.assign({SICK: None, HEALTHY: 0})
    with pytest.raises(FetchError) as failure:
        delivered(fetcher, polls=3)
    assert str(failure.value) == (
        "isolation.level=read_committed needs Kafka 0.11 or newer; broker fake:9092 speaks "
        f"Fetch v{fetch_version}")
    assert broker.versions_used() <= {(API_VERSIONS, 0)}


def test_brokers_known_to_predate_api_versions_are_not_asked(broker, open_fetcher):
    broker.offered = KAFKA_0_9
    fetcher = open_fetcher(backoff_ms=0, api_version=(0, 9))
    fetcher.assign({SICK: None, HEALTHY: 0})
    assert delivered(fetcher, polls=10) == EVERYTHING
    assert broker.versions_used() == {(METADATA, 0), (LIST_OFFSETS, 0), (FETCH, 1)}
    assert broker.connections == 3


def test_a_broker_whose_versions_do_not_meet_ours_fails_at_once_naming_it(broker, open_fetcher):
    broker.offered = {**KAFKA_4_0, FETCH: (13, 18)}
    fetcher = open_fetcher(backoff_ms=0, api_version=None)
    fetcher.assign({SICK: 0, HEALTHY: 0})
    with pytest.raises(FetchError, match="^broker fake:9092 speaks Fetch v13-v18 and zkconsumer "
                                         "v0-v12: no version in common"):
        delivered(fetcher, polls=1)


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


def test_a_garbled_answer_from_a_broker_configured_as_old_names_the_setting(
        broker, open_fetcher):
    broker.offered = KAFKA_0_9
    broker.garbled[LIST_OFFSETS] = itertools.repeat(True)
    fetcher = open_fetcher(backoff_ms=0, api_version=(0, 9))
    fetcher.assign({SICK: None, HEALTHY: 0})
    with pytest.raises(FetchError, match=r"ListOffsets v0 .* 3 times; kafka.api.version \(or "
                                         r"the broker registrations in ZooKeeper\) says"):
        delivered(fetcher, polls=20)


def test_rejections_count_per_broker_request_and_version_in_a_row():
    rejections = RejectedRequests(limit=3)
    assert rejections.note("a:1", "Fetch", 12, "garbled", "hint") is None
    assert rejections.note("b:1", "Fetch", 12, "garbled", "hint") is None  # another broker
    assert rejections.note("a:1", "ListOffsets", 9, "garbled", "hint") is None  # another request
    assert rejections.note("a:1", "Fetch", 11, "garbled", "hint") is None  # another version
    assert rejections.note("a:1", "Fetch", 11, "garbled", "hint") is None
    rejections.clear("a:1", "Fetch")
    assert rejections.note("a:1", "Fetch", 11, "garbled", "hint") is None
    assert rejections.note("a:1", "Fetch", 11, "garbled", "hint") is None
    assert rejections.note("a:1", "Fetch", 11, "closed", "the hint") == (
        "broker a:1 did not answer Fetch v11 in a form we can read (closed) 3 times; the hint")


def test_answers_that_parse_in_between_reset_the_count(broker, open_fetcher):
    broker.garbled[FETCH] = iter([True, True, False] * 3)
    fetcher = open_fetcher(backoff_ms=0)
    fetcher.assign({SICK: 0, HEALTHY: 0})
    assert delivered(fetcher, polls=30) == EVERYTHING


@pytest.mark.parametrize("request_kind, request_name", [("fetch", "Fetch v2"),
                                                        ("list-offsets", "ListOffsets v0")])
def test_unsupported_version_is_asked_again_then_fails_with_one_line(
        broker, open_fetcher, request_kind, request_name):
    if request_kind == "fetch":
        broker.fetch_errors[SICK] = itertools.repeat(UNSUPPORTED_VERSION)
    else:
        broker.offset_errors[SICK] = itertools.repeat(UNSUPPORTED_VERSION)
    fetcher = open_fetcher(backoff_ms=0)
    fetcher.assign({SICK: 0 if request_kind == "fetch" else None, HEALTHY: 0})
    with pytest.raises(FetchError) as failure:
        delivered(fetcher, polls=20)
    assert str(failure.value) == (
        f"broker fake:9092 did not answer {request_name} in a form we can read (Kafka error 35 "
        "UNSUPPORTED_VERSION) 3 times; the broker offered this version in its ApiVersions "
        "answer")


def test_a_broker_closing_the_connection_on_a_version_it_offered_fails_after_three_attempts(
        broker, open_fetcher):
    broker.offered = KAFKA_4_0
    broker.closing[FETCH] = itertools.repeat(True)
    fetcher = open_fetcher(backoff_ms=0, api_version=None)
    fetcher.assign({SICK: 0, HEALTHY: 0})
    with pytest.raises(FetchError) as failure:
        delivered(fetcher, polls=20)
    assert str(failure.value) == (
        "broker fake:9092 did not answer Fetch v12 in a form we can read (it closed the "
        "connection) 3 times; the broker offered this version in its ApiVersions answer")


def test_a_broker_closing_connections_now_and_then_is_retried(broker, open_fetcher):
    broker.offered = KAFKA_4_0
    broker.closing[FETCH] = iter([True, True, False] * 4)  # a broker restarting, repeatedly
    fetcher = open_fetcher(backoff_ms=0, api_version=None)
    fetcher.assign({SICK: 0, HEALTHY: 0})
    assert delivered(fetcher, polls=40) == EVERYTHING


def test_a_close_on_a_connection_that_already_answered_the_request_is_not_a_rejection(
        broker, open_fetcher):
    """A broker closes idle connections, and long-polling fetches when it shuts down: once a
    connection had an answer to a request, closing it cannot reject that request's version.
    Here a working fetch connection is closed, then the next two before they answer: two
    rejections in a row, one short of failing."""
    broker.offered = KAFKA_4_0
    broker.closing[FETCH] = iter([False, True, True, True])
    fetcher = open_fetcher(backoff_ms=0, api_version=None)
    fetcher.assign({SICK: 0, HEALTHY: 0})
    with captured_logs() as logs:
        assert delivered(fetcher, polls=20) == EVERYTHING
    rejected = ("broker fake:9092 did not answer Fetch v12 in a form we can read (it closed the "
                "connection)")
    assert [e["reason"] for e in logs if e["event"] == "partitions wait for their leader"] == [
        "reading from broker fake:9092 failed: the broker closed the connection", rejected,
        rejected]


@pytest.mark.parametrize("max_idle_ms, reopened", [(1, True), (600_000, False)])
def test_a_control_connection_idle_longer_than_connections_max_idle_ms_is_opened_again(
        broker, open_fetcher, max_idle_ms, reopened):
    """Offset resets are rare: rather than have the broker close the connection they use
    after its connections.max.idle.ms and find out from the next request, open a new one."""
    fetcher = open_fetcher(backoff_ms=0, connections_max_idle_ms=max_idle_ms)
    fetcher.assign({SICK: None, HEALTHY: 0})
    delivered(fetcher, polls=3)
    time.sleep(0.02)
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

@pytest.mark.parametrize("isolation_level, code", [("read_uncommitted", 0),
                                                   ("read_committed", 1)])
def test_the_isolation_level_goes_to_a_broker_that_knows_it_and_aborted_transactions_come_back(
        broker, open_fetcher, monkeypatch, isolation_level, code):
    decoded_with = []
    real_decode = wire_fetcher.decode_records

    def decode_records(data, topic, partition, fetch_offset, check_crcs, aborted, **_bounds):
        decoded_with.append(aborted)
        return real_decode(data, topic, partition, fetch_offset, check_crcs, aborted)

    monkeypatch.setattr(wire_fetcher, "decode_records", decode_records)
    broker.offered = KAFKA_4_0
    broker.aborted = [(5, 0)]
    fetcher = open_fetcher(backoff_ms=0, api_version=None, isolation_level=isolation_level)
    fetcher.assign({SICK: None, HEALTHY: 0})
    delivered(fetcher, polls=5)
    assert broker.isolation_levels == {code}
    assert decoded_with and set(map(repr, decoded_with)) == {
        "[(5, 0)]" if code else "None"}


def test_isolation_level_is_a_wire_option():
    assert wire_fetcher.wire_unsupported_reason({"isolation_level": "read_committed"}) is None


def test_the_high_watermark_of_each_partition_is_kept_while_it_is_assigned(broker, open_fetcher):
    fetcher = open_fetcher(backoff_ms=0)
    fetcher.assign({SICK: 0, HEALTHY: 0})
    assert fetcher.high_watermark(SICK) is None
    delivered(fetcher, polls=3)
    assert (fetcher.high_watermark(SICK), fetcher.high_watermark(HEALTHY)) == (MESSAGES, MESSAGES)
    fetcher.assign({HEALTHY: MESSAGES})
    assert (fetcher.high_watermark(SICK), fetcher.high_watermark(HEALTHY)) == (None, MESSAGES)


def test_a_partition_that_got_data_is_asked_for_last_in_the_next_fetch(broker, open_fetcher):
    """From Fetch v3 a broker fills a response in the order asked, up to a limit: a partition
    that keeps getting data must not keep the ones after it waiting."""
    fetcher = open_fetcher(backoff_ms=0)
    fetcher.assign({HEALTHY: 0, SICK: MESSAGES})  # only HEALTHY has something to fetch
    delivered(fetcher, polls=2)
    assert broker.fetched_orders[:2] == [[HEALTHY, SICK], [SICK, HEALTHY]]


def test_a_fetch_asking_what_the_last_one_asked_is_not_built_again(broker, open_fetcher):
    """A member that keeps up asks the same offsets poll after poll: its request is built once.
    Any other offset, or order, is a new request."""
    fetcher = open_fetcher(backoff_ms=0)
    fetcher.assign({HEALTHY: MESSAGES, SICK: MESSAGES})  # nothing new to fetch
    delivered(fetcher, polls=3)
    idle = broker.fetch_bodies[:]
    assert len(idle) >= 3 and all(body is idle[0] for body in idle)
    fetcher.assign({HEALTHY: MESSAGES - 2, SICK: MESSAGES}, restart=[HEALTHY])
    assert delivered(fetcher, polls=2)[HEALTHY] == [MESSAGES - 2, MESSAGES - 1]
    assert broker.fetched_offsets[len(idle)] == {HEALTHY: MESSAGES - 2, SICK: MESSAGES}
    assert broker.fetched_offsets[-1] == {SICK: MESSAGES, HEALTHY: MESSAGES}
    assert broker.fetch_bodies[len(idle)] is not idle[0]


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

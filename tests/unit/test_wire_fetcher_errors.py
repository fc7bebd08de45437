"""The wire fetcher against a broker that answers with error codes: retriable ones set only
their partition aside until its leader is found again, at most every refresh.leader.backoff.ms,
and are warned about once; the others fail the member with one line naming partition, code and
name.

The broker is a stand-in for `BrokerChannel`: it answers Metadata, ListOffsets and Fetch at
once, with responses encoded by kafka-python, an independent encoder of the same layouts."""

from __future__ import annotations

import itertools
import socket
import struct
from collections import Counter, deque
from collections.abc import Iterator
from functools import partial

import pytest
import structlog.testing
from kafka.protocol.old.fetch import FetchRequest_v2, FetchResponse_v2
from kafka.protocol.old.list_offsets import ListOffsetsRequest_v0, ListOffsetsResponse_v0
from kafka.protocol.old.metadata import MetadataResponse_v0
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from zkconsumer.fetch import kafka_protocol as protocol
from zkconsumer.fetch import wire_fetcher
from zkconsumer.fetch.errors import FetchError
from zkconsumer.fetch.wire_fetcher import WireFetcher
from zkconsumer.model import TopicPartition

TOPIC = "t"
SICK, HEALTHY = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
MESSAGES = 3  # in each partition's log
NOT_LEADER, OFFSET_NOT_AVAILABLE, KAFKA_STORAGE_ERROR, UNKNOWN_SERVER_ERROR = 6, 78, 56, -1


class FakeBroker:
    """Node 0, leader of both partitions, each holding MESSAGES messages. `fetch_errors` and
    `offset_errors` give, per partition, the codes to answer its next requests with (one code
    used up per request; 0 or exhausted: answer normally)."""

    def __init__(self) -> None:
        self.fetch_errors: dict[TopicPartition, Iterator[int]] = {}
        self.offset_errors: dict[TopicPartition, Iterator[int]] = {}
        self.fetches: Counter[TopicPartition] = Counter()  # fetch requests naming each partition
        self.metadata_requests = 0

    def answer(self, api_key: int, body: bytes) -> bytes:
        if api_key == protocol.METADATA:
            self.metadata_requests += 1
            partitions = [(0, tp.partition, 0, [0], [0]) for tp in (SICK, HEALTHY)]
            response = MetadataResponse_v0([(0, "fake", 9092)], [(0, TOPIC, partitions)])
        elif api_key == protocol.LIST_OFFSETS:
            request = ListOffsetsRequest_v0.decode(body)
            response = ListOffsetsResponse_v0([
                (topic, [self._offsets(TopicPartition(topic, p)) for p, _, _ in partitions])
                for topic, partitions in request.topics])
        else:
            request = FetchRequest_v2.decode(body)
            response = FetchResponse_v2(0, [
                (topic, [self._fetch(TopicPartition(topic, p), offset) for p, offset, _ in parts])
                for topic, parts in request.topics])
        return struct.pack(">i", 0) + response.encode()  # correlation id first

    def _offsets(self, tp: TopicPartition) -> tuple:
        error = next(self.offset_errors.get(tp, iter(())), 0)
        return (tp.partition, error, [] if error else [0])

    def _fetch(self, tp: TopicPartition, offset: int) -> tuple:
        self.fetches[tp] += 1
        error = next(self.fetch_errors.get(tp, iter(())), 0)
        if error:
            return (tp.partition, error, -1, b"")
        builder = LegacyRecordBatchBuilder(1, 0, 1 << 20)
        for position in range(offset, MESSAGES):
            builder.append(position, 1_700_000_000_000, None, b"%s@%d" % (str(tp).encode(),
                                                                         position))
        return (tp.partition, 0, MESSAGES, bytes(builder.build()))


class FakeChannel:
    """What the fetcher needs of a `BrokerChannel`: answers queued as requests are sent, and a
    socket the fetcher's selector sees readable while an answer waits."""

    def __init__(self, broker: FakeBroker, host: str, port: int, **_options) -> None:
        self.address = f"{host}:{port}"
        self._broker = broker
        self._answers: deque[bytes] = deque()
        self._readable, self._signal = socket.socketpair()

    def fileno(self) -> int:
        return self._readable.fileno()

    def has_buffered_data(self) -> bool:
        return False

    def send(self, api_key: int, version: int, body: bytes) -> None:
        self._answers.append(self._broker.answer(api_key, body))
        self._signal.send(b"\0")

    def receive(self) -> bytes:
        self._readable.recv(1)
        return self._answers.popleft()

    def request(self, api_key: int, version: int, body: bytes) -> bytes:
        self.send(api_key, version, body)
        return self.receive()

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

    def open_with(backoff_ms: int) -> WireFetcher:
        fetcher = WireFetcher({
            "bootstrap_servers": "fake:9092", "api_version": (0, 10), "client_id": "test",
            "fetch_max_wait_ms": 100, "fetch_min_bytes": 1, "max_partition_fetch_bytes": 1 << 20,
            "request_timeout_ms": 30_000, "retry_backoff_ms": backoff_ms,
            "auto_offset_reset": "earliest"})
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
    with structlog.testing.capture_logs() as logs:
        assert delivered(fetcher, polls=len(errors) * 3) == EVERYTHING
    assert broker.fetches[SICK] > len(errors)  # every error was retried, then it fetched again
    retries = [e for e in logs if e["event"] == "partitions wait for their leader"]
    assert len(retries) == errors.count(NOT_LEADER) + errors.count(UNKNOWN_SERVER_ERROR)
    assert [(e["log_level"], e["event"]) for e in logs if e["log_level"] != "debug"] == [
        ("warning", "partitions wait for their leader"),
        ("info", "every partition fetches again")]


@pytest.mark.parametrize("code, line", [
    (29, "Kafka error 29 TOPIC_AUTHORIZATION_FAILED for t-0"),
    (35, "Kafka error 35 UNSUPPORTED_VERSION for t-0"),
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

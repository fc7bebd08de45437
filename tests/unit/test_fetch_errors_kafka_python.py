"""The kafka-python backend under the fetchers' error rule: kafka-python retries what Kafka calls
retriable by itself and raises the rest from `poll`; an unknown server error is backed off and
fetched again, anything else still fails the member."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from kafka.errors import TopicAuthorizationFailedError, UnknownError

from zkconsumer.fetch import kafka_python_fetcher
from zkconsumer.fetch.kafka_python_fetcher import KafkaPythonFetcher
from zkconsumer.model import Message, TopicPartition

TP = TopicPartition("t", 0)
BACKOFF_MS = 100


class ScriptedConsumer:
    """Stands in for kafka-python's consumer: each poll raises or returns the next outcome."""

    def __init__(self) -> None:
        self.outcomes: list = []
        self.polls = 0

    def assign(self, partitions) -> None:
        pass

    def seek(self, partition, offset) -> None:
        pass

    def poll(self, timeout_ms):
        self.polls += 1
        outcome = self.outcomes.pop(0) if self.outcomes else {}
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def close(self, autocommit) -> None:
        pass


@pytest.fixture
def consumer() -> ScriptedConsumer:
    return ScriptedConsumer()


@pytest.fixture
def fetcher(monkeypatch, consumer):
    monkeypatch.setattr(kafka_python_fetcher, "KafkaConsumer", lambda **settings: consumer)
    fetcher = KafkaPythonFetcher({"auto_offset_reset": "earliest",
                                  "retry_backoff_ms": BACKOFF_MS})
    fetcher.assign({TP: 0})
    yield fetcher
    fetcher.close()


def record(offset: int) -> SimpleNamespace:
    return SimpleNamespace(topic="t", partition=0, offset=offset, key=None, value=b"v",
                           timestamp=None, headers=[])


def test_an_unknown_server_error_is_backed_off_and_fetched_again(consumer, fetcher):
    consumer.outcomes = [UnknownError("Unexpected error while fetching data"), {TP: [record(0)]}]
    started = time.monotonic()
    assert fetcher.poll(timeout_ms=0) == {}
    assert time.monotonic() - started >= BACKOFF_MS / 2000  # waited out the backoff, no spin
    assert consumer.polls == 1
    assert fetcher.poll(timeout_ms=0) == {TP: [Message("t", 0, 0, None, b"v", None)]}


def test_an_error_no_retry_can_fix_still_fails(consumer, fetcher):
    consumer.outcomes = [TopicAuthorizationFailedError({"t"})]
    with pytest.raises(TopicAuthorizationFailedError):
        fetcher.poll(timeout_ms=0)

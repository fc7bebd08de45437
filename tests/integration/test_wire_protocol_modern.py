"""The wire fetcher on its own against a modern, ZooKeeper-less broker (Tansu 0.6): versions
negotiated with ApiVersions (Fetch v12 with record batches, ListOffsets v9, Metadata v12), reads
from the earliest and the latest offset, and one clear line instead of endless retries when it is
told to speak versions the broker does not.

Tansu's ListOffsets "latest" answer is the base offset of a partition's last record batch + 1,
not the log end (see support/tansu.py): the read from "latest" produces one record per batch
before the reset, so that answer is the log end and the fetcher is judged on its own behaviour.
"""

from __future__ import annotations

import time

import pytest
from support.log_capture import captured_logs
from support.tansu import create_topic, produce

from zkconsumer.config import ConsumerConfig
from zkconsumer.fetch.settings import kafka_consumer_settings
from zkconsumer.fetch.wire_fetcher import WireFetcher
from zkconsumer.kafka.errors import FetchError
from zkconsumer.model import TopicPartition

pytestmark = pytest.mark.integration

PARTITIONS = 2


def open_fetcher(bootstrap_servers: str, reset: str, **properties: str) -> WireFetcher:
    config = ConsumerConfig.from_mapping({
        "zookeeper.connect": "127.0.0.1:2181", "group.id": "wire-protocol",
        "auto.offset.reset": reset, "fetch.wait.max.ms": "100", **properties})
    api_version = config.kafka_api_version
    return WireFetcher(kafka_consumer_settings(config, bootstrap_servers, api_version))


def fetch(fetcher: WireFetcher, count: int, timeout: float = 30.0
          ) -> dict[tuple[int, int], bytes | None]:
    """(partition, offset) -> value of the first `count` messages, each exactly once."""
    got: dict[tuple[int, int], bytes | None] = {}
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        for messages in fetcher.poll(timeout_ms=200).values():
            for m in messages:
                assert (m.partition, m.offset) not in got, f"{m} delivered twice"
                got[(m.partition, m.offset)] = m.value
    return got


def wait_for_positions(fetcher: WireFetcher, partitions: list[TopicPartition]) -> None:
    """Poll until the reset by auto.offset.reset has placed every partition."""
    deadline = time.monotonic() + 30
    while any(fetcher.position(tp) is None for tp in partitions):
        assert time.monotonic() < deadline, "the positions were never reset"
        assert fetcher.poll(timeout_ms=100) == {}


@pytest.fixture
def topic(modern_broker, unique_name) -> str:
    name = unique_name("wire")
    create_topic(modern_broker.bootstrap_servers, name, PARTITIONS)
    return name


@pytest.mark.parametrize("isolation_level", ["read_uncommitted", "read_committed"])
def test_a_thousand_messages_from_the_earliest_offset_in_the_newest_versions(
        modern_broker, topic, isolation_level):
    placed = produce(modern_broker.bootstrap_servers, topic,
                     [b"value-%d" % i for i in range(1000)], PARTITIONS, compression="gzip")
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    fetcher = open_fetcher(modern_broker.bootstrap_servers, "smallest",
                           **{"isolation.level": isolation_level})
    try:
        fetcher.assign(dict.fromkeys(partitions))
        with captured_logs() as logs:
            assert fetch(fetcher, 1000) == placed
        assert [{k: e[k] for k in ("broker", "fetch", "list_offsets", "metadata", "source")}
                for e in logs if e["event"] == "broker versions negotiated"] == [
            {"broker": modern_broker.bootstrap_servers, "fetch": 12, "list_offsets": 9,
             "metadata": 12, "source": "ApiVersions"}]  # asked once, then remembered
        assert {tp.partition: fetcher.high_watermark(tp) for tp in partitions} == {
            p: 1 + max(o for q, o in placed if q == p) for p in range(PARTITIONS)}
    finally:
        fetcher.close()


def test_a_thousand_messages_produced_after_a_reset_to_the_latest_offset(modern_broker, topic):
    before = produce(modern_broker.bootstrap_servers, topic, [b"old-%d" % i for i in range(4)],
                     PARTITIONS, batch_each=True)
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    fetcher = open_fetcher(modern_broker.bootstrap_servers, "largest")
    try:
        fetcher.assign(dict.fromkeys(partitions))
        wait_for_positions(fetcher, partitions)
        assert {tp.partition: fetcher.position(tp) for tp in partitions} == {0: 2, 1: 2}
        placed = produce(modern_broker.bootstrap_servers, topic,
                         [b"new-%d" % i for i in range(1000)], PARTITIONS)
        assert fetch(fetcher, 1000) == placed
        assert not set(placed) & set(before)
        assert fetch(fetcher, 1, timeout=0.5) == {}  # nothing more: nothing old, nothing twice
    finally:
        fetcher.close()


def test_told_to_speak_pre_0_10_versions_it_fails_with_one_line_instead_of_retrying_for_ever(
        modern_broker, topic):
    """Tansu does not answer ListOffsets v0 in v0's layout: what spun for ever before."""
    produce(modern_broker.bootstrap_servers, topic, [b"x"], PARTITIONS)
    fetcher = open_fetcher(modern_broker.bootstrap_servers, "smallest",
                           **{"kafka.api.version": "0.9", "refresh.leader.backoff.ms": "100"})
    started = time.monotonic()
    try:
        fetcher.assign({TopicPartition(topic, 0): None})
        with pytest.raises(FetchError) as failure:
            fetch(fetcher, 1, timeout=30)
    finally:
        fetcher.close()
    assert time.monotonic() - started < 10
    assert str(failure.value).startswith(
        f"broker {modern_broker.bootstrap_servers} did not answer ListOffsets v0 in a form we can "
        "read (response ends early")
    assert str(failure.value).endswith(
        ") 3 times; kafka.api.version (or the broker registrations in ZooKeeper) says the "
        "brokers predate 0.10; if they are newer, set kafka.api.version to their version")

"""Topics from Kafka metadata: what counts as a change, how the refresher reports it, the last
known view standing in while Kafka cannot be asked, and the client shared with log offsets."""

from __future__ import annotations

import threading

import pytest
from support.waiting import wait_until

from zkconsumer.exporter.kafka_reads import ClusterReads
from zkconsumer.fetch import KafkaAccess
from zkconsumer.fetch.log_offsets import LazyLog, LogOffsets, LogOffsetsError
from zkconsumer.kafka.errors import KafkaConnectionError
from zkconsumer.model import TopicPartition
from zkconsumer.topology import (
    KafkaTopics,
    MetadataRefresher,
    TopicMetadataError,
    interest_fingerprint,
)
from zkconsumer.topology.sources import _MetadataView


def view(**partitions: int) -> _MetadataView:
    return _MetadataView({topic: list(range(count)) for topic, count in partitions.items()})


def test_a_named_subscription_ignores_other_topics_but_not_its_own_partitions():
    before = view(orders=2, audit=1)
    assert interest_fingerprint(view(orders=2, audit=3, new=1), False, {"orders"}) == \
        interest_fingerprint(before, False, {"orders"})
    assert interest_fingerprint(view(orders=3, audit=1), False, {"orders"}) != \
        interest_fingerprint(before, False, {"orders"})


def test_a_subscribed_topic_appearing_is_a_change():
    assert interest_fingerprint(view(orders=1), False, {"orders"}) != \
        interest_fingerprint(view(), False, {"orders"})


def test_a_filter_sees_every_new_topic():
    assert interest_fingerprint(view(orders=1, other=1), True, {"orders"}) != \
        interest_fingerprint(view(orders=1), True, {"orders"})


class FakeSource:
    watched_in_zookeeper = False

    def __init__(self, current) -> None:
        self.current = current

    def view(self):
        return self.current

    def close(self) -> None:
        return None


def refresher(source, baseline, changes, interest=(False, {"orders"})):
    return MetadataRefresher(source, 60.0, lambda: interest, lambda: baseline[0],
                             lambda: changes.append(1))


def test_the_refresher_compares_with_what_the_last_rebalance_used():
    source, baseline, changes = FakeSource(view(orders=2)), [None], []
    check = refresher(source, baseline, changes).check
    assert not check()  # before any rebalance there is nothing to compare with
    baseline[0] = view(orders=2)
    assert not check()
    source.current = view(orders=3)
    assert check() and check(), "reported again until a rebalance takes the change in"
    baseline[0] = source.current
    assert not check()
    assert len(changes) == 2


class FlakyConsumer:
    """The cluster client behind `LogOffsets`, answering metadata until told to fail. Like
    the real one, one Metadata request lists every topic, the internal ones included (the
    offsets topic, which `exclude.internal.topics` decides on); a topic still being created
    has no partitions yet."""

    INTERNAL = "__consumer_offsets"

    def __init__(self) -> None:
        self.topics_by_name = {"orders": {0, 1}, "creating": set(), self.INTERNAL: {0}}
        self.failing = False
        self.answering = threading.Event()  # cleared: a broker that takes requests, answers none
        self.answering.set()
        self.requests = 0

    def topic_partitions(self):
        self.requests += 1
        self.answering.wait()
        if self.failing:
            raise KafkaConnectionError("broker down")
        return {topic: sorted(numbers) for topic, numbers in self.topics_by_name.items()
                if numbers}

    def offsets(self, partitions, time_ms, by_time=False):
        self.answering.wait()
        return dict.fromkeys(partitions, 10)


class FakeClient:
    """`LazyLog`, handing out the fake cluster client."""

    def __init__(self, consumer) -> None:
        self.consumer = consumer
        self.closed = threading.Event()

    def get(self):
        return self.consumer

    def close(self) -> None:
        self.closed.set()


@pytest.fixture
def kafka_topics():
    client = LogOffsets("k:9092", None)
    consumer = FlakyConsumer()
    client._client = FakeClient(consumer)
    return KafkaTopics(client, stale_after_s=0.05), consumer


def test_a_topic_without_partitions_yet_does_not_exist(kafka_topics):
    topics, _ = kafka_topics
    seen = topics.view()
    assert seen.partitions("orders") == [0, 1]
    assert seen.partitions("creating") is None
    assert "creating" not in seen.all_topics


def test_internal_topics_are_listed_for_exclude_internal_topics_to_decide(kafka_topics):
    topics, _ = kafka_topics
    seen = topics.view()
    assert seen.all_topics == [FlakyConsumer.INTERNAL, "orders"]
    assert seen.partitions(FlakyConsumer.INTERNAL) == [0]


def test_one_metadata_request_lists_the_topics_with_or_without_consumer_offsets():
    client, consumer = LogOffsets("k:9092", None), FlakyConsumer()
    client._client = FakeClient(consumer)
    topics = KafkaTopics(client, stale_after_s=10)  # every view waits for its own read
    topics.view()
    assert consumer.requests == 1
    del consumer.topics_by_name[FlakyConsumer.INTERNAL]
    assert topics.view().all_topics == ["orders"]
    assert consumer.requests == 2


def test_unreachable_metadata_gives_the_last_view_once_one_was_read(kafka_topics):
    topics, consumer = kafka_topics
    first = topics.view()
    consumer.failing = True
    assert topics.view() is first


def test_a_broker_that_stops_answering_holds_no_caller_past_the_stale_bound(kafka_topics):
    topics, consumer = kafka_topics
    first = topics.view()
    consumer.answering.clear()
    consumer.topics_by_name["orders"] = {0, 1, 2}
    try:
        assert topics.view() is first, "the last view while the broker does not answer"
        assert topics.view() is first
        assert consumer.requests == 2, "callers share the read under way instead of piling up"
    finally:
        consumer.answering.set()
    wait_until(lambda: topics.view().partitions("orders") == [0, 1, 2], timeout=10,
               message="the late answer serving the next view")


def test_closing_never_waits_for_a_read_under_way_and_closes_the_client_when_it_ends(
        kafka_topics):
    topics, consumer = kafka_topics
    topics.view()
    consumer.answering.clear()
    topics.view()
    topics.close()
    assert not topics.client._client.closed.is_set(), "the reading thread still uses the client"
    consumer.answering.set()
    assert topics.client._client.closed.wait(10)
    with pytest.raises(TopicMetadataError, match="closed"):
        topics.view()


def test_metadata_never_read_fails_with_the_brokers_named(kafka_topics):
    topics, consumer = kafka_topics
    consumer.failing = True
    with pytest.raises(TopicMetadataError, match="Kafka at k:9092: .*broker down"):
        topics.view()


def test_a_client_shared_with_log_offsets_on_a_silent_broker_holds_no_view_past_the_bound(
        kafka_topics):
    topics, consumer = kafka_topics
    first = topics.view()
    consumer.answering.clear()
    asking = threading.Thread(target=topics.client.latest, args=([TopicPartition("orders", 0)],))
    asking.start()
    wait_until(lambda: topics.client._turn.locked(), timeout=10, message="log offsets asked")
    try:
        assert topics.view() is first, "the last view while log offsets hold the client"
    finally:
        consumer.answering.set()
        asking.join(10)
    wait_until(lambda: consumer.requests == 2, timeout=10,
               message="the metadata read taking its turn after the log offsets")


def test_a_shared_client_is_closed_by_its_owner_not_by_the_topic_source():
    client = LogOffsets("k:9092", None)
    client._client = FakeClient(FlakyConsumer())
    topics = KafkaTopics(client, stale_after_s=0.05, owns_client=False)
    topics.view()
    topics.close()
    assert client.latest([TopicPartition("orders", 0)]) == {TopicPartition("orders", 0): 10}
    client.close()
    assert client._client.closed.is_set()
    with pytest.raises(LogOffsetsError, match="closed"):
        client.latest([TopicPartition("orders", 0)])


def test_the_exporter_reads_log_ends_through_the_client_its_topics_come_from(kafka_topics):
    topics, _ = kafka_topics
    reads = ClusterReads(KafkaAccess("k:9092", None), topics, {})
    assert reads.log_ends([TopicPartition("orders", 0)]) == {TopicPartition("orders", 0): 10}
    reads.close()
    assert not topics.client._client.closed.is_set(), "the topic source's own, to close"
    topics.close()
    assert topics.client._client.closed.is_set()


class RaisingOnce(FakeSource):
    """A source whose first view fails with an error no one planned for."""

    def __init__(self, current) -> None:
        super().__init__(current)
        self.calls = 0

    def view(self):
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("unexpected")
        return self.current


def test_an_unexpected_error_does_not_end_the_checks():
    source = RaisingOnce(view(orders=3))
    changes: list[int] = []
    checks = MetadataRefresher(source, 0.01, lambda: (False, {"orders"}),
                               lambda: view(orders=2), lambda: changes.append(1))
    checks.start()
    try:
        wait_until(lambda: changes, timeout=10, message="a change found after the error")
    finally:
        checks.stop()
    assert source.calls >= 2


def test_a_closed_client_is_not_opened_again():
    client = LazyLog({"bootstrap_servers": "k:9092"}, None)
    client.close()
    with pytest.raises(LogOffsetsError, match="is closed"):
        client.get()


def test_a_question_waits_for_its_turn_no_longer_than_for_an_answer():
    """A silent broker holding one question makes the next fail after one request timeout,
    instead of queueing it behind an answer that may never come."""
    client = LogOffsets("k:9092", None, request_timeout_ms=100)
    consumer = FlakyConsumer()
    client._client = FakeClient(consumer)
    consumer.answering.clear()
    held = threading.Thread(target=client.latest, args=([TopicPartition("orders", 0)],))
    held.start()
    wait_until(lambda: client._turn.locked(), timeout=10, message="the first question asked")
    try:
        with pytest.raises(LogOffsetsError, match="still waiting for an earlier answer"):
            client.earliest([TopicPartition("orders", 1)])
    finally:
        consumer.answering.set()
        held.join(10)
    assert client.latest([TopicPartition("orders", 0)]) == {TopicPartition("orders", 0): 10}


def test_a_registry_view_reads_a_topic_once_however_often_asked(monkeypatch):
    from zkconsumer.topology import sources
    from zkconsumer.znodes.topics import TopicPartitions

    asked: list[list[str]] = []

    def read_topics(_zk, topics):
        asked.append(list(topics))
        return {topic: TopicPartitions.decode(f"/brokers/topics/{topic}",
                                              b'{"version":1,"partitions":{"0":[0],"1":[0]}}')
                if topic == "orders" else None for topic in topics}

    monkeypatch.setattr(sources, "list_topics", lambda _zk: ["orders"])
    monkeypatch.setattr(sources, "read_topics", read_topics)
    registry = sources.ZookeeperTopics(zk=None).view()
    assert registry.partitions("orders") == [0, 1]
    assert registry.partitions_of(["orders", "gone"]) == {"orders": [0, 1], "gone": None}
    assert registry.partitions("gone") is None and registry.partitions("orders") == [0, 1]
    assert asked == [["orders"], ["gone"]]
    sources.ZookeeperTopics(zk=None).view().partitions("orders")  # a new view reads again
    assert asked[-1] == ["orders"]


def test_a_registry_view_takes_what_a_watch_read_and_lists_topics_only_when_asked(monkeypatch):
    from zkconsumer.topology import sources

    asked: list[object] = []
    monkeypatch.setattr(sources, "list_topics", lambda _zk: asked.append("list") or ["orders"])
    monkeypatch.setattr(sources, "read_topics",
                        lambda _zk, topics: asked.append(list(topics)) or dict.fromkeys(topics))
    registry = sources.ZookeeperTopics(zk=None).view(
        {"orders": b'{"version":1,"partitions":{"0":[0],"1":[0]}}', "deleted": None})
    assert registry.partitions_of(["orders", "deleted", "other"]) == {
        "orders": [0, 1], "deleted": None, "other": None}
    assert asked == [["other"]]  # the watched ones were not read again, nothing was listed
    assert registry.all_topics == ["orders"] and registry.all_topics == ["orders"]
    assert asked == [["other"], "list"]  # listed once, when first asked
    watched = sources.ZookeeperTopics(zk=None).view({"deleted": None})
    assert watched.partitions("deleted") is None and asked == [["other"], "list"]  # no request

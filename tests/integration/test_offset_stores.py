"""The offset stores against a real ZooKeeper and broker, checked by independent readers:
raw znodes, a plain kafka-python consumer and the reference ConsumerOffsetChecker."""

from __future__ import annotations

import threading

import pytest
from kafka import KafkaConsumer, OffsetAndMetadata
from kafka import TopicPartition as KafkaTopicPartition
from support.java import require_java
from support.kafka import produce
from support.offset_checker import offset_checker_rows

from zkconsumer.config import ConsumerConfig
from zkconsumer.errors import ZnodeDataError
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import (
    DualOffsetStore,
    KafkaOffsetStore,
    OffsetStoreError,
    ZookeeperOffsetStore,
    open_offset_store,
)
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration


def _version(cluster) -> dict:
    return {"api_version": cluster.kafka_api_version} if cluster.kafka_api_version else {}


def _raw_offset(zk, group: str, tp: TopicPartition) -> bytes | None:
    path = GroupPaths(group).offset(tp.topic, tp.partition)
    return zk.get(path)[0] if zk.exists(path) else None


def _write_znode(zk, group: str, tp: TopicPartition, data: bytes) -> str:
    path = GroupPaths(group).offset(tp.topic, tp.partition)
    zk.create(path, data, makepath=True)
    return path


def _kafka_store(cluster, group: str, **options) -> KafkaOffsetStore:
    return KafkaOffsetStore(group, cluster.bootstrap_servers,
                            api_version=cluster.kafka_api_version, **options)


def _committed_by_kafka_python(cluster, group: str, tps) -> dict[TopicPartition, int | None]:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                             enable_auto_commit=False, **_version(cluster))
    try:
        return {tp: consumer.committed(KafkaTopicPartition(*tp), timeout_ms=10000) for tp in tps}
    finally:
        consumer.close(autocommit=False)


class CallCounter:
    """Counts calls of some kazoo client methods while passing them through."""

    def __init__(self, monkeypatch, zk, *names: str) -> None:
        self.calls = dict.fromkeys(names, 0)
        for name in names:
            monkeypatch.setattr(zk, name, self._counting(name, getattr(zk, name)))

    def _counting(self, name, method):
        def call(*args, **kwargs):
            self.calls[name] += 1
            return method(*args, **kwargs)
        return call


# -- ZooKeeper ------------------------------------------------------------------------------

def test_zookeeper_round_trip_over_three_topics(zk, topic_factory, unique_name):
    topics = [topic_factory(partitions=4) for _ in range(3)]
    group = unique_name("g")
    offsets = {TopicPartition(topic, p): 1000 * t + p * 7
               for t, topic in enumerate(topics) for p in range(4)}
    ZookeeperOffsetStore(zk, group).commit(offsets)

    fresh = ZookeeperOffsetStore(zk, group)
    assert fresh.fetch(offsets) == offsets
    for tp, offset in offsets.items():
        assert _raw_offset(zk, group, tp) == str(offset).encode()  # decimal text, as reference
    assert fresh.name == "zookeeper"


def test_missing_znodes_and_stored_minus_one_mean_no_offset(zk, unique_name):
    group = unique_name("g")
    with_offset, invalid, missing = (TopicPartition("t", p) for p in range(3))
    _write_znode(zk, group, with_offset, b"12")
    _write_znode(zk, group, invalid, b"-1")
    assert ZookeeperOffsetStore(zk, group).fetch([with_offset, invalid, missing]) == {
        with_offset: 12}


def test_a_thousand_partitions_commit_in_a_few_transactions(zk, unique_name, monkeypatch):
    group = unique_name("g")
    topic = unique_name("t")
    tps = [TopicPartition(topic, p) for p in range(1000)]
    store = ZookeeperOffsetStore(zk, group)
    counter = CallCounter(monkeypatch, zk, "transaction", "set", "create", "get_children_async")

    store.commit({tp: tp.partition for tp in tps})  # all znodes are new: creates
    assert counter.calls == {"transaction": 5, "set": 0, "create": 0, "get_children_async": 1}
    store.commit({tp: tp.partition + 5000 for tp in tps})  # all exist now: set_data only
    assert counter.calls == {"transaction": 10, "set": 0, "create": 0, "get_children_async": 1}

    monkeypatch.undo()
    assert ZookeeperOffsetStore(zk, group).fetch(tps) == {tp: tp.partition + 5000 for tp in tps}
    assert len(zk.get_children(GroupPaths(group).offsets_topic(topic))) == 1000


def test_committing_some_partitions_leaves_the_others_untouched(zk, unique_name):
    group = unique_name("g")
    tps = [TopicPartition("t", p) for p in range(4)]
    store = ZookeeperOffsetStore(zk, group)
    store.commit({tp: 10 for tp in tps})
    paths = GroupPaths(group)
    versions = {tp: zk.get(paths.offset(tp.topic, tp.partition))[1].version for tp in tps}

    store.commit({tps[1]: 25})

    assert store.fetch(tps) == {tps[0]: 10, tps[1]: 25, tps[2]: 10, tps[3]: 10}
    after = {tp: zk.get(paths.offset(tp.topic, tp.partition))[1].version for tp in tps}
    assert after == {**versions, tps[1]: versions[tps[1]] + 1}


def test_a_malformed_offset_znode_is_reported_and_left_alone(zk, unique_name):
    group = unique_name("g")
    bad, good = TopicPartition("t", 0), TopicPartition("t", 1)
    path = _write_znode(zk, group, bad, b"abc")
    store = ZookeeperOffsetStore(zk, group)
    store.commit({good: 3})

    with pytest.raises(ZnodeDataError) as caught:
        store.fetch([bad, good])
    assert caught.value.path == path
    assert path in str(caught.value)
    assert zk.get(path)[0] == b"abc"


def test_znodes_deleted_or_created_behind_our_back_are_still_written(zk, unique_name):
    group = unique_name("g")
    deleted, created = TopicPartition("t", 0), TopicPartition("t", 1)
    store = ZookeeperOffsetStore(zk, group)
    store.commit({deleted: 1})
    assert store.fetch([deleted, created]) == {deleted: 1}  # both now believed known
    paths = GroupPaths(group)
    zk.delete(paths.offset(deleted.topic, deleted.partition))  # e.g. an admin reset
    zk.create(paths.offset(created.topic, created.partition), b"7")  # e.g. ImportZkOffsets

    store.commit({deleted: 2, created: 8})  # the transaction fails; writes one by one

    assert ZookeeperOffsetStore(zk, group).fetch([deleted, created]) == {deleted: 2, created: 8}


@pytest.mark.reference
def test_reference_offset_checker_reads_our_zookeeper_offsets(cluster, zk, topic_factory,
                                                               unique_name, work_root):
    require_java()
    topic = topic_factory(partitions=3)
    produce(cluster, topic, [f"m{i}".encode() for i in range(30)], partitions=3)
    group = unique_name("g")
    ZookeeperOffsetStore(zk, group).commit(
        {TopicPartition(topic, 0): 4, TopicPartition(topic, 1): 7, TopicPartition(topic, 2): 10})

    rows = offset_checker_rows(cluster, group, topic, work_root / "tools")
    assert rows == {0: (4, 10, 6), 1: (7, 10, 3), 2: (10, 10, 0)}


# -- Kafka ----------------------------------------------------------------------------------

def test_kafka_round_trip_is_seen_by_plain_kafka_python(cluster, zk, topic_factory,
                                                        unique_name):
    topic = topic_factory(partitions=3)
    group = unique_name("g")
    tps = [TopicPartition(topic, p) for p in range(3)]
    store = _kafka_store(cluster, group)
    try:
        assert store.fetch(tps) == {}
        store.commit({tps[0]: 5, tps[1]: 9})
        assert store.fetch(tps) == {tps[0]: 5, tps[1]: 9}
        store.commit({tps[1]: 12})
        assert store.fetch(tps) == {tps[0]: 5, tps[1]: 12}
    finally:
        store.close()

    assert _committed_by_kafka_python(cluster, group, tps) == {tps[0]: 5, tps[1]: 12,
                                                               tps[2]: None}
    # Kafka storage (OffsetFetch v1+), not the broker reading ZooKeeper for us (v0).
    assert all(_raw_offset(zk, group, tp) is None for tp in tps)
    fresh = _kafka_store(cluster, group)
    try:
        assert fresh.fetch(tps) == {tps[0]: 5, tps[1]: 12}
    finally:
        fresh.close()


def test_kafka_store_gives_up_with_one_clear_line_when_no_broker_answers(unique_name):
    group = unique_name("g")
    store = KafkaOffsetStore(group, "127.0.0.1:1", api_version=(0, 9), retries=1,
                             backoff_ms=10, request_timeout_ms=1000)
    try:
        with pytest.raises(OffsetStoreError) as caught:
            store.commit({TopicPartition("t", 0): 1})
    finally:
        store.close()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"committing offsets of group {group} to Kafka at 127.0.0.1:1 "
                              "failed after 2 attempts: ")



def test_kafka_store_fetch_gives_up_with_one_clear_line_and_leaves_no_client_behind(
        unique_name):
    """Each attempt finds Kafka out of reach before opening a kafka-python admin client, whose
    I/O thread would outlive a failed bootstrap."""
    group = unique_name("g")
    clients_before = _kafka_python_threads()
    store = KafkaOffsetStore(group, "127.0.0.1:1", api_version=(0, 9), retries=2,
                             backoff_ms=10, request_timeout_ms=1000)
    try:
        with pytest.raises(OffsetStoreError) as caught:
            store.fetch([TopicPartition("t", 0)])
    finally:
        store.close()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"fetching offsets of group {group} from Kafka at 127.0.0.1:1 "
                              "failed after 3 attempts: KafkaConnectionError: no bootstrap "
                              "broker accepts connections (127.0.0.1:1: ")
    assert _kafka_python_threads() <= clients_before


def _kafka_python_threads() -> int:
    return sum(thread.name.startswith("kafka-io") for thread in threading.enumerate())


# -- dual -----------------------------------------------------------------------------------

def test_dual_store_fetches_the_larger_offset_and_commits_to_both(cluster, zk, topic_factory,
                                                                  unique_name):
    topic = topic_factory(partitions=5)
    group = unique_name("g")
    tps = [TopicPartition(topic, p) for p in range(5)]
    zk_higher, kafka_higher, kafka_only, zk_only, neither = tps
    for tp, offset in ((zk_higher, 8), (kafka_higher, 2), (zk_only, 5)):
        _write_znode(zk, group, tp, str(offset).encode())
    committer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                              enable_auto_commit=False, **_version(cluster))
    try:
        committer.commit({KafkaTopicPartition(*tp): OffsetAndMetadata(offset, "", -1)
                          for tp, offset in ((zk_higher, 3), (kafka_higher, 6), (kafka_only, 4))})
    finally:
        committer.close(autocommit=False)

    settings = {"group.id": group, "zookeeper.connect": cluster.zookeeper_connect,
                "offsets.storage": "kafka"}
    if cluster.kafka_api_version:
        settings["kafka.api.version"] = ".".join(map(str, cluster.kafka_api_version))
    store = open_offset_store(ConsumerConfig.from_mapping(settings), zk,
                              cluster.bootstrap_servers)
    try:
        assert isinstance(store, DualOffsetStore)
        assert store.fetch(tps) == {zk_higher: 8, kafka_higher: 6, kafka_only: 4, zk_only: 5}
        store.commit({neither: 1, kafka_only: 9})
    finally:
        store.close()

    assert _raw_offset(zk, group, neither) == b"1"
    assert _raw_offset(zk, group, kafka_only) == b"9"
    in_kafka = _committed_by_kafka_python(cluster, group, [neither, kafka_only, zk_only])
    assert in_kafka == {neither: 1, kafka_only: 9, zk_only: None}

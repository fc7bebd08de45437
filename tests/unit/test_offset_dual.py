"""DualOffsetStore: max of both stores on fetch, Kafka first on commit."""

from __future__ import annotations

import pytest
from support.memory_store import MemoryStore

from zkconsumer.model import TopicPartition
from zkconsumer.offsets import DualOffsetStore, OffsetStoreError

A = TopicPartition("t", 0)
B = TopicPartition("t", 1)
C = TopicPartition("t", 2)
D = TopicPartition("t", 3)


def stores(zk_offsets=None, kafka_offsets=None, **failures):
    journal: list[str] = []
    zookeeper = MemoryStore("zookeeper", journal, zk_offsets,
                            failures.get("zookeeper_fails", False))
    kafka = MemoryStore("kafka", journal, kafka_offsets, failures.get("kafka_fails", False))
    return DualOffsetStore(zookeeper, kafka), zookeeper, kafka, journal


def test_fetch_takes_the_maximum_of_both_per_partition():
    dual, *_ = stores(zk_offsets={A: 10, B: 5, C: 7}, kafka_offsets={A: 4, B: 9, D: 3})
    assert dual.fetch([A, B, C, D]) == {A: 10, B: 9, C: 7, D: 3}
    assert dual.name == "dual"


def test_fetch_omits_partitions_neither_store_has():
    dual, *_ = stores(zk_offsets={A: 1})
    assert dual.fetch([A, B]) == {A: 1}


def test_fetch_accepts_a_one_shot_iterable():
    dual, *_ = stores(zk_offsets={A: 1}, kafka_offsets={B: 2})
    assert dual.fetch(iter([A, B])) == {A: 1, B: 2}


def test_commit_writes_kafka_then_zookeeper():
    dual, zookeeper, kafka, journal = stores()
    dual.commit({A: 11})
    assert journal == ["kafka", "zookeeper"]
    assert zookeeper.offsets == kafka.offsets == {A: 11}


def test_a_failed_kafka_commit_leaves_zookeeper_untouched():
    dual, zookeeper, _kafka, journal = stores(zk_offsets={A: 3}, kafka_fails=True)
    with pytest.raises(OffsetStoreError, match="kafka is down"):
        dual.commit({A: 11})
    assert journal == ["kafka"]
    assert zookeeper.offsets == {A: 3}


def test_close_closes_both_even_if_kafka_fails_to():
    dual, zookeeper, kafka, journal = stores()

    def broken_close():
        raise OffsetStoreError("kafka close failed")

    kafka.close = broken_close
    with pytest.raises(OffsetStoreError):
        dual.close()
    assert zookeeper.closed

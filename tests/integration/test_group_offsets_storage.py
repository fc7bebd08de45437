"""offsets.storage=kafka, dual commit, and the documented rolling migration between them."""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer, OffsetAndMetadata
from kafka import TopicPartition as KTP
from support.kafka import committed_in_kafka, end_offsets, produce
from support.waiting import wait_until

from zkconsumer.znodes.consumers import decode_offset, encode_offset
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration


def _values(n: int, prefix: str) -> list[bytes]:
    return [f"{prefix}-{i:06d}".encode() for i in range(n)]


def _zk_offset(zk, group, topic, partition):
    path = GroupPaths(group).offset(topic, partition)
    return decode_offset(path, zk.get(path)[0]) if zk.exists(path) else None


def test_kafka_stored_offsets_are_read_back_by_kafka_python(cluster, zk, topic_factory,
                                                            unique_name, members):
    topic = topic_factory(partitions=2)
    produce(cluster, topic, _values(40, "k"), partitions=2)
    group = unique_name("kafka")
    member = members(group, topics={topic: 1}, **{"offsets.storage": "kafka",
                                                  "dual.commit.enabled": "false"})
    wait_until(lambda: len(member.values()) >= 40, timeout=60, message="40 messages")
    member.stop()

    assert committed_in_kafka(cluster, group, topic, 2) == end_offsets(cluster, topic, 2)
    assert _zk_offset(zk, group, topic, 0) is None


def test_dual_commit_starts_from_the_larger_of_both_offsets(cluster, zk, topic_factory,
                                                            unique_name, members):
    topic = topic_factory(partitions=2)
    produce(cluster, topic, _values(20, "d"), partitions=2)  # 10 per partition
    group = unique_name("dual")
    # Kafka says partition 0 is at 7 (and 1 at 1), ZooKeeper says partition 1 is at 4 (0 at 2).
    version = {"api_version": cluster.kafka_api_version} if cluster.kafka_api_version else {}
    committer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                              enable_auto_commit=False, **version)
    try:
        committer.commit({KTP(topic, 0): OffsetAndMetadata(7, "", -1),
                          KTP(topic, 1): OffsetAndMetadata(1, "", -1)})
    finally:
        committer.close()
    paths = GroupPaths(group)
    zk.ensure_path(paths.offsets_topic(topic))
    for partition, offset in ((0, 2), (1, 4)):
        path = paths.offset(topic, partition)
        if zk.exists(path):
            zk.set(path, encode_offset(offset))
        else:
            zk.create(path, encode_offset(offset))

    member = members(group, topics={topic: 1}, **{"offsets.storage": "kafka",
                                                  "dual.commit.enabled": "true"})
    wait_until(lambda: len(member.values()) >= 3 + 6, timeout=60, message="9 messages")
    firsts = {}
    for message in member.messages:
        firsts.setdefault(message.partition, message.offset)
    assert firsts == {0: 7, 1: 4}
    member.stop()
    assert _zk_offset(zk, group, topic, 0) == 10
    assert committed_in_kafka(cluster, group, topic, 2) == {0: 10, 1: 10}


def test_rolling_migration_to_kafka_and_back_skips_and_repeats_nothing(cluster, zk, topic_factory,
                                                                      unique_name, members):
    topic = topic_factory(partitions=3)
    group = unique_name("migrate")
    stages = [
        {"offsets.storage": "zookeeper"},
        {"offsets.storage": "kafka", "dual.commit.enabled": "true"},
        {"offsets.storage": "kafka", "dual.commit.enabled": "false"},
        {"offsets.storage": "kafka", "dual.commit.enabled": "true"},
        {"offsets.storage": "zookeeper"},
    ]
    consumed: list[bytes] = []
    sent: list[bytes] = []
    for number, settings in enumerate(stages):
        batch = _values(30, f"s{number}")
        sent += batch
        member = members(group, topics={topic: 1}, **settings)
        produce(cluster, topic, batch, partitions=3)
        wait_until(lambda m=member: len(m.values()) >= 30, timeout=60,
                   message=f"stage {number} messages")
        member.stop()
        consumed += member.values()
    assert sorted(consumed) == sorted(sent), "a stage skipped or re-read messages"

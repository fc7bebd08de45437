"""A group's committed offsets in tests: all of them read from ZooKeeper, some written to Kafka."""

from __future__ import annotations

from zkconsumer.model import TopicPartition
from zkconsumer.offsets import KafkaOffsetStore, ZookeeperOffsetStore
from zkconsumer.zk.group_state import committed_partitions


def zookeeper_offsets(zk, group: str) -> dict[TopicPartition, int]:
    return ZookeeperOffsetStore(zk, group).fetch(committed_partitions(zk, group))


def commit_in_kafka(bootstrap_servers: str, group: str, offsets: dict[TopicPartition, int],
                    api_version: tuple[int, ...] | None = None) -> None:
    """As a member with offsets.storage=kafka commits them, through a store opened for it."""
    store = KafkaOffsetStore(group, bootstrap_servers, api_version=api_version)
    try:
        store.commit(offsets)
    finally:
        store.close()

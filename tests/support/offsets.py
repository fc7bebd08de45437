"""Reading a whole group's committed ZooKeeper offsets in tests."""

from __future__ import annotations

from zkconsumer.model import TopicPartition
from zkconsumer.offsets import ZookeeperOffsetStore
from zkconsumer.zk.group_state import committed_partitions


def zookeeper_offsets(zk, group: str) -> dict[TopicPartition, int]:
    return ZookeeperOffsetStore(zk, group).fetch(committed_partitions(zk, group))

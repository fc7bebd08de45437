"""Committed offsets of a ZooKeeper-coordinated group: in ZooKeeper, in Kafka, or in both; and
those of a group on Kafka's group coordinator, for readers and writers outside it.

Shared by the group consumer, the admin CLI and the Spark source: `open_offset_store` picks
the store from the config. What is worth committing is the member's to decide (its record of
each partition, `zkconsumer.member.state`).
"""

from zkconsumer.offsets.dual_store import DualOffsetStore
from zkconsumer.offsets.factory import open_offset_store
from zkconsumer.offsets.kafka_reader import (
    KAFKA_ERRORS,
    GroupOffsets,
    GroupOffsetsReader,
    KafkaReadError,
    is_transient_kafka_error,
    read_committed,
)
from zkconsumer.offsets.kafka_store import KafkaOffsetStore
from zkconsumer.offsets.retry import RetryPolicy, call_with_retries
from zkconsumer.offsets.store import OffsetStore, OffsetStoreError
from zkconsumer.offsets.zookeeper_store import ZookeeperOffsetStore

__all__ = [
    "KAFKA_ERRORS",
    "DualOffsetStore",
    "GroupOffsets",
    "GroupOffsetsReader",
    "KafkaOffsetStore",
    "KafkaReadError",
    "OffsetStore",
    "OffsetStoreError",
    "RetryPolicy",
    "ZookeeperOffsetStore",
    "call_with_retries",
    "is_transient_kafka_error",
    "open_offset_store",
    "read_committed",
]

"""What the exporter asks the brokers at each scan: the topics' partitions, the log ends, the
offsets groups keep in Kafka, and the groups Kafka's group coordinator knows.

One cluster client serves every group, over one connection per broker: the log-offsets
client (`LogOffsets`, the topic source's when it reads Kafka metadata) answers metadata and log
ends, and the `GroupOffsetsReader` asks for any number of groups' offsets, and lists and
describes the coordinator's groups, over its connections (`SharedWire`). A client per group
would mean hundreds of connections for a cluster's worth of groups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from zkconsumer.fetch import KafkaAccess, LogOffsets
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.coordinator_groups import (
    CoordinatorGroup,
    read_coordinator_groups,
)
from zkconsumer.offsets.kafka_reader import (
    GroupOffsets,
    GroupOffsetsReader,
    GroupPartitions,
    SharedWire,
)
from zkconsumer.topology import KafkaTopics, TopicSource, TopicView


class ClusterReads:
    """Log ends come through the topic source's client when it reads Kafka metadata: with
    `--bootstrap-server` both questions go to the same brokers, and one client answers both."""

    def __init__(self, access: KafkaAccess, topic_source: TopicSource,
                 client_options: Mapping[str, Any], request_timeout_ms: int = 30000) -> None:
        self._topics = topic_source
        shared = topic_source.client if isinstance(topic_source, KafkaTopics) else None
        self._own_log_offsets = shared is None
        self._log_offsets = shared or LogOffsets(access.bootstrap_servers, access.api_version,
                                                 client_options, request_timeout_ms)
        log_offsets = self._log_offsets
        self._group_offsets = GroupOffsetsReader(access, client_options, request_timeout_ms,
                                                 wire=lambda: SharedWire(log_offsets))

    def topics(self) -> TopicView:
        return self._topics.view()

    def log_ends(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._log_offsets.latest(partitions)

    def kafka_offsets(self, wanted: GroupPartitions) -> GroupOffsets:
        return self._group_offsets.read(wanted)

    def every_kafka_offset(self, groups: Iterable[str],
                           every_partition: Iterable[TopicPartition]) -> GroupOffsets:
        return self._group_offsets.read_every(groups, every_partition)

    def coordinator_groups(self, wanted: Callable[[str], bool]) -> dict[str, CoordinatorGroup]:
        return read_coordinator_groups(self._group_offsets, wanted)

    def close(self) -> None:
        if self._own_log_offsets:
            self._log_offsets.close()
        self._group_offsets.close()


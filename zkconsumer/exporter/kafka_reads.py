"""What the exporter asks the brokers at each scan: the topics' partitions, the log ends, and
the offsets groups keep in Kafka (`group list` asks the last too).

Two kafka-python clients serve every group: one for metadata and log ends (`LogOffsets`, the
topic source), one admin client for the groups' offsets, which asks each group's coordinator
for any number of groups in as few OffsetFetch requests as the brokers allow (one per group
before Kafka 2.4's batched version). One client per group, as the offset store opens for a
member, would mean hundreds of connections for a cluster's worth of groups.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from zkconsumer.errors import ZkConsumerError
from zkconsumer.fetch import FetchError, KafkaAccess, LogOffsets
from zkconsumer.fetch.first_contact import checked_options
from zkconsumer.fetch.kafka_client import client_settings
from zkconsumer.model import TopicPartition
from zkconsumer.topology import TopicSource, TopicView

GroupPartitions = Mapping[str, Iterable[TopicPartition]]


class KafkaReadError(ZkConsumerError):
    """The brokers did not answer a scan's question."""


@dataclass(frozen=True)
class GroupOffsets:
    found: dict[str, dict[TopicPartition, int]]
    failed: dict[str, str]  # group -> why Kafka could not give its offsets


class GroupOffsetsReader:
    """The offsets any number of groups keep in Kafka, through one admin client."""

    def __init__(self, access: KafkaAccess, client_options: Mapping[str, Any],
                 request_timeout_ms: int = 30000) -> None:
        self._where = access.bootstrap_servers
        settings = client_settings(client_options, access.bootstrap_servers, access.api_version,
                                   request_timeout_ms=request_timeout_ms)
        self._settings = {key: value for key, value in settings.items()
                          if key in KafkaAdminClient.DEFAULT_CONFIG}
        self._admin: KafkaAdminClient | None = None

    def read(self, wanted: GroupPartitions) -> GroupOffsets:
        """Each group's committed offsets in Kafka, for the partitions named (brokers before
        0.10.2 can only be asked about named partitions); partitions with none are left out.
        kafka-python gives up on all groups at the first one that fails (a coordinator still
        loading, a group the credentials may not read), so after such a failure each group is
        asked alone and only the failing ones are left out, named in `failed`."""
        specs = {group: [(tp.topic, tp.partition) for tp in partitions]
                 for group, partitions in wanted.items()}
        specs = {group: partitions for group, partitions in specs.items() if partitions}
        if not specs:
            return GroupOffsets({}, {})
        admin = self._client()
        try:
            return GroupOffsets(_offsets(admin.list_group_offsets(specs)), {})
        except KafkaError:
            pass
        found: dict[str, dict[TopicPartition, int]] = {}
        failed: dict[str, str] = {}
        for group, partitions in specs.items():
            try:
                found.update(_offsets(admin.list_group_offsets({group: partitions})))
            except KafkaError as exc:
                failed[group] = str(exc) or type(exc).__name__
        return GroupOffsets(found, failed)

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def _client(self) -> KafkaAdminClient:
        if self._admin is None:
            try:
                self._admin = KafkaAdminClient(**checked_options(self._settings))
            except FetchError as exc:  # a refused login, no broker reachable: named at once
                raise KafkaReadError(str(exc)) from None
            except KafkaError as exc:
                raise KafkaReadError(f"cannot reach Kafka at {self._where}: {exc}") from exc
        return self._admin


class ClusterReads:
    def __init__(self, access: KafkaAccess, topic_source: TopicSource,
                 client_options: Mapping[str, Any], request_timeout_ms: int = 30000) -> None:
        self._topics = topic_source
        self._log_offsets = LogOffsets(access.bootstrap_servers, access.api_version,
                                       client_options, request_timeout_ms)
        self._group_offsets = GroupOffsetsReader(access, client_options, request_timeout_ms)

    def topics(self) -> TopicView:
        return self._topics.view()

    def log_ends(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._log_offsets.latest(partitions)

    def kafka_offsets(self, wanted: GroupPartitions) -> GroupOffsets:
        return self._group_offsets.read(wanted)

    def close(self) -> None:
        self._log_offsets.close()
        self._group_offsets.close()


def _offsets(answer) -> dict[str, dict[TopicPartition, int]]:
    return {group: {TopicPartition(tp.topic, tp.partition): committed.offset
                    for tp, committed in offsets.items()
                    if committed is not None and committed.offset >= 0}
            for group, offsets in answer.items()}

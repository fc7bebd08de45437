"""Where a group lives, and what the driver asks of it there: which brokers to read, which
topics exist, the group's offset store, and who is consuming the group now.

A ZooKeeper-coordinated group (`group.coordination=zookeeper`, the default) has its broker and
topic registry, its owner znodes and (per `offsets.storage`) its offsets in ZooKeeper. A group
on Kafka's group coordinator (`group.coordination=kafka`) needs no ZooKeeper at all: brokers
from `bootstrap.servers`, topics from Kafka metadata, offsets in Kafka, and its members as the
coordinator describes them (DescribeGroups). Everything else the data source does is the same
for both, so this is the only place that tells them apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from kazoo.client import KazooClient

from zkconsumer.fetch import KafkaAccess, LogOffsets, resolve_kafka_access
from zkconsumer.fetch.kafka_client import kafka_client_options
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import (
    KAFKA_ERRORS,
    GroupOffsetsReader,
    OffsetStore,
    RetryPolicy,
    call_with_retries,
    is_transient_kafka_error,
    open_offset_store,
)
from zkconsumer.offsets.coordinator_groups import read_coordinator_group
from zkconsumer.spark.commit_guard import check_coordinator_group_idle
from zkconsumer.spark.options import SourceOptions
from zkconsumer.topology import TopicSource, open_topic_source
from zkconsumer.zk.group_state import read_owners
from zkconsumer.zk.registry import read_brokers
from zkconsumer.zk.session import connect_for


class GroupHome(Protocol):
    """What the driver needs from where the group lives. Opened by `open_group_home`; the
    clients it hands out are the caller's to close, its own are closed by `close`."""

    def kafka_access(self) -> KafkaAccess: ...

    def topic_source(self, client: LogOffsets | None = None) -> TopicSource:
        """Where topics are read; through `client` when they come from Kafka metadata."""

    def offset_store(self, access: KafkaAccess) -> OffsetStore: ...

    def live_owners(self) -> Mapping[TopicPartition, str]:
        """The partitions live members hold, and who holds each; `CommitRefusedError` when the
        group is live in a way that rules out any commit from outside it."""

    def close(self) -> None: ...


def open_group_home(options: SourceOptions) -> GroupHome:
    if options.config.group_coordination == "kafka":
        return KafkaCoordinatorHome(options)
    return ZookeeperHome(options)


class ZookeeperHome:
    """A group coordinated in ZooKeeper, through one session opened here. Brokers and topics
    come from its registry unless `bootstrapServers` names brokers that need not be registered
    there; its live members are its owner znodes."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self.zk: KazooClient = connect_for(options.config.zookeeper)

    def kafka_access(self) -> KafkaAccess:
        config = self._options.config
        return resolve_kafka_access(lambda: read_brokers(self.zk).values(),
                                    config.kafka_client_properties.get("security.protocol",
                                                                       "PLAINTEXT"),
                                    config.kafka_api_version, self._options.bootstrap_servers)

    def topic_source(self, client: LogOffsets | None = None) -> TopicSource:
        return _topic_source(self.zk, self._options, client)

    def offset_store(self, access: KafkaAccess) -> OffsetStore:
        return open_offset_store(self._options.config, self.zk, *access)

    def live_owners(self) -> Mapping[TopicPartition, str]:
        return read_owners(self.zk, self._options.config.group_id)

    def close(self) -> None:
        self.zk.stop()
        self.zk.close()


class KafkaCoordinatorHome:
    """A group on Kafka's group coordinator: brokers alone. Its members are asked of the
    coordinator at each commit, through an admin client opened at the first one."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        config = options.config
        brokers = options.bootstrap_servers
        assert brokers is not None  # bootstrap.servers is required with group.coordination=kafka
        self._access = KafkaAccess(brokers, config.kafka_api_version)
        self._describer: GroupOffsetsReader | None = None

    def kafka_access(self) -> KafkaAccess:
        return self._access

    def topic_source(self, client: LogOffsets | None = None) -> TopicSource:
        return _topic_source(None, self._options, client)

    def offset_store(self, access: KafkaAccess) -> OffsetStore:
        return open_offset_store(self._options.config, None, *access)

    def live_owners(self) -> Mapping[TopicPartition, str]:
        """Nobody, or `CommitRefusedError` naming the group's members: the coordinator takes
        a commit from outside only from a group with none, whichever partitions they hold
        (see `check_coordinator_group_idle`)."""
        config = self._options.config
        group = config.group_id
        described = call_with_retries(
            lambda: read_coordinator_group(self._group_describer(), group),
            what=f"asking Kafka's group coordinator at {self._access.bootstrap_servers} "
                 f"about the members of group {group}",
            policy=RetryPolicy(config.offsets_commit_max_retries,
                               config.offsets_channel_backoff_ms),
            is_transient=is_transient_kafka_error, handled=KAFKA_ERRORS)
        check_coordinator_group_idle(group, described)
        return {}

    def close(self) -> None:
        if self._describer is not None:
            self._describer.close()

    def _group_describer(self) -> GroupOffsetsReader:
        if self._describer is None:
            config = self._options.config
            self._describer = GroupOffsetsReader(
                self._access, kafka_client_options(config.kafka_client_properties),
                config.offsets_channel_socket_timeout_ms, client_id=config.client_id)
        return self._describer


def _topic_source(zk: KazooClient | None, options: SourceOptions,
                  client: LogOffsets | None) -> TopicSource:
    config = options.config
    return open_topic_source(zk, options.bootstrap_servers, config.kafka_api_version,
                             kafka_client_options(config.kafka_client_properties),
                             client=client)

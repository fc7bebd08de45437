"""Choosing the offset store from the consumer config, the one place that knows the rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from zkconsumer.config import ConsumerConfig
from zkconsumer.fetch.kafka_client import kafka_client_options
from zkconsumer.offsets.dual_store import DualOffsetStore
from zkconsumer.offsets.kafka_store import KafkaOffsetStore
from zkconsumer.offsets.metered_store import CommitObserver, MeteredOffsetStore
from zkconsumer.offsets.store import OffsetStore
from zkconsumer.offsets.zookeeper_store import ZookeeperOffsetStore

if TYPE_CHECKING:
    from kazoo.client import KazooClient


def open_offset_store(config: ConsumerConfig, zk: KazooClient | None, bootstrap_servers: str,
                      api_version: tuple[int, ...] | None = None, *,
                      observe_commit: CommitObserver | None = None) -> OffsetStore:
    """zookeeper storage, kafka storage, or both when kafka storage has dual commit on; for a
    group on Kafka's group coordinator (`group.coordination=kafka`), Kafka whatever
    `offsets.storage` says, written as a tool writes them: from outside the group, which the
    coordinator takes only while the group has no members. `zk` may be None only then.

    The Kafka client follows the reference's offsets.* keys (retries, backoff, socket timeout)
    and gets every `kafka.` pass-through property, since security settings apply to it too.
    `api_version` is what the caller resolved for the brokers; `kafka.api.version` when None.
    `observe_commit`, when given, is told of every commit of each storage (see
    `MeteredOffsetStore`).
    """
    def metered(store: OffsetStore, writes_refresh: bool) -> OffsetStore:
        if observe_commit is None:
            return store
        return MeteredOffsetStore(store, observe_commit, writes_refresh=writes_refresh)

    def kafka() -> OffsetStore:
        # Kafka writes `refresh` again, as its offsets expire.
        return metered(KafkaOffsetStore(
            config.group_id, bootstrap_servers,
            api_version=api_version or config.kafka_api_version,
            client_id=config.client_id,
            retries=config.offsets_commit_max_retries,
            backoff_ms=config.offsets_channel_backoff_ms,
            request_timeout_ms=config.offsets_channel_socket_timeout_ms,
            client_properties=kafka_client_options(config.kafka_client_properties),
        ), writes_refresh=True)

    if config.group_coordination == "kafka":
        return kafka()
    if zk is None:
        raise ValueError("a ZooKeeper-coordinated group's offsets need its ZooKeeper session")
    # ZooKeeper keeps offsets for good and ignores `refresh`.
    zookeeper = metered(ZookeeperOffsetStore(zk, config.group_id), writes_refresh=False)
    if config.offsets_storage == "zookeeper":
        return zookeeper
    return DualOffsetStore(zookeeper, kafka()) if config.dual_commit_enabled else kafka()

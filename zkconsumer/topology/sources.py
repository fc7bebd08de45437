"""The two sources of topics and partitions: the ZooKeeper registry, and Kafka metadata.

A rebalance, a `group describe` or a Spark plan takes one `TopicView` and reads everything from
it, so one decision never mixes two moments of the cluster.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from kafka.errors import KafkaError
from kazoo.client import KazooClient

from zkconsumer.errors import ZkConsumerError
from zkconsumer.fetch.retry_policy import RetryWarnings
from zkconsumer.kafka_client import LazyConsumer, client_settings
from zkconsumer.logs import get_logger
from zkconsumer.zk.registry import list_topics, read_topic

log = get_logger(__name__)


class TopicMetadataError(ZkConsumerError):
    """Kafka could not be asked which topics and partitions exist."""


class TopicView(Protocol):
    @property
    def all_topics(self) -> Sequence[str]: ...

    def partitions(self, topic: str) -> list[int] | None:
        """The topic's partition numbers, sorted; None for a topic that does not exist."""


class TopicSource(Protocol):
    watched_in_zookeeper: bool  # False: changes are found by a `MetadataRefresher`

    def view(self) -> TopicView: ...

    def close(self) -> None: ...


class _RegistryView:
    """Topics listed once; each topic's znode read when asked for, since a group usually
    cares about a few of many topics."""

    def __init__(self, zk: KazooClient) -> None:
        self._zk = zk
        self.all_topics = list_topics(zk)

    def partitions(self, topic: str) -> list[int] | None:
        registered = read_topic(self._zk, topic)
        return None if registered is None else registered.partition_numbers()


class ZookeeperTopics:
    """The brokers' registry in the group's ZooKeeper, as the legacy consumer read it."""

    watched_in_zookeeper = True

    def __init__(self, zk: KazooClient) -> None:
        self._zk = zk

    def view(self) -> TopicView:
        return _RegistryView(self._zk)

    def close(self) -> None:
        return None


class _MetadataView:
    def __init__(self, partitions: Mapping[str, list[int]]) -> None:
        self._partitions = dict(partitions)
        self.all_topics = sorted(self._partitions)

    def partitions(self, topic: str) -> list[int] | None:
        return self._partitions.get(topic)


class KafkaTopics:
    """Every topic and its partitions from one Kafka metadata request.

    Internal topics are listed too (kafka-python leaves them out by default): the group's own
    `exclude.internal.topics` decides, as it does with the registry. While the brokers cannot
    be reached, kafka-python answers from the metadata it last had, and a request that times
    out gives the last view again with a (throttled) warning, as a registry member keeps its
    last state while a broker is away; the next check that gets through rebalances if anything
    changed. Only a source that never answered fails. Safe from any thread.
    """

    watched_in_zookeeper = False

    def __init__(self, bootstrap_servers: str, api_version: tuple[int, ...] | None = None,
                 client_options: Mapping[str, Any] | None = None,
                 request_timeout_ms: int = 30000) -> None:
        self._client = LazyConsumer(
            client_settings(client_options or {}, bootstrap_servers, api_version,
                            request_timeout_ms=request_timeout_ms), TopicMetadataError)
        self._lock = threading.Lock()
        self._last: _MetadataView | None = None
        self._warnings = RetryWarnings(log)

    def view(self) -> TopicView:
        with self._lock:
            try:
                found = self._read()
            except (KafkaError, TopicMetadataError) as exc:
                if self._last is None:
                    if isinstance(exc, TopicMetadataError):
                        raise
                    raise TopicMetadataError(f"cannot read topic metadata from Kafka at "
                                             f"{self._client.where}: {exc}") from exc
                self._warnings.report("metadata", "topic metadata unreadable; using the last "
                                      "known", error=str(exc))
                return self._last
            # A topic still being created has no partitions yet: it does not exist until it has.
            self._last = _MetadataView({topic: numbers for topic, numbers in found.items()
                                        if numbers})
            return self._last

    def _read(self) -> dict[str, list[int]]:
        consumer = self._client.get()
        consumer.topics()  # a fresh metadata request for every topic
        # kafka-python keeps what it read in its cluster metadata, whose listing can include
        # the internal topics that `topics()` leaves out.
        cluster = consumer._cluster
        return {topic: sorted(cluster.partitions_for_topic(topic) or ())
                for topic in cluster.topics(exclude_internal_topics=False)}

    def close(self) -> None:
        with self._lock:
            self._client.close()


def open_topic_source(zk: KazooClient, bootstrap_override: str | None,
                      api_version: tuple[int, ...] | None = None,
                      client_options: Mapping[str, Any] | None = None,
                      request_timeout_ms: int = 30000) -> TopicSource:
    """Kafka metadata when brokers are given explicitly (they need not be registered in this
    ZooKeeper), the ZooKeeper registry otherwise."""
    if bootstrap_override:
        return KafkaTopics(bootstrap_override, api_version, client_options, request_timeout_ms)
    return ZookeeperTopics(zk)

"""Reading the brokers' and topics' registries, decoded with the znode codecs.

Registrations can vanish between listing and reading (a broker stops, a topic is deleted); such
entries are skipped rather than failing the whole read.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kazoo.exceptions import NoNodeError

from zkconsumer.logs import get_logger
from zkconsumer.zk.znode_reader import KazooReader
from zkconsumer.znodes.brokers import BrokerRegistration
from zkconsumer.znodes.paths import (
    BROKER_IDS,
    BROKER_TOPICS,
    broker_path,
    parse_broker_id,
    partition_state_path,
    topic_path,
)
from zkconsumer.znodes.topics import PartitionState, TopicPartitions

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = get_logger(__name__)


def children(zk: KazooClient, path: str) -> list[str]:
    """The children of `path`, sorted; none when it does not exist."""
    try:
        return sorted(zk.get_children(path))
    except NoNodeError:
        return []


def read_brokers(zk: KazooClient, listed: Iterable[str] | None = None
                 ) -> dict[int, BrokerRegistration]:
    """The registered brokers, by id: those `listed` under `/brokers/ids` (listed here when not
    given), read together."""
    paths = {}
    for name in children(zk, BROKER_IDS) if listed is None else listed:
        broker_id = parse_broker_id(name, f"{BROKER_IDS}/{name}")
        paths[broker_id] = broker_path(broker_id)
    nodes = KazooReader(zk).data(paths.values())
    return {broker_id: BrokerRegistration.decode(path, nodes[path].data)
            for broker_id, path in sorted(paths.items()) if path in nodes}


def wait_for_brokers(zk: KazooClient, timeout_s: float) -> dict[int, BrokerRegistration]:
    """The registered brokers, waiting up to `timeout_s` while there are none: a broker that
    restarts (or re-registers after a ZooKeeper restart) is gone for a few seconds, and a worker
    started then should wait for it rather than fail. Returns {} if none came."""
    deadline = time.monotonic() + timeout_s
    waited = False
    while True:
        changed = threading.Event()
        try:
            listed = zk.get_children(BROKER_IDS, watch=lambda _event, wake=changed: wake.set())
        except NoNodeError:
            zk.exists(BROKER_IDS, watch=lambda _event, wake=changed: wake.set())
            listed = []
        brokers = read_brokers(zk, listed)
        remaining = deadline - time.monotonic()
        if brokers or remaining <= 0:
            return brokers
        if not waited:
            log.warning("no broker registered in ZooKeeper yet; waiting", up_to_s=timeout_s)
            waited = True
        changed.wait(min(remaining, 1.0))


def list_topics(zk: KazooClient) -> list[str]:
    return children(zk, BROKER_TOPICS)


def read_topic(zk: KazooClient, topic: str) -> TopicPartitions | None:
    return read_topics(zk, [topic])[topic]


def read_topics(zk: KazooClient, topics: Iterable[str]) -> dict[str, TopicPartitions | None]:
    """Each topic's registration (None: not registered), all read at once (pipelined)."""
    paths = {topic: topic_path(topic) for topic in topics}
    nodes = KazooReader(zk).data(paths.values())
    return {topic: decode_topic(topic, nodes[path].data if path in nodes else None)
            for topic, path in paths.items()}


def decode_topic(topic: str, data: bytes | None) -> TopicPartitions | None:
    """A topic's registration from its znode's data, read here or by a watch (None: no
    znode)."""
    return None if data is None else _decode_topic(topic_path(topic), data)


# Every member re-reads every subscribed topic on every rebalance, and the znode rarely changes;
# decoding a many-partition topic once per distinct content saves most of that work.
_decode_topic = functools.lru_cache(maxsize=256)(TopicPartitions.decode)


def read_partition_state(zk: KazooClient, topic: str, partition: int) -> PartitionState | None:
    path = partition_state_path(topic, partition)
    try:
        data, _ = zk.get(path)
    except NoNodeError:
        return None
    return PartitionState.decode(path, data)

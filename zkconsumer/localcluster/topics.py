"""Creating topics the ZooKeeper way, as Kafka's own `kafka-topics.sh --zookeeper` did.

Brokers of the ZooKeeper era (0.9 has no CreateTopics request) create a topic when its
replica assignment appears under /brokers/topics; writing it there works for every ZooKeeper-mode
broker version.
"""

from __future__ import annotations

import dataclasses
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError

from zkconsumer.errors import ZkConsumerError
from zkconsumer.fetch import kafka_protocol as protocol
from zkconsumer.fetch.broker_channel import BrokerChannel, ChannelError
from zkconsumer.znodes.paths import BROKER_IDS, partition_state_path, topic_config_path, topic_path
from zkconsumer.znodes.topics import PartitionState, TopicPartitions


class TopicCreationError(ZkConsumerError):
    """A topic could not be created or did not get leaders in time."""


def create_topic(zk: KazooClient, topic: str, partitions: int, replication_factor: int = 1,
                 *, wait: bool = True, timeout: float = 60.0) -> TopicPartitions:
    """Write the topic's replica assignment (replicas spread over the live brokers) and wait for leaders."""
    broker_ids = sorted(int(child) for child in zk.get_children(BROKER_IDS))
    if len(broker_ids) < replication_factor:
        raise TopicCreationError(
            f"cannot create {topic!r} with replication factor {replication_factor}: "
            f"only {len(broker_ids)} broker(s) are registered"
        )
    assignment = TopicPartitions(
        version=1,
        partitions={
            p: tuple(broker_ids[(p + r) % len(broker_ids)] for r in range(replication_factor))
            for p in range(partitions)
        },
        topic_id=None, adding_replicas={}, removing_replicas={},
    )
    zk.ensure_path("/config/topics")
    try:
        zk.create(topic_config_path(topic), b'{"version":1,"config":{}}')
        zk.create(topic_path(topic), assignment.encode(), makepath=True)
    except NodeExistsError:
        raise TopicCreationError(f"topic {topic!r} already exists") from None
    if wait:
        wait_for_leaders(zk, topic, partitions, timeout=timeout)
    return assignment


def add_partition(zk: KazooClient, topic: str) -> int:
    """One more partition for the topic, as `kafka-topics.sh --alter --partitions` adds it: by
    rewriting the topic's replica assignment, on which the controller creates the partition and
    members watching the topic rebalance. Returns the new partition's number."""
    path = topic_path(topic)
    data, stat = zk.get(path)
    current = TopicPartitions.decode(path, data)
    partition = max(current.partitions) + 1
    brokers = sorted(int(child) for child in zk.get_children(BROKER_IDS))
    replicas = (brokers[partition % len(brokers)],)
    grown = dataclasses.replace(current, partitions={**current.partitions, partition: replicas})
    zk.set(path, grown.encode(), version=stat.version)
    wait_for_leaders(zk, topic, partition + 1)
    return partition


def wait_for_leaders(zk: KazooClient, topic: str, partitions: int, timeout: float = 60.0) -> None:
    """Block until every partition of the topic has a leader in its state znode."""
    deadline = time.monotonic() + timeout
    pending = set(range(partitions))
    while pending:
        for partition in sorted(pending):
            path = partition_state_path(topic, partition)
            if zk.exists(path):
                state = PartitionState.decode(path, zk.get(path)[0])
                if state.leader >= 0:
                    pending.discard(partition)
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TopicCreationError(
                f"topic {topic!r}: partitions {sorted(pending)} have no leader after {timeout:.0f}s"
            )
        time.sleep(0.1)


def wait_for_broker_metadata(port: int, topic: str, partitions: int,
                             timeout: float = 30.0) -> None:
    """Block until a broker reports a leader for every partition of the topic. The broker
    learns a new topic's leaders a moment after ZooKeeper records them (`wait_for_leaders`);
    a producer asking before that logs `Topic ... not found in cluster metadata` as an error,
    which every demo run showed although nothing was wrong. `port`: the broker's, on
    loopback."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            channel = BrokerChannel("127.0.0.1", port, client_id="zkconsumer", timeout_s=5.0)
            try:
                answer = channel.request(protocol.METADATA, 0, protocol.metadata_request([topic]))
            finally:
                channel.close()
            leaders = protocol.decode_metadata(answer).leaders
        except (ChannelError, protocol.ProtocolError):
            leaders = {}
        if sum(1 for tp, leader in leaders.items() if tp.topic == topic and leader >= 0) \
                == partitions:
            return
        if time.monotonic() > deadline:
            raise TopicCreationError(f"broker 127.0.0.1:{port} did not report the leaders of "
                                     f"{topic} within {timeout:.0f}s")
        time.sleep(0.1)

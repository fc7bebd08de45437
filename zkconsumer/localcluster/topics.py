"""Creating topics the ZooKeeper way, as Kafka's own `kafka-topics.sh --zookeeper` did.

Brokers of the ZooKeeper era (0.9 has no CreateTopics request) create a topic when its
replica assignment appears under /brokers/topics; writing it there works for every ZooKeeper-mode
broker version. Leaders are moved the same way, through the controller's /admin znodes, as
`kafka-reassign-partitions.sh` and `kafka-preferred-replica-election.sh` do.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from zkconsumer.assignment import java_string_hash
from zkconsumer.errors import ZkConsumerError
from zkconsumer.kafka.errors import ChannelError
from zkconsumer.kafka.io.channel import BrokerChannel
from zkconsumer.kafka.protocol import codec as protocol
from zkconsumer.znodes.paths import (
    BROKER_IDS,
    BROKER_TOPICS,
    partition_state_path,
    topic_config_path,
    topic_path,
)
from zkconsumer.znodes.topics import PartitionState, TopicPartitions


class TopicCreationError(ZkConsumerError):
    """A topic could not be created, or its partitions did not get (or move to) leaders in
    time."""


# Where the controller takes its orders, as Kafka's admin tools write them.
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
# The topic where brokers keep the groups' Kafka-stored offsets.
OFFSETS_TOPIC = "__consumer_offsets"


def create_topic(zk: KazooClient, topic: str, partitions: int, replication_factor: int = 1,
                 *, config: Mapping[str, str] | None = None, wait: bool = True,
                 timeout: float = 60.0) -> TopicPartitions:
    """Write the topic's replica assignment (replicas spread over the live brokers) and its
    topic-level `config`, and wait for leaders."""
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
        zk.create(topic_config_path(topic),
                  json.dumps({"version": 1, "config": dict(config or {})}).encode())
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
    replication_factor = min(len(current.partitions[0]), len(brokers))
    replicas = tuple(brokers[(partition + r) % len(brokers)] for r in range(replication_factor))
    grown = dataclasses.replace(current, partitions={**current.partitions, partition: replicas})
    zk.set(path, grown.encode(), version=stat.version)
    wait_for_leaders(zk, topic, partition + 1)
    return partition


def partition_state(zk: KazooClient, topic: str, partition: int) -> PartitionState | None:
    """The partition's leader and in-sync replicas as the controller recorded them (None
    before the controller wrote any)."""
    path = partition_state_path(topic, partition)
    try:
        return PartitionState.decode(path, zk.get(path)[0])
    except NoNodeError:
        return None


def partition_leader(zk: KazooClient, topic: str, partition: int) -> int:
    """The broker leading the partition, or -1 while none does."""
    state = partition_state(zk, topic, partition)
    return -1 if state is None else state.leader


def offsets_partition(zk: KazooClient, group: str) -> int:
    """The partition of the offsets topic that keeps `group`'s Kafka-stored offsets, as the
    brokers choose it: abs(group.hashCode) modulo the topic's partition count (Kafka's
    `Utils.abs` maps Integer.MIN_VALUE to 0)."""
    path = topic_path(OFFSETS_TOPIC)
    count = len(TopicPartitions.decode(path, zk.get(path)[0]).partitions)
    code = java_string_hash(group)
    return (0 if code == -2**31 else abs(code)) % count


def group_coordinator(zk: KazooClient, group: str) -> int:
    """The broker coordinating `group` (its Kafka-stored offsets): the leader of its
    `offsets_partition`."""
    return partition_leader(zk, OFFSETS_TOPIC, offsets_partition(zk, group))


def wait_for_leader(zk: KazooClient, topic: str, partition: int, *, other_than: int = -1,
                    timeout: float = 60.0) -> int:
    """Block until the partition has a leader other than `other_than` (a broker being killed
    or moved away from); return it."""
    deadline = time.monotonic() + timeout
    while True:
        leader = partition_leader(zk, topic, partition)
        if leader >= 0 and leader != other_than:
            return leader
        if time.monotonic() > deadline:
            raise TopicCreationError(f"{topic}-{partition} has no leader other than "
                                     f"{other_than} after {timeout:.0f}s")
        time.sleep(0.1)


def move_leader(zk: KazooClient, topic: str, partition: int, broker_id: int,
                timeout: float = 60.0) -> None:
    """Make `broker_id`, an in-sync replica, the partition's leader, as an operator does: a
    reassignment to the same replicas with it first (which makes it the preferred replica),
    then a preferred replica election. Each order waits for the controller to finish the
    previous one's (it refuses a second while one is pending)."""
    path = topic_path(topic)
    replicas = TopicPartitions.decode(path, zk.get(path)[0]).partitions[partition]
    if broker_id not in replicas:
        raise TopicCreationError(f"broker {broker_id} is not a replica of {topic}-{partition}")
    reordered = [broker_id, *(b for b in replicas if b != broker_id)]
    entry = {"topic": topic, "partition": partition}
    for order, data in ((REASSIGN_PARTITIONS, {**entry, "replicas": reordered}),
                        (PREFERRED_REPLICA_ELECTION, entry)):
        _wait_until_absent(zk, order, timeout)
        zk.create(order, json.dumps({"version": 1, "partitions": [data]}).encode(),
                  makepath=True)
        _wait_until_absent(zk, order, timeout)
    deadline = time.monotonic() + timeout
    while partition_leader(zk, topic, partition) != broker_id:
        if time.monotonic() > deadline:
            raise TopicCreationError(f"{topic}-{partition} is not led by broker {broker_id} "
                                     f"{timeout:.0f}s after a preferred replica election")
        time.sleep(0.1)


def wait_until_in_sync(zk: KazooClient, timeout: float = 60.0) -> None:
    """Block until every replica of every partition of every topic is in sync (the state a
    rolling restart must reach before it stops the next broker, or acknowledged writes could
    live on one replica only)."""
    deadline = time.monotonic() + timeout
    while True:
        lagging = sorted(_out_of_sync_partitions(zk))
        if not lagging:
            return
        if time.monotonic() > deadline:
            raise TopicCreationError(f"replicas still out of sync after {timeout:.0f}s: "
                                     + ", ".join(lagging[:10]))
        time.sleep(0.2)


def _out_of_sync_partitions(zk: KazooClient) -> list[str]:
    lagging = []
    for topic in zk.get_children(BROKER_TOPICS):
        path = topic_path(topic)
        for partition, replicas in TopicPartitions.decode(path, zk.get(path)[0]).partitions.items():
            state = partition_state(zk, topic, partition)
            if state is None or state.leader < 0 or set(state.isr) != set(replicas):
                lagging.append(f"{topic}-{partition}")
    return lagging


def _wait_until_absent(zk: KazooClient, path: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while zk.exists(path):
        if time.monotonic() > deadline:
            raise TopicCreationError(f"the controller left {path} pending for {timeout:.0f}s")
        time.sleep(0.1)


def wait_for_leaders(zk: KazooClient, topic: str, partitions: int, timeout: float = 60.0) -> None:
    """Block until every partition of the topic has a leader in its state znode."""
    deadline = time.monotonic() + timeout
    pending = set(range(partitions))
    while pending:
        for partition in sorted(pending):
            if partition_leader(zk, topic, partition) >= 0:
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

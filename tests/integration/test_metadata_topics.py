"""Members given `bootstrap.servers` learn topics and partitions from Kafka metadata.

The group lives in a ZooKeeper chroot where no broker registers, as with a KRaft cluster or a
group moved off the cluster's own ZooKeeper: only Kafka metadata can name the partitions, and
only the periodic metadata check can notice one being added. The broker is the 0.9.0.1 one, so
the same path is proven on the legacy protocol that the modern-broker tests prove on Tansu.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from kafka import KafkaConsumer, KafkaProducer
from support.kafka import produce
from support.members import CollectingMember
from support.ownership import assignment_from_registrations, settled_ownership
from support.waiting import wait_until

from zkconsumer.localcluster import add_partition
from zkconsumer.localcluster.processes import free_port
from zkconsumer.zk.group_state import read_owners
from zkconsumer.zk.session import connect

pytestmark = pytest.mark.integration


@pytest.fixture
def group_zookeeper(cluster, zk, unique_name):
    """A chroot with nothing but groups in it, and a client of it."""
    chroot = "/" + unique_name("groups")
    zk.ensure_path(chroot)
    client = connect(cluster.zookeeper_connect + chroot)
    yield cluster.zookeeper_connect + chroot, client
    client.stop()
    client.close()


def _send(cluster, topic: str, partition: int, values: list[bytes]) -> None:
    """The partition may be new: its leader is in ZooKeeper before the broker's metadata
    names it, so the producer is made once the broker does."""
    wait_until(lambda: partition in _partitions_in_metadata(cluster, topic), timeout=30,
               message=f"partition {partition} in the broker's metadata")
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks=1,
                             api_version=cluster.kafka_api_version)
    try:
        for value in values:
            producer.send(topic, value=value, partition=partition)
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=10)


def _partitions_in_metadata(cluster, topic: str) -> set[int]:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers,
                             api_version=cluster.kafka_api_version)
    try:
        return consumer.partitions_for_topic(topic) or set()
    finally:
        consumer.close()


def test_members_find_partitions_in_metadata_and_a_new_one_within_the_interval(
        cluster, zk, topic_factory, unique_name, group_zookeeper):
    if cluster.local is None:
        pytest.skip("adding a partition needs the local cluster's controller")
    connect_string, group_zk = group_zookeeper
    topic = topic_factory(partitions=2)
    produce(cluster, topic, [b"a%d" % i for i in range(20)], 2)
    group = unique_name("g")
    properties = {"zookeeper.connect": connect_string,
                  "bootstrap.servers": cluster.bootstrap_servers,
                  "topic.metadata.refresh.interval.ms": "300"}
    members = [CollectingMember(cluster, group, topics={topic: 1}, **properties)
               for _ in range(2)]
    try:
        registered, owners = settled_ownership(group_zk, group, [topic], 2,
                                               partitions={topic: [0, 1]})
        assert owners == assignment_from_registrations(group_zk, "range", registered,
                                                       partitions={topic: [0, 1]})
        new = add_partition(zk, topic)
        _send(cluster, topic, new, [b"b%d" % i for i in range(10)])
        registered, owners = settled_ownership(group_zk, group, [topic], 2,
                                               partitions={topic: [0, 1, new]})
        assert owners == assignment_from_registrations(group_zk, "range", registered,
                                                       partitions={topic: [0, 1, new]})
        expected = {b"a%d" % i for i in range(20)} | {b"b%d" % i for i in range(10)}
        wait_until(lambda: expected <= {v for m in members for v in m.values()}, timeout=60,
                   message="every message, the new partition's too")
    finally:
        for member in members:
            member.stop()
    assert not zk.exists(f"/consumers/{group}"), "nothing of the group outside its chroot"
    assert read_owners(group_zk, group) == {}


def test_a_filter_member_finds_a_topic_created_while_it_runs(cluster, topic_factory,
                                                             unique_name, group_zookeeper):
    connect_string, group_zk = group_zookeeper
    prefix = unique_name("filtered").replace("-", "_")
    first = topic_factory(partitions=1, name=f"{prefix}_first")
    produce(cluster, first, [b"first"], 1)
    group = unique_name("g")
    member = CollectingMember(cluster, group, whitelist=f"{prefix}_.*",
                              **{"zookeeper.connect": connect_string,
                                 "bootstrap.servers": cluster.bootstrap_servers,
                                 "topic.metadata.refresh.interval.ms": "300"})
    try:
        wait_until(lambda: b"first" in member.values(), timeout=60, message="the first topic")
        later = topic_factory(partitions=1, name=f"{prefix}_later")
        produce(cluster, later, [b"later"], 1)
        wait_until(lambda: b"later" in member.values(), timeout=60,
                   message="the topic created after the member started")
        assert set(read_owners(group_zk, group)) == {(first, 0), (later, 0)}
    finally:
        member.stop()


def test_a_member_whose_brokers_cannot_be_reached_fails_before_joining(
        cluster, unique_name, group_zookeeper):
    connect_string, group_zk = group_zookeeper
    group = unique_name("g")
    nobody = f"127.0.0.1:{free_port()}"
    result = subprocess.run(
        [sys.executable, "-m", "zkconsumer", "consume", "--zookeeper", connect_string,
         "--group", group, "--topic", "t", "--bootstrap-server", nobody,
         "--property", "socket.timeout.ms=3000"],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert f"error: cannot reach Kafka at {nobody}" in result.stderr
    assert not group_zk.exists(f"/consumers/{group}/ids") or \
        group_zk.get_children(f"/consumers/{group}/ids") == []

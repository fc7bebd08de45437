"""The codecs decode what a real broker and controller write to ZooKeeper."""

from __future__ import annotations

import pytest

from zkconsumer.zk.registry import list_topics, read_brokers, read_partition_state, read_topic
from zkconsumer.znodes.brokers import BrokerRegistration
from zkconsumer.znodes.paths import BROKER_IDS, broker_path, topic_path
from zkconsumer.znodes.topics import TopicPartitions

pytestmark = pytest.mark.integration


def test_broker_registrations_decode_to_the_advertised_addresses(cluster, zk):
    children = zk.get_children(BROKER_IDS)
    assert children, "no broker registered"
    addresses = set()
    for child in children:
        path = broker_path(int(child))
        raw, _ = zk.get(path)
        registration = BrokerRegistration.decode(path, raw)
        assert registration.version >= 1
        host, port = registration.address_for()
        addresses.add(f"{host}:{port}")
    assert addresses == set(cluster.bootstrap_servers.split(","))


def test_created_topic_and_partition_states_decode(zk, topic_factory):
    topic = topic_factory(partitions=6)
    raw, _ = zk.get(topic_path(topic))
    assignment = TopicPartitions.decode(topic_path(topic), raw)
    assert assignment.partition_numbers() == list(range(6))
    live = set(read_brokers(zk))
    assert topic in list_topics(zk)
    for partition in assignment.partition_numbers():
        state = read_partition_state(zk, topic, partition)
        assert state is not None
        assert state.leader in live
        assert state.leader in state.isr
        assert set(state.isr) <= set(assignment.partitions[partition])


def test_reading_a_missing_topic_gives_none(zk, unique_name):
    assert read_topic(zk, unique_name("absent")) is None

"""`ConsumerConnector` makes a Kafka-coordinated member when the config says so, without any
ZooKeeper client."""

from __future__ import annotations

import pytest

from zkconsumer.errors import ConfigError
from zkconsumer.member.connector import ConsumerConnector
from zkconsumer.member.kafka_connector import KafkaCoordinatedConnector
from zkconsumer.member.state import State

KAFKA = {"group.id": "g", "group.coordination": "kafka", "bootstrap.servers": "b1:9092"}


def no_zookeeper(_settings):
    raise AssertionError("a Kafka-coordinated member must not connect to ZooKeeper")


def test_group_coordination_kafka_makes_a_member_without_zookeeper():
    connector = ConsumerConnector(KAFKA, connect_zookeeper=no_zookeeper)
    assert isinstance(connector, KafkaCoordinatedConnector)
    assert connector.config.zookeeper_connect is None
    assert connector.state is State.NEW
    connector.shutdown()  # never started: nothing to leave
    assert connector.state is State.CLOSED


def test_the_zookeeper_member_stays_the_default():
    with pytest.raises(ConfigError, match="zookeeper.connect"):
        ConsumerConnector({"group.id": "g", "bootstrap.servers": "b1:9092"})

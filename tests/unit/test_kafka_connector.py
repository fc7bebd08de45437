"""`ConsumerConnector` makes a Kafka-coordinated member when the config says so, without any
ZooKeeper client, and refuses at once what that member does not do yet."""

from __future__ import annotations

import pytest

from zkconsumer import Whitelist
from zkconsumer.errors import ConfigError, ZkConsumerError
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


def test_wildcard_subscriptions_are_refused_with_one_line():
    connector = ConsumerConnector(KAFKA)
    with pytest.raises(ZkConsumerError, match="wildcard subscriptions are not supported"):
        connector.create_message_streams_by_filter(Whitelist("t.*"))
    connector.shutdown()

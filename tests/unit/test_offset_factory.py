"""open_offset_store picks the store from offsets.storage and dual.commit.enabled."""

from __future__ import annotations

import pytest

from zkconsumer.config import ConsumerConfig
from zkconsumer.errors import ConfigError
from zkconsumer.fetch.kafka_client import kafka_client_options
from zkconsumer.offsets import (
    DualOffsetStore,
    KafkaOffsetStore,
    ZookeeperOffsetStore,
    open_offset_store,
)

# Nothing is contacted: the Kafka client connects lazily once given an API version.
UNREACHABLE = "127.0.0.1:1"


def config(**settings: str) -> ConsumerConfig:
    return ConsumerConfig.from_mapping({"group.id": "g", "zookeeper.connect": "127.0.0.1:1",
                                        "kafka.api.version": "0.9", **settings})


@pytest.mark.parametrize(("settings", "kind", "name"), [
    ({}, ZookeeperOffsetStore, "zookeeper"),
    ({"offsets.storage": "kafka"}, DualOffsetStore, "dual"),
    ({"offsets.storage": "kafka", "dual.commit.enabled": "false"}, KafkaOffsetStore, "kafka"),
    ({"offsets.storage": "zookeeper", "dual.commit.enabled": "true"}, ZookeeperOffsetStore,
     "zookeeper"),
])
def test_storage_settings_choose_the_store(settings, kind, name):
    store = open_offset_store(config(**settings), zk=object(), bootstrap_servers=UNREACHABLE)
    try:
        assert isinstance(store, kind)
        assert store.name == name
    finally:
        store.close()


@pytest.mark.parametrize("storage", ["zookeeper", "kafka"])
def test_a_group_on_kafkas_coordinator_keeps_its_offsets_in_kafka_alone_without_zookeeper(
        storage):
    settings = {"group.id": "g", "group.coordination": "kafka", "kafka.api.version": "0.9",
                "bootstrap.servers": UNREACHABLE, "offsets.storage": storage}
    store = open_offset_store(ConsumerConfig.from_mapping(settings), zk=None,
                              bootstrap_servers=UNREACHABLE)
    try:
        assert isinstance(store, KafkaOffsetStore)
    finally:
        store.close()


def test_kafka_properties_become_typed_kafka_python_options():
    assert kafka_client_options({
        "security.protocol": "SSL",
        "ssl.check.hostname": "False",
        "reconnect.backoff.ms": "250",
        "ssl.cafile": "/etc/ca.pem",
    }) == {
        "security_protocol": "SSL",
        "ssl_check_hostname": False,
        "reconnect_backoff_ms": 250,
        "ssl_cafile": "/etc/ca.pem",
    }


@pytest.mark.parametrize(("key", "value"), [("ssl.check.hostname", "yes"),
                                            ("reconnect.backoff.ms", "soon")])
def test_a_property_of_the_wrong_type_names_the_key(key, value):
    with pytest.raises(ConfigError, match=f"kafka.{key}"):
        kafka_client_options({key: value})


@pytest.mark.parametrize("key", ["group.id", "bootstrap.servers", "enable.auto.commit"])
def test_options_zkconsumer_manages_cannot_be_overridden(key):
    with pytest.raises(ConfigError, match="set by zkconsumer itself"):
        kafka_client_options({key: "x"})


def test_a_misspelt_property_is_rejected_without_echoing_its_value():
    with pytest.raises(ConfigError, match="kafka.sasl.plain.pasword") as raised:
        kafka_client_options({"sasl.plain.pasword": "s3cret"})
    assert "s3cret" not in str(raised.value)

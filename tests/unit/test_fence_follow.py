"""The configuration a member follows its group with, each way."""

from __future__ import annotations

import pytest

from zkconsumer.config import ConsumerConfig
from zkconsumer.config.loading import MissingConfigError
from zkconsumer.fetch.brokers import KafkaAccess
from zkconsumer.member.fence_follow import config_for

ON_KAFKA = {"group.id": "g", "group.coordination": "kafka", "bootstrap.servers": "b1:9092",
            "session.timeout.ms": "6000", "cutover.on.fence": "switch"}


def test_a_kafka_member_follows_its_group_back_to_zookeeper_with_its_own_settings():
    started = ConsumerConfig.from_mapping({**ON_KAFKA, "zookeeper.connect": "zk1:2181/c"})
    followed = config_for(started, "zookeeper", KafkaAccess("b1:9092", (0, 9)))
    assert followed.group_coordination == "zookeeper"
    assert followed.to_properties() == {**started.to_properties(),
                                        "group.coordination": "zookeeper"}


def test_the_way_back_needs_zookeeper_connect():
    """A member without it never watches the fence, so never gets here; said if it did."""
    with pytest.raises(MissingConfigError, match="zookeeper.connect"):
        config_for(ConsumerConfig.from_mapping(ON_KAFKA), "zookeeper", None)


def test_the_coordination_it_was_started_on_is_its_own_config():
    started = ConsumerConfig.from_mapping({**ON_KAFKA, "zookeeper.connect": "zk1:2181"})
    assert config_for(started, "kafka", None) is started

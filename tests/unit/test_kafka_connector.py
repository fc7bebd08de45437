"""`ConsumerConnector` makes a Kafka-coordinated member when the config says so, without any
ZooKeeper client; with `zookeeper.connect` too, one that reads the cutover fence before it
joins."""

from __future__ import annotations

import pytest
from support.fake_fence import FakeFence

from zkconsumer.errors import ConfigError
from zkconsumer.fetch.brokers import KafkaAccess
from zkconsumer.member.connector import ConsumerConnector
from zkconsumer.member.fence_decision import FenceAction, GroupMovedError
from zkconsumer.member.kafka_group import KafkaGroup
from zkconsumer.member.state import State
from zkconsumer.znodes.fence import Fence, FenceAwareMember, FencePhase

KAFKA = {"group.id": "g", "group.coordination": "kafka", "bootstrap.servers": "b1:9092"}


def no_zookeeper(_settings):
    raise AssertionError("a Kafka-coordinated member must not connect to ZooKeeper")


def test_group_coordination_kafka_makes_a_member_without_zookeeper():
    connector = ConsumerConnector(KAFKA, connect_zookeeper=no_zookeeper)
    assert isinstance(connector._coordination, KafkaGroup)
    assert connector.config.zookeeper_connect is None
    assert connector.state is State.NEW
    connector.shutdown()  # never started: nothing to leave
    assert connector.state is State.CLOSED


def test_the_zookeeper_member_stays_the_default():
    with pytest.raises(ConfigError, match="zookeeper.connect"):
        ConsumerConnector({"group.id": "g", "bootstrap.servers": "b1:9092"})


# -- with zookeeper.connect: the cutover fence ---------------------------------------------------

class Session:
    """A ZooKeeper session that records being closed."""

    def __init__(self) -> None:
        self.closed = False

    def stop(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


class Fetcher:
    ends_polls_at_answers = False

    def close(self) -> None:
        pass


def fenced_member(fence: Fence | None, **settings: str):
    session, watched = Session(), FakeFence(fence)
    connector = ConsumerConnector(
        {**KAFKA, "zookeeper.connect": "zk1:2181", **settings},
        connect_zookeeper=lambda _settings: session, open_fetcher=lambda *_: Fetcher(),
        watch_fence=watched)
    return connector, session, watched


def test_with_zookeeper_connect_a_member_on_a_group_moved_back_is_told_to_join_zookeeper():
    connector, session, watched = fenced_member(Fence("zookeeper", FencePhase.SWITCHED, 1))
    assert isinstance(connector._coordination, KafkaGroup)
    try:
        with pytest.raises(GroupMovedError) as raised:
            connector.create_message_streams({"t": 1})
        moved = raised.value.moved
        assert (moved.decision.action, moved.decision.join) == (FenceAction.JOIN_TARGET,
                                                                "zookeeper")
        assert moved.kafka == KafkaAccess("b1:9092", None)
        assert watched.promise == FenceAwareMember("kafka", "switch")
        assert watched.declared == 0, "no promise made: it joins nothing here"
    finally:
        connector.shutdown()
    assert session.closed, "the fence's session ends with the member"


def test_with_cutover_on_fence_exit_it_refuses_to_start_in_one_line():
    connector, session, _ = fenced_member(Fence("zookeeper", FencePhase.DRAINING, 1),
                                          **{"cutover.on.fence": "exit"})
    try:
        with pytest.raises(GroupMovedError, match="^group g is moving to zookeeper's "
                           r"coordination \(cutover fence draining\) and cutover.on.fence=exit: "
                           "not starting$"):
            connector.create_message_streams({"t": 1})
    finally:
        connector.shutdown()
    assert session.closed

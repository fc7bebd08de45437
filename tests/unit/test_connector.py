"""ConsumerConnector with injected failures: every thread's failure ends the member loudly and
leaves the group, and a suspended ZooKeeper connection pauses delivery and commits.

ZooKeeper and Kafka are in-memory stand-ins here; the same paths run on the real cluster in
tests/integration/test_no_loss.py and test_zookeeper_cutoff.py."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
from kazoo.protocol.states import KazooState
from support.memory_store import MemoryStore
from support.waiting import wait_until

from zkconsumer.errors import ZkConsumerError
from zkconsumer.fetch import FetchError, KafkaAccess
from zkconsumer.member import connector as connector_module
from zkconsumer.member.connector import ConsumerConnector
from zkconsumer.member.plan import GroupSnapshot
from zkconsumer.member.state import State
from zkconsumer.member.streams import ConsumerTimeout
from zkconsumer.model import Message, TopicPartition
from zkconsumer.offsets.store import OwnerCheck

TOPIC = "t"
A = TopicPartition(TOPIC, 0)
B = TopicPartition(TOPIC, 1)


class FakeZooKeeper:
    client_id = (1, b"")

    def __init__(self) -> None:
        self.listeners: list = []

    def add_listener(self, listener) -> None:
        self.listeners.append(listener)

    def remove_listener(self, listener) -> None:
        if listener in self.listeners:  # as kazoo's: a member that never started added none
            self.listeners.remove(listener)

    def report(self, state: KazooState) -> None:
        for listener in list(self.listeners):
            listener(state)

    def stop(self) -> None:
        pass

    def close(self) -> None:
        pass


class FakeMembership:
    """The group in a dict: this member alone, subscribed to a two-partition topic."""

    def __init__(self, _zk, _group, consumer_id, registration, topics) -> None:
        self.topics = topics
        self.consumer_id = consumer_id
        self.registration = registration
        self.registered = False
        self.owners: dict[TopicPartition, str] = {}
        self.fail_snapshot: BaseException | None = None

    def register(self) -> None:
        self.registered = True

    def deregister(self) -> None:
        self.registered = False

    def watch(self, on_change, topics, wildcard) -> None:
        self.on_change = on_change

    def watch_topics(self, _topics) -> None:
        pass

    def snapshot(self, _exclude_internal) -> GroupSnapshot:
        if self.fail_snapshot is not None:
            raise self.fail_snapshot
        members = {self.consumer_id: self.registration} if self.registered else {}
        return GroupSnapshot(members, [TOPIC], {TOPIC: [0, 1]})

    def claim(self, partitions):
        self.owners.update(partitions)
        return []

    def release(self, partitions) -> None:
        for tp in partitions:
            self.owners.pop(tp, None)

    def wait_for_owners_gone(self, _partitions, _timeout_s) -> bool:
        return True

    def owner_checks(self, partitions):
        return {tp: OwnerCheck(f"/owners/{tp}", 1, 1) for tp in partitions
                if tp in self.owners}

    def holds(self, partitions) -> bool:
        return all(tp in self.owners for tp in partitions)


class FakeFetcher:
    """Every assigned partition has offsets 0..99; `fail_with` makes the next poll raise."""

    def __init__(self) -> None:
        self.positions: dict[TopicPartition, int] = {}
        self.fail_with: BaseException | None = None
        self._woken = threading.Event()

    def assign(self, positions, restart=()) -> None:
        self.positions = {tp: positions[tp] if tp in restart or tp not in self.positions
                          else self.positions[tp] for tp in positions}
        self.positions = {tp: 0 if offset is None else offset
                          for tp, offset in self.positions.items()}

    def poll(self, timeout_ms):
        if self.fail_with is not None:
            raise self.fail_with
        fetched = {}
        for tp, offset in self.positions.items():
            if offset < 100:
                fetched[tp] = [Message(tp.topic, tp.partition, o, None, b"v", None)
                               for o in range(offset, min(offset + 10, 100))]
                self.positions[tp] = fetched[tp][-1].offset + 1
        if not fetched:
            self._woken.wait(timeout_ms / 1000.0)
            self._woken.clear()
        return fetched

    def position(self, tp):
        return self.positions.get(tp)

    def high_watermark(self, tp):
        return 100 if tp in self.positions else None

    def wakeup(self) -> None:
        self._woken.set()

    def close(self) -> None:
        pass


@pytest.fixture
def world(monkeypatch):
    """The stand-ins a connector built in this test gets, for the test to poke at."""
    parts = {"zk": FakeZooKeeper(), "fetcher": FakeFetcher(), "store": MemoryStore()}

    def membership(*args):
        parts["membership"] = FakeMembership(*args)
        return parts["membership"]

    monkeypatch.setattr(connector_module, "connect_for", lambda _config: parts["zk"])
    monkeypatch.setattr(connector_module, "wait_for_brokers", lambda *_: {0: None})
    monkeypatch.setattr(connector_module, "resolve_kafka_access",
                        lambda *_: KafkaAccess("127.0.0.1:9", None))
    monkeypatch.setattr(connector_module, "open_fetcher", lambda *_: parts["fetcher"])
    monkeypatch.setattr(connector_module, "open_offset_store",
                        lambda *_, **_observers: parts["store"])
    monkeypatch.setattr(connector_module, "ZookeeperMembership", membership)
    return parts


@contextlib.contextmanager
def member(world, on_partitions_assigned=None, commit: bool = True, **properties):
    """A started connector and its one stream; shut down (with `commit`) when the test ends."""
    config = {"zookeeper.connect": "127.0.0.1:9", "group.id": "g", "consumer.id": "me",
              "consumer.timeout.ms": "1000", "auto.commit.interval.ms": "60000", **properties}
    connector = ConsumerConnector(config, on_partitions_assigned=on_partitions_assigned)
    try:
        (stream,) = connector.create_message_streams({TOPIC: 1})[TOPIC]
        yield connector, stream
    finally:
        connector.shutdown(commit=commit)


def assert_left_the_group(world) -> None:
    membership = world["membership"]
    wait_until(lambda: not membership.registered and not membership.owners, timeout=10,
               interval=0.01, message="the failed member to leave the group")


def test_a_raising_assigned_callback_fails_the_member_and_leaves_the_group(world):
    def refuse(_partitions):
        raise KeyError("no")

    with member(world, on_partitions_assigned=refuse) as (connector, stream):
        with pytest.raises(ZkConsumerError, match="on_partitions_assigned callback raised"):
            connector.wait_until_stable(timeout=10)
        assert_left_the_group(world)
        with pytest.raises(ZkConsumerError, match="on_partitions_assigned"):
            list(stream)


def test_an_unexpected_error_in_a_rebalance_fails_the_member_instead_of_killing_its_thread(
        world):
    with member(world) as (connector, _stream):
        assert connector.wait_until_stable(timeout=10)
        world["membership"].fail_snapshot = TypeError("a bug")
        world["membership"].on_change()
        with pytest.raises(ZkConsumerError, match="TypeError: a bug"):
            connector.wait_until_stable(timeout=10)
        assert connector.state is State.FAILED
        assert_left_the_group(world)


def test_a_fetch_failure_fails_the_member_and_leaves_the_group(world):
    with member(world) as (connector, stream):
        assert connector.wait_until_stable(timeout=10)
        world["fetcher"].fail_with = FetchError("Kafka error 29 TOPIC_AUTHORIZATION_FAILED")
        with pytest.raises(ZkConsumerError, match="TOPIC_AUTHORIZATION_FAILED"):
            for _message in stream:
                pass
        assert_left_the_group(world)


def test_an_unexpected_auto_commit_error_fails_the_member_loudly(world, monkeypatch):
    def broken_commit(*_args, **_kwargs):
        raise TypeError("a bug in the store")

    monkeypatch.setattr(world["store"], "commit", broken_commit)
    with member(world, **{"auto.commit.interval.ms": "20"}) as (connector, _stream):
        # The reset positions of the claimed partitions give the auto commit something to write.
        wait_until(lambda: connector.state is State.FAILED, timeout=10, interval=0.01,
                   message="the member to fail")
        assert_left_the_group(world)


def test_a_suspended_connection_pauses_delivery_and_commits_until_the_session_is_back(world):
    with member(world) as (connector, stream):
        assert connector.wait_until_stable(timeout=10)
        next(stream)
        next(stream)
        world["zk"].report(KazooState.SUSPENDED)
        with pytest.raises(ConsumerTimeout):
            next(stream)
        assert connector.commit_offsets() == {}, "a cut-off member committed"
        assert world["store"].commits == []
        world["zk"].report(KazooState.CONNECTED)
        message = next(stream)
        assert message.offset == 2, "a message held back while suspended was lost"
        assert connector.commit_offsets()[message_tp(message)] == 3


def test_an_expired_session_drops_every_claim_and_the_member_claims_anew(world):
    with member(world, commit=False) as (connector, stream):
        assert connector.wait_until_stable(timeout=10)
        next(stream)
        world["zk"].report(KazooState.SUSPENDED)
        world["zk"].report(KazooState.LOST)
        with pytest.raises(ConsumerTimeout):
            next(stream)  # the rest of the chunk belongs to a session that is gone
        membership = world["membership"]
        membership.registered = False  # the server dropped the session's ephemeral znodes
        membership.owners.clear()
        world["zk"].report(KazooState.CONNECTED)
        wait_until(lambda: connector.state is State.STABLE and membership.registered
                   and set(membership.owners) == {A, B}, timeout=10, interval=0.01,
                   message="registering and claiming again")
        assert next(stream).offset == 0, "nothing was committed: the reset position again"


def message_tp(message: Message) -> TopicPartition:
    return TopicPartition(message.topic, message.partition)


def test_a_shutdown_that_zookeeper_does_not_answer_ends_within_its_timeout(world):
    """As in a quorum loss: every ZooKeeper call waits. What was not done is left to the
    session's expiry rather than holding the process."""
    never = threading.Event()
    with member(world) as (connector, _stream):
        assert connector.wait_until_stable(timeout=10)
        membership = world["membership"]
        membership.release = lambda _partitions: never.wait()
        started = time.monotonic()
        connector.shutdown(timeout=1.0)
        assert time.monotonic() - started < 2.0
        assert membership.registered, "deregistered although the release never finished"
        assert connector.state is State.CLOSED

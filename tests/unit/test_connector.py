"""ConsumerConnector with injected failures: every thread's failure ends the member loudly and
leaves the group, a suspended ZooKeeper connection pauses delivery and commits, and a shutdown
while the member is still starting ends the start.

ZooKeeper and Kafka are in-memory stand-ins here; the same paths run on the real cluster in
tests/integration/test_no_loss.py and test_zookeeper_cutoff.py."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss
from kazoo.protocol.states import KazooState
from support.fake_fence import FakeFence
from support.log_capture import captured_logs
from support.memory_store import MemoryStore
from support.record_columns import fetched
from support.waiting import wait_until

from zkconsumer.errors import ZkConsumerError
from zkconsumer.fetch import FetchError
from zkconsumer.member.connector import ConsumerConnector
from zkconsumer.member.fence_decision import FenceAction, GroupMovedError
from zkconsumer.member.plan import GroupSnapshot
from zkconsumer.member.state import State
from zkconsumer.member.streams import ConsumerTimeout
from zkconsumer.model import Message, TopicPartition
from zkconsumer.offsets.store import OwnerCheck
from zkconsumer.topology import TopicMetadataError, open_topic_source
from zkconsumer.znodes.brokers import BrokerRegistration
from zkconsumer.znodes.fence import Fence, FencePhase

TOPIC = "t"
A = TopicPartition(TOPIC, 0)
B = TopicPartition(TOPIC, 1)


class FakeZooKeeper:
    """`client_id` is what kazoo has while connected; tests change it for a new session.
    While `away`, calls fail as kazoo's do during an outage, and once stopped as they do then."""

    def __init__(self) -> None:
        self.client_id: tuple[int, bytes] | None = (1, b"")
        self.listeners: list = []
        self.away = False
        self.stopped = False

    def call(self) -> None:
        if self.stopped:
            raise ConnectionClosedError()
        if self.away:
            raise ConnectionLoss()

    def add_listener(self, listener) -> None:
        self.listeners.append(listener)

    def remove_listener(self, listener) -> None:
        if listener in self.listeners:  # as kazoo's: removing one twice is no error
            self.listeners.remove(listener)

    def report(self, state: KazooState) -> None:
        for listener in list(self.listeners):
            listener(state)

    def stop(self) -> None:
        self.stopped = True
        self.client_id = None

    def close(self) -> None:
        pass


class FakeMembership:
    """The group in a dict: this member alone, subscribed to a two-partition topic."""

    def __init__(self, zk, _group, consumer_id, registration, topics, *, turn_ms=0) -> None:
        self.zk = zk
        self.topics = topics
        self.consumer_id = consumer_id
        self.registration = registration
        self.registered = False
        self.owners: dict[TopicPartition, str] = {}
        self.fail_snapshot: BaseException | None = None
        self.register_attempts = 0

    def register(self) -> None:
        self.register_attempts += 1
        self.zk.call()
        self.registered = True

    def deregister(self) -> None:
        self.registered = False

    def watch(self, on_change, topics, wildcard) -> None:
        self.on_change = on_change

    def watch_topics(self, _topics) -> None:
        pass

    def stop_waiting(self) -> None:
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

    def owner_checks(self, tokens):
        return {tp: OwnerCheck(f"/owners/{tp}", 1, 1) for tp in tokens if tp in self.owners}


class BothStorages(MemoryStore):
    """The store a fenced member carries its offsets over with: it reads what the member's
    own store has."""

    def __init__(self, own: MemoryStore) -> None:
        super().__init__("both", journal=own.journal)
        self._own = own

    def fetch(self, partitions):
        return self._own.fetch(partitions)


class FakeFetcher:
    """Every assigned partition has offsets 0..99; `fail_with` makes the next poll raise."""

    ends_polls_at_answers = False

    def __init__(self) -> None:
        self.positions: dict[TopicPartition, int] = {}
        self.fail_with: BaseException | None = None
        self.closed = False
        self._woken = threading.Event()

    def assign(self, positions, restart=()) -> None:
        self.positions = {tp: positions[tp] if tp in restart or tp not in self.positions
                          else self.positions[tp] for tp in positions}
        self.positions = {tp: 0 if offset is None else offset
                          for tp, offset in self.positions.items()}

    def poll(self, timeout_ms):
        if self.fail_with is not None:
            raise self.fail_with
        answer = {}
        for tp, offset in self.positions.items():
            if offset < 100:
                answer[tp] = fetched([Message(tp.topic, tp.partition, o, None, b"v", None)
                                      for o in range(offset, min(offset + 10, 100))])
                self.positions[tp] = answer[tp].offset_at(-1) + 1
        if not answer:
            self._woken.wait(timeout_ms / 1000.0)
            self._woken.clear()
        return answer

    def position(self, tp):
        return self.positions.get(tp)

    def high_watermark(self, tp):
        return 100 if tp in self.positions else None

    def wakeup(self) -> None:
        self._woken.set()

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def world():
    """The stand-ins a connector built in this test gets, for the test to poke at; a test may
    replace `topics` before it builds the connector."""
    store = MemoryStore()
    return {"zk": FakeZooKeeper(), "fetcher": FakeFetcher(), "store": store,
            "both": BothStorages(store), "fence": FakeFence(), "topics": None}


CONFIG = {"zookeeper.connect": "127.0.0.1:9", "group.id": "g", "consumer.id": "me",
          "consumer.timeout.ms": "1000", "auto.commit.interval.ms": "60000"}


def connector_in(world, **options) -> ConsumerConnector:
    """A connector whose clients are the world's stand-ins."""
    properties = {key: value for key, value in options.items() if "." in key}
    callbacks = {key: value for key, value in options.items() if "." not in key}
    def join_group(*args, **settings):
        world["membership"] = FakeMembership(*args, **settings)
        world["fence"].membership = world["membership"]
        return world["membership"]

    def offset_store(config, *_args, **_observers):
        return world["both"] if config.offsets_storage == "kafka" else world["store"]

    def topic_source(*args):
        return world["topics"] or open_topic_source(*args)

    return ConsumerConnector(
        {**CONFIG, **properties}, connect_zookeeper=lambda _settings: world["zk"],
        find_brokers=lambda *_: {0: BrokerRegistration(1, "127.0.0.1", 9)},
        open_fetcher=lambda *_: world["fetcher"],
        open_offset_store=offset_store, open_topic_source=topic_source, join_group=join_group,
        watch_fence=world["fence"], **callbacks)


@contextlib.contextmanager
def member(world, on_partitions_assigned=None, commit: bool = True, **properties):
    """A started connector and its one stream; shut down (with `commit`) when the test ends."""
    connector = connector_in(world, on_partitions_assigned=on_partitions_assigned, **properties)
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


def test_a_paused_auto_commit_does_not_say_that_commits_work_again(world):
    """Commits skipped while the connection is suspended wrote nothing: the auto commit that
    failed when the connection went says it works again only after a commit that did."""
    def said(event: str) -> bool:
        return any(line["event"].startswith(event) for line in logs)

    with captured_logs() as logs, \
            member(world, **{"auto.commit.interval.ms": "20"}) as (connector, stream):
        assert connector.wait_until_stable(timeout=10)
        next(stream)
        world["store"].fail_commit = True  # the commit in flight when the connection goes
        wait_until(lambda: said("auto commit failed"), timeout=10, interval=0.01,
                   message="an auto commit to fail")
        world["zk"].report(KazooState.SUSPENDED)
        world["store"].fail_commit = False
        wait_until(lambda: said("commits paused"), timeout=10, interval=0.01,
                   message="the auto commit to pause")
        time.sleep(0.2)  # ten more paused intervals, any of which could claim success
        assert not said("auto commit works again")
        world["zk"].report(KazooState.CONNECTED)
        wait_until(lambda: said("auto commit works again"), timeout=10, interval=0.01,
                   message="the auto commit to say it works again")
        events = [line["event"] for line in logs]
        assert events.index("commits resumed: the ZooKeeper session is back") \
            < events.index("auto commit works again")


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
        world["zk"].client_id = (2, b"")
        world["zk"].report(KazooState.CONNECTED)
        wait_until(lambda: connector.state is State.STABLE and membership.registered
                   and set(membership.owners) == {A, B}, timeout=10, interval=0.01,
                   message="registering and claiming again")
        assert connector.owned_partitions() == {A: "g_me-0", B: "g_me-0"}
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


# -- a shutdown while the member is still starting ----------------------------------------------

def start_in_background(connector: ConsumerConnector) -> tuple[threading.Event, list]:
    """`create_message_streams` on a thread of its own: done, and what it returned or raised."""
    done = threading.Event()
    outcome: list = []

    def start() -> None:
        try:
            outcome.append(connector.create_message_streams({TOPIC: 1}))
        except BaseException as exc:  # noqa: BLE001 - what the test looks at
            outcome.append(exc)
        finally:
            done.set()

    threading.Thread(target=start, daemon=True).start()
    return done, outcome


def assert_start_ended_by_the_shutdown(connector, done: threading.Event, outcome: list) -> None:
    began = time.monotonic()
    connector.shutdown(timeout=1.0)
    assert time.monotonic() - began < 1.5, "the shutdown waited for the start"
    assert done.wait(1.0), "the start went on after the shutdown"
    (error,) = outcome
    assert isinstance(error, ZkConsumerError), error
    assert "shut down while it was starting" in str(error)
    assert connector.state is State.CLOSED


def test_a_shutdown_while_registration_is_retried_ends_the_start_at_once(world):
    world["zk"].away = True
    connector = connector_in(world)
    done, outcome = start_in_background(connector)
    wait_until(lambda: "membership" in world and world["membership"].register_attempts >= 2,
               timeout=10, interval=0.01, message="registration to be retried")
    assert_start_ended_by_the_shutdown(connector, done, outcome)
    assert not world["membership"].registered
    assert world["fetcher"].closed and world["store"].closed
    assert world["zk"].stopped and world["zk"].listeners == []


class SilentTopics:
    """Kafka metadata from a broker that accepts connections and never answers: closing the
    source does not end a read under way (as with `KafkaTopics`)."""

    watched_in_zookeeper = False

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.answer = threading.Event()
        self.closed = False

    def view(self):
        self.asked.set()
        self.answer.wait(30)
        raise TopicMetadataError("no answer")

    def close(self) -> None:
        self.closed = True


def test_a_shutdown_while_waiting_for_the_first_topic_metadata_ends_the_start_at_once(world):
    silent = world["topics"] = SilentTopics()
    connector = connector_in(world)
    try:
        done, outcome = start_in_background(connector)
        assert silent.asked.wait(10)
        assert_start_ended_by_the_shutdown(connector, done, outcome)
        assert silent.closed and world["fetcher"].closed and world["store"].closed
        assert "membership" not in world, "it went on to join the group"
    finally:
        silent.answer.set()


def test_streams_cannot_be_created_once_shut_down(world):
    connector = connector_in(world)
    connector.shutdown()
    with pytest.raises(ZkConsumerError, match="shut down"):
        connector.create_message_streams({TOPIC: 1})
    assert not world["fetcher"].closed, "something was opened"


def test_after_a_new_session_nothing_is_delivered_nor_committed_until_registered_again(world):
    with member(world, commit=False) as (connector, stream):
        assert connector.wait_until_stable(timeout=10)
        next(stream)
        membership = world["membership"]
        registering = threading.Event()
        may_register = threading.Event()
        register = membership.register

        def held_register() -> None:
            registering.set()
            may_register.wait(10)
            register()

        membership.register = held_register
        world["zk"].report(KazooState.LOST)
        membership.registered = False
        membership.owners.clear()
        world["zk"].client_id = (2, b"")
        world["zk"].report(KazooState.CONNECTED)
        assert registering.wait(10)
        with pytest.raises(ConsumerTimeout):
            next(stream)
        assert connector.commit_offsets() == {}
        assert connector.owned_partitions() == {}
        may_register.set()
        wait_until(lambda: connector.state is State.STABLE and connector.owned_partitions(),
                   timeout=10, interval=0.01, message="claiming in the new session")
        assert next(stream).offset == 0


def test_a_fence_ends_the_streams_and_the_shutdown_carries_what_was_consumed_to_both_storages(
        world):
    with member(world) as (connector, stream):
        assert connector.wait_until_stable(timeout=10)
        handed = [next(stream) for _ in range(3)]
        world["fence"].change(Fence("kafka", FencePhase.DRAINING, 1))
        assert list(stream) == [], "nothing more is handed out once fenced"
        assert connector.moved is not None
        assert connector.moved.decision.action is FenceAction.DRAIN_AND_WAIT
        connector.shutdown()
    last = handed[-1]
    tp = TopicPartition(last.topic, last.partition)
    assert world["store"].offsets[tp] == last.offset + 1, "the message in hand was committed"
    carried = world["both"].commits[-1]
    assert carried[tp] == last.offset + 1
    assert set(carried) == set(world["store"].offsets), "every held partition carried over"
    assert world["fence"].events == [("declared", False), ("withdrawn", False)], \
        "the promise is made before registering and withdrawn after deregistering"


def test_a_fence_for_the_coordination_the_member_is_on_changes_nothing(world):
    with member(world) as (connector, stream):
        assert connector.wait_until_stable(timeout=10)
        world["fence"].change(Fence("zookeeper", FencePhase.SWITCHED, 1))
        next(stream)
        assert connector.moved is None


def test_a_member_that_exits_on_a_fence_refuses_to_start_on_a_switched_group_in_one_line(
        world):
    world["fence"].fence = Fence("kafka", FencePhase.SWITCHED, 1)
    connector = connector_in(world, **{"cutover.on.fence": "exit"})
    try:
        with pytest.raises(GroupMovedError, match="^group g is moving to kafka's coordination "
                           r"\(cutover fence switched\) and cutover.on.fence=exit: not starting$"):
            connector.create_message_streams({TOPIC: 1})
        assert world["fence"].events == [], "no promise made, nothing registered"
    finally:
        connector.shutdown()


def test_a_member_starting_on_a_switched_group_is_told_to_join_the_target(world):
    world["fence"].fence = Fence("kafka", FencePhase.SWITCHED, 1)
    connector = connector_in(world)
    try:
        with pytest.raises(GroupMovedError) as raised:
            connector.create_message_streams({TOPIC: 1})
        assert raised.value.moved.decision.join == "kafka"
        assert raised.value.moved.kafka.bootstrap_servers == "127.0.0.1:9"
    finally:
        connector.shutdown()

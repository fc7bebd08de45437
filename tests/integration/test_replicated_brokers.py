"""Replicated brokers under a live group: a rolling restart of three brokers, as an upgrade
does it (SIGTERM, a controlled shutdown) or as a crash loop does (SIGKILL), moves every
partition's leader and the group's coordinator (and so where its Kafka-stored offsets are
written and read) while members consume and commit. Nothing may be lost, no committed offset
may go back, no member may give up. The fault runner's replication faults (a leader killed or
moved, the coordinator killed, a rolling restart) are run once each, under the same promises;
the coordinator it kills must be the one Kafka names."""

from __future__ import annotations

import struct
import threading
import uuid

import pytest
from kafka import KafkaProducer
from support.fault_runner import load_runner, report_rows
from support.java import require_java
from support.kafka import committed_in_kafka, produce
from support.members import consume_until_quiet
from support.waiting import wait_until

from zkconsumer import ConsumerConnector
from zkconsumer.kafka.errors import ChannelError
from zkconsumer.kafka.io.channel import BrokerChannel
from zkconsumer.localcluster import create_topic
from zkconsumer.localcluster.topics import (
    OFFSETS_TOPIC,
    group_coordinator,
    move_leader,
    offsets_partition,
    partition_state,
    wait_until_in_sync,
)
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import KafkaOffsetStore
from zkconsumer.testing.consume_process import ConsumeProcess
from zkconsumer.zk.group_state import read_owners
from zkconsumer.zk.session import zookeeper_session

pytestmark = pytest.mark.integration

PARTITIONS = 6
MEMBERS = 3
# Kafka's GroupCoordinator request (FindCoordinator since 2.0), version 0: a group id in, an
# error code and the coordinator's broker id (then its host and port) out.
GROUP_COORDINATOR = 10
KAFKA_STORAGE = ("--property", "offsets.storage=kafka", "--property", "dual.commit.enabled=false",
                 "--property", "auto.commit.interval.ms=500")


class Producer:
    """Writes uniquely numbered messages until stopped; `acknowledged` holds those the in-sync
    replicas confirmed (acks=all), the ones no broker fault may lose."""

    def __init__(self, bootstrap_servers: str, topic: str) -> None:
        self.acknowledged: set[str] = set()
        self._stop = threading.Event()
        self._producer = KafkaProducer(bootstrap_servers=bootstrap_servers, api_version=(0, 9),
                                       acks="all", retries=10, linger_ms=5)
        self._thread = threading.Thread(target=self._run, args=(topic,), daemon=True)
        self._thread.start()

    def _run(self, topic: str) -> None:
        n = 0
        while not self._stop.wait(0.01):
            value = f"m-{n:06d}"
            try:
                self._producer.send(topic, value.encode()).get(timeout=30)
            except Exception:  # noqa: BLE001 - a leader moving: this value is sent again
                continue
            self.acknowledged.add(value)
            n += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        self._producer.close(timeout=10)


class KafkaOffsetWatch:
    """Reads the group's Kafka-stored offsets all along, noting any that went back."""

    def __init__(self, bootstrap_servers: str, group: str, topic: str) -> None:
        self.went_back: list[str] = []
        self.last: dict[TopicPartition, int] = {}
        self._partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        self._store = KafkaOffsetStore(group, bootstrap_servers, api_version=(0, 9), retries=0,
                                       request_timeout_ms=3000)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            try:
                offsets = self._store.fetch(self._partitions)
            except Exception:  # noqa: BLE001 - the coordinator is moving: read again
                continue
            for tp, offset in offsets.items():
                if offset < self.last.get(tp, -1):
                    self.went_back.append(f"{tp}: {self.last[tp]} -> {offset}")
                self.last[tp] = max(offset, self.last.get(tp, -1))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._store.close()


# Long (about 90 s): the default run's rolling restart below and the fetcher's and offset
# store's leader and coordinator moves cover these faults one by one.
@pytest.mark.long
def test_every_replication_fault_is_survived_without_loss(capsys, tmp_path):
    require_java()
    runner = load_runner()
    code = runner.main(["--brokers", "3", "--kinds", ",".join(runner.REPLICATED_FAULTS),
                        "--rounds", str(len(runner.REPLICATED_FAULTS)), "--seed", "5",
                        "--min-gap", "1", "--max-gap", "2", "--keep", str(tmp_path)])
    report = capsys.readouterr().out
    rows = report_rows(report)
    assert rows["brokers / replication"] == "3 / 3", report
    assert all(rows[f"faults: {kind}"] == "1" for kind in runner.REPLICATED_FAULTS), report
    assert int(rows["messages produced"]) > 0
    assert rows["lost"] == "0" and rows["invariant violations"] == "0", report
    assert code == 0, report


def _coordinator_named_by_kafka(bootstrap_servers: str, group: str) -> dict[str, int] | None:
    """{group: the coordinator broker a broker names for it} (a dict, as broker 0 is falsy);
    None while it names none yet (the offsets topic's partitions still loading)."""
    host, port = bootstrap_servers.split(",")[0].rsplit(":", 1)
    try:
        channel = BrokerChannel(host, int(port), client_id="zkconsumer-tests", timeout_s=10.0)
        try:
            answer = channel.request(GROUP_COORDINATOR, 0,
                                     struct.pack(">h", len(group)) + group.encode())
        finally:
            channel.close()
    except ChannelError:
        return None
    error, coordinator = struct.unpack_from(">hi", answer, 4)  # after the correlation id
    return {group: coordinator} if error == 0 else None


def test_the_group_coordinator_is_the_broker_kafka_names(replicated_cluster):
    groups = [f"coordinated-{n}" for n in range(12)]
    with zookeeper_session(replicated_cluster.zookeeper_connect) as zk:
        ours = {group: group_coordinator(zk, group) for group in groups}
    kafkas = {}
    for group in groups:
        kafkas.update(wait_until(
            lambda group=group: _coordinator_named_by_kafka(replicated_cluster.bootstrap_servers,
                                                            group),
            timeout=30, message=f"a coordinator for {group}"))
    assert kafkas == ours
    assert len(set(ours.values())) > 1, "the groups must spread over brokers to tell anything"


def test_a_kafka_coordinated_member_keeps_its_generation_when_its_coordinator_moves(
        replicated_cluster, unique_name):
    """The offsets topic's partition of the group led by another replica, as an operator or a
    0.9 controller's preferred replica election moves it: the old coordinator answers
    NOT_COORDINATOR, the new one loads the group. The member finds it and heartbeats on in
    its generation: no revocation, no JoinGroup, and with nothing committed before the move
    nothing is delivered twice (a member that joined again would start over from the
    beginning); a commit afterwards goes to the new coordinator in the same generation."""
    topic, group = unique_name("t"), unique_name("moving")
    config = {"group.id": group, "group.coordination": "kafka",
              "bootstrap.servers": replicated_cluster.bootstrap_servers,
              "kafka.api.version": "0.9", "auto.offset.reset": "smallest",
              "auto.commit.enable": "false", "consumer.timeout.ms": "1500",
              "session.timeout.ms": "10000", "heartbeat.interval.ms": "300"}
    assigned: list[dict] = []
    revoked: list[dict] = []
    with zookeeper_session(replicated_cluster.zookeeper_connect) as zk:
        create_topic(zk, topic, 2, replication_factor=3)
        wait_until_in_sync(zk)
        connector = ConsumerConnector(config, on_partitions_assigned=assigned.append,
                                      on_partitions_revoked=revoked.append)
        try:
            (stream,) = connector.create_message_streams({topic: 1})[topic]
            before = [f"before-{i:03d}".encode() for i in range(40)]
            produce(replicated_cluster, topic, before, partitions=2)
            consumed: list[bytes] = []

            def drained(count: int) -> bool:  # a pause (joining, the lease run out) ends it
                consumed.extend(consume_until_quiet(stream))
                return len(consumed) >= count

            wait_until(lambda: drained(len(before)), timeout=60, message="the first batch")
            assert sorted(consumed) == before
            # The first generation may be an empty one, given before the leader saw the topic.
            settled = (len(assigned), len(revoked))

            partition = offsets_partition(zk, group)
            state = partition_state(zk, OFFSETS_TOPIC, partition)
            target = next(b for b in state.isr if b != state.leader)
            move_leader(zk, OFFSETS_TOPIC, partition, target)
            wait_until(lambda: _coordinator_named_by_kafka(
                replicated_cluster.bootstrap_servers, group) == {group: target}, timeout=30,
                message="the group's new coordinator named")
            after = [f"after-{i:03d}".encode() for i in range(40)]
            produce(replicated_cluster, topic, after, partitions=2)
            wait_until(lambda: drained(len(before + after)), timeout=60,
                       message="the batch after the move")
            assert sorted(consumed) == sorted(before + after), "a message delivered twice or lost"
            assert (len(assigned), len(revoked)) == settled, (assigned, revoked)
            connector.commit_offsets()
            assert committed_in_kafka(replicated_cluster, group, topic, 2) == {0: 40, 1: 40}
        finally:
            connector.shutdown()


# Among the long runs (`scripts/test -m long`), with the fault runner's broker-rolling rounds;
# the default run follows moved leaders and a moved coordinator one at a time instead.
@pytest.mark.long
@pytest.mark.parametrize("graceful", [True, False], ids=["sigterm", "sigkill"])
def test_a_rolling_restart_of_three_brokers_loses_nothing_with_offsets_in_kafka(
        replicated_cluster, tmp_path, graceful):
    topic, group = f"rolling-{uuid.uuid4().hex[:6]}", f"rolling-{uuid.uuid4().hex[:6]}"
    connect = replicated_cluster.zookeeper_connect
    with zookeeper_session(connect) as zk:
        create_topic(zk, topic, PARTITIONS, replication_factor=3)
    producer = Producer(replicated_cluster.bootstrap_servers, topic)
    watch = KafkaOffsetWatch(replicated_cluster.bootstrap_servers, group, topic)
    members = [ConsumeProcess(connect, group, topic, tmp_path, f"member-{i}", *KAFKA_STORAGE)
               for i in range(MEMBERS)]
    try:
        with zookeeper_session(connect) as zk:
            wait_until(lambda: len(read_owners(zk, group)) == PARTITIONS, timeout=60,
                       message="every partition owned")
        wait_until(lambda: len(watch.last) == PARTITIONS, timeout=60,
                   message="an offset committed to Kafka for every partition")

        replicated_cluster.local.rolling_restart(graceful=graceful)
        after_restart = len(producer.acknowledged)
        wait_until(lambda: len(producer.acknowledged) >= after_restart + 200, timeout=60,
                   message="messages acknowledged after the rolling restart")
        producer.stop()

        def consumed() -> set[str]:
            return {r["value"] for m in members for r in m.records()}

        wait_until(lambda: producer.acknowledged <= consumed(), timeout=90,
                   message="every acknowledged message consumed")
        exited = {m.name: m.log_tail(3) for m in members if m.process.poll() is not None}
        assert not exited, exited
        assert [m.terminate(timeout=60) for m in members] == [0] * MEMBERS
        last_delivered: dict[TopicPartition, int] = {}
        for record in (r for m in members for r in m.records()):
            tp = TopicPartition(topic, record["partition"])
            last_delivered[tp] = max(record["offset"] + 1, last_delivered.get(tp, 0))
        wait_until(lambda: watch.last == last_delivered, timeout=30,
                   message=f"Kafka-committed offsets {watch.last} to reach {last_delivered}")
        assert not watch.went_back
    finally:
        producer.stop()
        watch.stop()
        for member in members:
            member.stop()

"""Members honouring the cutover fence, against the real ZooKeeper and 0.9.0.1 broker.

From ZooKeeper to Kafka, the members' side of the contract is tested alone first: each test
writes the fence itself and checks what the command would (the old coordination empty, every
offset carried over) before it moves the fence on; the members stop delivering, carry their
offsets to both storages, leave, and then follow the group, exit, refuse to start, or go back,
as the fence and `cutover.on.fence` say. Then the whole move, end to end: three workers under
steady producing moved by the real command, which waits for them and reports what it saw, and a
plain kafka-python member sharing the group with them afterwards.

The way back is tested end to end: Kafka-coordinated workers with `zookeeper.connect` moved by
the real command (run as an operator runs it, in a process of its own) and then a reference
Scala member resuming where they committed; and the command refusing while Kafka members that
cannot honour the fence are in the group.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.coordinator.assignors.range import RangePartitionAssignor
from support.coordinator_members import PollingMember
from support.kafka import committed_in_kafka, log_positions, produce, steady_producer
from support.legacy_groups import kafka_version_args
from support.sessions import expire_session
from support.waiting import wait_until

from zkconsumer.assignment import consumer_of_thread
from zkconsumer.assignment.group_assignors import range_assign
from zkconsumer.fetch.brokers import KafkaAccess
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.coordinator_groups import read_coordinator_group
from zkconsumer.offsets.kafka_reader import (
    KAFKA_ERRORS,
    GroupOffsetsReader,
    is_transient_kafka_error,
)
from zkconsumer.offsets.zookeeper_store import ZookeeperOffsetStore
from zkconsumer.testing import delivery_log
from zkconsumer.testing.consume_process import ConsumeProcess
from zkconsumer.testing.delivery_overlap import overlaps
from zkconsumer.zk.group_state import read_owners
from zkconsumer.znodes.fence import Fence, FencePhase, marked_consumer_id
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration

PARTITIONS = 4
# Both coordinations' sessions: 6 s is the shortest a 0.9 broker takes
# (group.min.session.timeout.ms), and on 0.9 it is the rebalance timeout as well.
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 1000
STINT_GAP_S = 0.3
OVERLAP_TOLERANCE_S = 0.1


@pytest.fixture
def workers(cluster, tmp_path):
    """Start `zkconsumer consume` workers that log each delivery's time; killed at the end."""
    started: list[ConsumeProcess] = []

    def start(group: str, topic: str, name: str, *properties: str,
              zookeeper: bool = True) -> ConsumeProcess:
        """`zookeeper` False: no `--zookeeper` (a member on Kafka's coordinator alone)."""
        settings = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                    "session.timeout.ms": str(SESSION_TIMEOUT_MS),
                    "heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS),
                    "auto.commit.interval.ms": "200", "rebalance.backoff.ms": "500"}
        if cluster.kafka_api_version:
            settings["kafka.api.version"] = ".".join(map(str, cluster.kafka_api_version))
        worker = ConsumeProcess(
            cluster.zookeeper_connect if zookeeper else None, group, topic, tmp_path, name,
            *(f"--property={key}={value}" for key, value in settings.items()), *properties,
            "--handler", "zkconsumer.testing.delivery_log:record",
            environment={delivery_log.ENVIRONMENT_VARIABLE: str(tmp_path / f"{name}.times")})
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def deliveries(worker: ConsumeProcess) -> list[tuple[int, int, float]]:
    return delivery_log.read_delivery_times(worker.output.with_suffix(".times"))


def write_fence(zk, group: str, phase: str, to: str = "kafka") -> None:
    path = GroupPaths(group).fence
    data = Fence(to, phase, int(time.time() * 1000)).encode()
    if zk.exists(path):
        zk.set(path, data)
    else:
        zk.create(path, data, makepath=True)


def registered(zk, group: str) -> list[str]:
    return zk.get_children(GroupPaths(group).ids) if zk.exists(GroupPaths(group).ids) else []


def drained(zk, group: str) -> None:
    """What the command waits for: no member left in ZooKeeper, nor a fence-aware znode."""
    paths = GroupPaths(group)
    wait_until(lambda: not registered(zk, group) and not (
        zk.exists(paths.fence_aware) and zk.get_children(paths.fence_aware)),
        timeout=30, message="every ZooKeeper member gone")


def carried_over(cluster, zk, group: str, topic: str) -> dict[int, int]:
    """What the command checks before it says `switched`: Kafka has every offset ZooKeeper
    has, or a later one (here the members carried them; nothing is copied)."""
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    in_zookeeper = {tp.partition: offset for tp, offset in
                    ZookeeperOffsetStore(zk, group).fetch(partitions).items()}
    in_kafka = committed_in_kafka(cluster, group, topic, PARTITIONS)
    assert in_zookeeper, "the members committed nothing to ZooKeeper"
    behind = {p: (offset, in_kafka.get(p)) for p, offset in in_zookeeper.items()
              if in_kafka.get(p) is None or in_kafka[p] < offset}
    assert behind == {}, f"offsets not carried to Kafka (zookeeper, kafka): {behind}"
    return in_zookeeper


def described(cluster, group: str):
    """The group as Kafka's coordinator describes it (None: it does not know it)."""
    reader = GroupOffsetsReader(KafkaAccess(cluster.bootstrap_servers, cluster.kafka_api_version),
                                {}, 5000)
    try:
        return read_coordinator_group(reader, group)
    finally:
        reader.close()


def coordinator_members(cluster, group: str) -> int:
    """Members of the group on Kafka's coordinator, once Stable; 0 before (or before the
    cluster's first group made the offsets topic that gives groups a coordinator)."""
    try:
        group_now = described(cluster, group)
    except KAFKA_ERRORS as exc:  # no coordinator yet, or one loading or moving
        if not is_transient_kafka_error(exc):
            raise
        return 0
    return 0 if group_now is None or group_now.state != "Stable" else len(group_now.members)


def more_produced(produced: list[bytes], count: int = 40) -> None:
    """Inside the producing block, once the group switched: more for the workers to deliver."""
    switched_at = len(produced)
    wait_until(lambda: len(produced) > switched_at + count, timeout=30,
               message="more produced after the switch")


def followed_with_nothing_lost_and_no_overlap(produced: list[bytes],
                                              workers: tuple[ConsumeProcess, ...]) -> None:
    """Every message produced delivered by one worker or another, each still in the process it
    started in, having drained and joined the new coordination, and no partition delivered by
    two at once."""
    everything = {value.decode() for value in produced}

    def consumed() -> set[str]:
        return {record["value"] for worker in workers for record in worker.records()}

    wait_until(lambda: consumed() >= everything, timeout=60,
               message="every message produced delivered by one worker or another")
    for worker in workers:
        assert worker.process.poll() is None, f"{worker.name} went on in the same process"
        assert worker.log_events("fenced"), worker.log_tail()
        assert worker.log_events("drained: committed to both offset storages")
        assert worker.log_events("joined the group through its new coordination")
    found = overlaps({worker.name: deliveries(worker) for worker in workers}, STINT_GAP_S,
                     OVERLAP_TOLERANCE_S)
    assert found == [], found


def test_two_workers_follow_their_group_from_zookeeper_to_kafkas_coordinator(
        cluster, zk, topic_factory, unique_name, workers):
    topic = topic_factory(partitions=PARTITIONS)
    group = unique_name("cutover")
    first, second = workers(group, topic, "first"), workers(group, topic, "second")
    wait_until(lambda: len(registered(zk, group)) == 2 and first.has_rebalanced()
               and second.has_rebalanced(), timeout=60, message="both workers in the group")
    with steady_producer(cluster, topic, PARTITIONS) as produced:
        wait_until(lambda: len(deliveries(first)) > 10 and len(deliveries(second)) > 10,
                   timeout=30, message="both workers delivering")
        write_fence(zk, group, FencePhase.DRAINING)
        drained(zk, group)
        carried_over(cluster, zk, group, topic)
        write_fence(zk, group, FencePhase.SWITCHED)
        wait_until(lambda: coordinator_members(cluster, group) == 2, timeout=60,
                   message="both workers in the group on Kafka's coordinator")
        more_produced(produced)
    followed_with_nothing_lost_and_no_overlap(produced, (first, second))
    for worker in (first, second):
        assert any(line.get("coordinator") == "kafka" for line in worker.log_events("rebalanced"))


def test_a_worker_that_exits_on_the_fence_ends_cleanly_having_carried_its_offsets(
        cluster, zk, topic_factory, unique_name, workers):
    topic = topic_factory(partitions=PARTITIONS)
    group = unique_name("cutover-exit")
    worker = workers(group, topic, "leaving", "--property=cutover.on.fence=exit")
    wait_until(worker.has_rebalanced, timeout=60, message="the worker in the group")
    with steady_producer(cluster, topic, PARTITIONS):
        wait_until(lambda: len(deliveries(worker)) > 10, timeout=30,
                   message="the worker delivering")
        write_fence(zk, group, FencePhase.DRAINING)
        assert worker.process.wait(timeout=30) == 0, worker.log_tail()
    last = {}
    for partition, offset, _at in deliveries(worker):
        last[partition] = max(offset, last.get(partition, -1))
    committed = committed_in_kafka(cluster, group, topic, PARTITIONS)
    assert committed == {p: offset + 1 for p, offset in last.items()}
    assert worker.log_events("left the group for its cutover; exiting (cutover.on.fence=exit)")
    assert registered(zk, group) == []


def test_a_late_starter_on_a_switched_group_joins_through_kafka_or_refuses_in_one_line(
        cluster, zk, topic_factory, unique_name, workers):
    topic = topic_factory(partitions=1)
    group = unique_name("cutover-late")
    write_fence(zk, group, FencePhase.SWITCHED)
    refusing = workers(group, topic, "refusing", "--property=cutover.on.fence=exit")
    assert refusing.process.wait(timeout=30) == 1
    error = refusing.log.read_text().strip().splitlines()[-1]
    assert error == (f"error: group {group} is moving to kafka's coordination (cutover fence "
                     "switched) and cutover.on.fence=exit: not starting"), error
    joining = workers(group, topic, "joining")
    wait_until(lambda: any(line.get("coordinator") == "kafka"
                           for line in joining.log_events("rebalanced")),
               timeout=60, message=f"the late starter on Kafka's coordinator: {joining.log_tail()}")
    assert registered(zk, group) == [], "it never registered in ZooKeeper"
    assert coordinator_members(cluster, group) == 1


def test_a_member_whose_session_expired_promises_again_before_it_registers_again(
        cluster, zk, topic_factory, unique_name, members):
    """Its fence-aware znode is ephemeral, gone with the session: a member registered again
    without it would be one the command refuses to fence (found by the fault runner's cutover
    after an `expire` round)."""
    topic = topic_factory(partitions=2)
    produce(cluster, topic, [b"m-%02d" % i for i in range(8)], partitions=2)
    group = unique_name("cutover-expired")
    member = members(group, topics={topic: 1}, **{"auto.commit.interval.ms": "200"})
    wait_until(lambda: len(member.values()) == 8 and fence_aware(zk, group) ==
               registered(zk, group) == [member.consumer_id], timeout=60,
               message="the member consuming, registered and fence-aware")
    lost = member.connector.zookeeper_session

    expire_session(cluster.zookeeper_connect, lost)

    def promised_again() -> bool:
        session = member.connector.zookeeper_session  # None while it has none
        promise = zk.exists(GroupPaths(group).fence_aware_member(member.consumer_id))
        return session is not None and session[0] != lost[0] and promise is not None and \
            promise.ephemeralOwner == session[0] and registered(zk, group) == [member.consumer_id]
    wait_until(promised_again, timeout=60,
               message="the member registered again in a new session, with its promise")
    dry_run = run_cutover(cluster, group, "--to", "kafka", "--json")
    assert dry_run.returncode == 0, dry_run.stderr
    assert json.loads(dry_run.stdout)["next_step"] == "write the fence (draining to kafka)"


def test_a_fence_removed_while_draining_sends_the_worker_back_to_zookeeper(
        cluster, zk, topic_factory, unique_name, workers):
    topic = topic_factory(partitions=1)
    group = unique_name("cutover-rollback")
    worker = workers(group, topic, "back")
    wait_until(worker.has_rebalanced, timeout=60, message="the worker in the group")
    write_fence(zk, group, FencePhase.DRAINING)
    drained(zk, group)
    zk.delete(GroupPaths(group).fence)
    wait_until(lambda: len(registered(zk, group)) == 1 and len(worker.log_events("registered"))
               == 2, timeout=60, message=f"the worker registered again: {worker.log_tail()}")
    assert worker.log_events("the group's cutover was rolled back; rejoining")
    assert worker.process.poll() is None


# -- ZooKeeper to Kafka's coordinator, by the command, end to end -------------------------------

LIVE_PARTITIONS = 6
LIVE_WORKERS = 3
# The longest pause the command may report for a partition: from its ZooKeeper owner letting
# go to its assignment in a Stable group on Kafka's coordinator. Within it: the other workers
# draining (in parallel, a commit each way), the command seeing ZooKeeper empty (polled every
# 0.25 s), copying the offsets and reading them back, the workers seeing the fence switched (a
# watch) and finding the coordinator, together well under 4 s on one machine; and one
# rebalance. A 0.9 coordinator ends a rebalance once every member it knows has rejoined (each
# learns of it at its next heartbeat), at the latest after the rebalance timeout, which on 0.9
# is the session timeout: workers joining one after another cost one rebalance, not one each,
# as each joins while the one the first began is still open.
PAUSE_BOUND_MS = SESSION_TIMEOUT_MS + 4000
KAFKA_PYTHON_CLIENT = "kafka-python-member"


def stable_on_kafka(cluster, group: str, members: int) -> bool:
    """The coordinator describes the group Stable with `members` members and every partition
    assigned to exactly one of them."""
    group_now = described(cluster, group)
    if group_now is None or group_now.state != "Stable" or len(group_now.members) != members:
        return False
    assigned = [tp.partition for member in group_now.members for tp in member.assigned]
    return sorted(assigned) == list(range(LIVE_PARTITIONS))


def test_three_live_workers_are_moved_to_kafkas_coordinator_by_the_command(
        cluster, zk, topic_factory, unique_name, workers):
    topic = topic_factory(partitions=LIVE_PARTITIONS)
    group = unique_name("cutover-live")
    moving = tuple(workers(group, topic, f"worker-{n}") for n in range(LIVE_WORKERS))

    def every_worker_owns_a_share() -> bool:
        owners = read_owners(zk, group)
        return len(owners) == LIVE_PARTITIONS and {consumer_of_thread(thread) for thread in
                                                   owners.values()} == \
            {worker.consumer_id() for worker in moving}

    wait_until(every_worker_owns_a_share, timeout=60,
               message="three workers sharing the partitions on ZooKeeper")
    with steady_producer(cluster, topic, LIVE_PARTITIONS) as produced:
        wait_until(lambda: all(len(deliveries(worker)) > 5 for worker in moving), timeout=30,
                   message="every worker delivering")

        done = run_cutover(cluster, group, "--to", "kafka", "--execute", "--json")

        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["outcome"] == "switched", report
        assert report["members_moved"] == sorted(worker.consumer_id() for worker in moving)
        assert (report["partitions"], report["offsets_verified"]) == \
            (LIVE_PARTITIONS, LIVE_PARTITIONS)
        assert sorted(p["partition"] for p in report["pauses"]) == list(range(LIVE_PARTITIONS))
        assert all(p["since"] == "owner released" for p in report["pauses"]), report["pauses"]
        assert max(p["pause_ms"] for p in report["pauses"]) <= PAUSE_BOUND_MS, report["pauses"]
        # The command waited for every moved worker to join, not only for the first of them
        # (whom the coordinator gives every partition, in a group Stable until the next one).
        assert stable_on_kafka(cluster, group, LIVE_WORKERS), described(cluster, group)
        more_produced(produced)
    assert read_owners(zk, group) == {} and registered(zk, group) == []
    followed_with_nothing_lost_and_no_overlap(produced, moving)

    assert moving[0].terminate() == 0, moving[0].log_tail()
    resumes_at_the_committed_offsets(cluster, group, topic, moving[1:])


def resumes_at_the_committed_offsets(cluster, group: str, topic: str,
                                     others: tuple[ConsumeProcess, ...]) -> None:
    """A kafka-python member (range assignor) joins the group beside `others`: it is given the
    share Java's RangeAssignor gives it among the members, and resumes each of its partitions
    at the group's committed offset."""
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers, group_id=group,
        client_id=KAFKA_PYTHON_CLIENT, enable_auto_commit=False, auto_offset_reset="latest",
        session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        partition_assignment_strategy=[RangePartitionAssignor],
        **({"api_version": cluster.kafka_api_version} if cluster.kafka_api_version else {}))
    first: dict[int, int] = {}

    def poll() -> None:
        for records in consumer.poll(200).values():
            for record in records:
                first.setdefault(record.partition, record.offset)

    try:
        consumer.subscribe([topic])

        def joined() -> bool:
            poll()
            return bool(consumer.assignment()) and stable_on_kafka(cluster, group,
                                                                   len(others) + 1)
        wait_until(joined, timeout=30, message="the kafka-python member in the Stable group")
        members = described(cluster, group).members
        [mine] = [member for member in members if member.client_id == KAFKA_PYTHON_CLIENT]
        share = range_assign({member.member_id: [topic] for member in members},
                             {topic: LIVE_PARTITIONS})[mine.member_id]
        assigned = sorted(tp.partition for tp in consumer.assignment())
        assert assigned == [tp.partition for tp in share] == \
            sorted(tp.partition for tp in mine.assigned)
        committed = committed_in_kafka(cluster, group, topic, LIVE_PARTITIONS)
        produce(cluster, topic, [b"after-%02d" % n for n in range(2 * LIVE_PARTITIONS)],
                LIVE_PARTITIONS)

        def a_record_of_each() -> bool:
            poll()
            return set(first) >= set(assigned)
        wait_until(a_record_of_each, timeout=30, message="a record of each of its partitions")
        assert {p: first[p] for p in assigned} == {p: committed[p] for p in assigned}
        assert all(consumer.committed(KafkaTopicPartition(topic, p)) == committed[p]
                   for p in assigned), "it committed nothing"
    finally:
        consumer.close(autocommit=False)
    assert all(worker.process.poll() is None for worker in others)


# -- the way back: Kafka's coordinator to ZooKeeper, by the command ------------------------------

def on_kafka(cluster) -> tuple[str, ...]:
    """A worker's options for Kafka's coordinator; with the fixture's `--zookeeper`, it
    watches the fence."""
    return (f"--bootstrap-server={cluster.bootstrap_servers}",
            "--property=group.coordination=kafka")


def run_cutover(cluster, group: str, *args: str) -> subprocess.CompletedProcess:
    """`zkconsumer group cutover` as an operator runs it, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "zkconsumer", "group", "cutover", "--group", group, *args,
         "--zookeeper", cluster.zookeeper_connect, *kafka_version_args(cluster)],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, check=False)


def fence_aware(zk, group: str) -> list[str]:
    path = GroupPaths(group).fence_aware
    return sorted(zk.get_children(path)) if zk.exists(path) else []


def zookeeper_offsets_of(zk, group: str, topic: str) -> dict[int, int]:
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    return {tp.partition: offset for tp, offset in
            ZookeeperOffsetStore(zk, group).fetch(partitions).items()}


def printed_by(reference, positions: dict[bytes, tuple[int, int]]) -> list[tuple[int, int]]:
    """(partition, offset) of each message the reference console consumer printed, in order."""
    lines = Path(reference.output).read_bytes().splitlines()
    return [positions[line] for line in lines if line in positions]


@pytest.mark.reference
def test_two_kafka_workers_follow_their_group_back_to_zookeeper_where_a_reference_resumes(
        cluster, zk, topic_factory, unique_name, workers, reference_consumers):
    topic = topic_factory(partitions=PARTITIONS)
    group = unique_name("cutover-back")
    first = workers(group, topic, "first", *on_kafka(cluster))
    second = workers(group, topic, "second", *on_kafka(cluster))
    wait_until(lambda: coordinator_members(cluster, group) == 2 and first.has_rebalanced()
               and second.has_rebalanced(), timeout=60,
               message="both workers in the group on Kafka's coordinator")
    promised = fence_aware(zk, group)
    assert len(promised) == 2 and registered(zk, group) == []
    assert sorted(marked_consumer_id(m.user_data) for m in described(cluster, group).members) \
        == promised, "each JoinGroup marked with the member's fence-aware znode"

    with steady_producer(cluster, topic, PARTITIONS) as produced:
        wait_until(lambda: len(deliveries(first)) > 10 and len(deliveries(second)) > 10,
                   timeout=30, message="both workers delivering")
        done = run_cutover(cluster, group, "--to", "zookeeper", "--execute", "--json")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert (report["outcome"], report["members_moved"]) == ("switched", promised)
        assert [(row["partition"], row["current"] is not None) for row in report["rows"]] == \
            [(p, True) for p in range(PARTITIONS)], \
            f"the drained members wrote ZooKeeper's offsets before the command: {report}"
        wait_until(lambda: len(registered(zk, group)) == 2, timeout=60,
                   message="both workers registered in ZooKeeper")
        more_produced(produced)
    followed_with_nothing_lost_and_no_overlap(produced, (first, second))
    assert sorted(registered(zk, group)) == sorted(w.consumer_id() for w in (first, second))
    assert described(cluster, group) is None or described(cluster, group).members == ()

    for worker in (first, second):
        assert worker.terminate() == 0, worker.log_tail()
    in_zookeeper = zookeeper_offsets_of(zk, group, topic)
    in_kafka = committed_in_kafka(cluster, group, topic, PARTITIONS)
    assert sorted(in_zookeeper) == list(range(PARTITIONS))
    behind = {p: (in_zookeeper[p], in_kafka[p]) for p in in_zookeeper
              if in_kafka[p] is not None and in_zookeeper[p] < in_kafka[p]}
    assert behind == {}, f"ZooKeeper behind Kafka (zookeeper, kafka): {behind}"

    # A reference Scala member of G resumes exactly at the ZooKeeper offsets.
    produce(cluster, topic, [b"after-%03d" % i for i in range(4 * PARTITIONS)], PARTITIONS)
    positions = log_positions(cluster, topic, PARTITIONS)
    owed = sorted(at for at in positions.values() if at[1] >= in_zookeeper[at[0]])
    reference = reference_consumers(group, topic=topic)
    wait_until(lambda: len(printed_by(reference, positions)) >= len(owed), timeout=90,
               message=f"the reference member printing the {len(owed)} messages owed")
    printed = printed_by(reference, positions)
    assert sorted(printed) == owed, "the reference skipped or repeated messages"
    first_printed = {}
    for partition, offset in printed:
        first_printed.setdefault(partition, offset)
    assert first_printed == in_zookeeper


def test_the_way_back_is_refused_while_kafka_members_cannot_honour_the_fence(
        cluster, zk, topic_factory, unique_name, workers):
    """A kafka-python consumer and a zkconsumer member without zookeeper.connect: neither marks
    its subscription, so the command names both and writes nothing."""
    topic = topic_factory(partitions=2)
    produce(cluster, topic, [b"m-%02d" % i for i in range(20)], partitions=2)
    group = unique_name("cutover-unmarked")
    ours = workers(group, topic, "no-zookeeper", *on_kafka(cluster), zookeeper=False)
    wait_until(lambda: committed_in_kafka(cluster, group, topic, 2) == {0: 10, 1: 10},
               timeout=60, message=f"the zkconsumer member's commits: {ours.log_tail()}")
    theirs = PollingMember(cluster, group, topic, "kafka-python-member")
    try:
        wait_until(lambda: coordinator_members(cluster, group) == 2, timeout=60,
                   message="both members in the group on Kafka's coordinator")
        names = sorted(f"{m.member_id} ({m.client_host})"
                       for m in described(cluster, group).members)

        refused = run_cutover(cluster, group, "--to", "zookeeper", "--execute")

        assert refused.returncode == 1 and refused.stdout == ""
        [line] = refused.stderr.splitlines()
        assert re.fullmatch(
            rf"error: 2 member\(s\) of group {group} on Kafka's group coordinator cannot honour "
            rf"the fence: (?P<named>.+); stop them .*; nothing was written", line), line
        assert sorted(line.split(" cannot honour the fence: ")[1].split("; ")[0]
                      .split(", ")) == names
        assert zk.exists(GroupPaths(group).root) is None, "nothing written in ZooKeeper"
        assert ours.process.poll() is None
    finally:
        theirs.close()

"""A member coordinated by Kafka's group coordinator (`group.coordination=kafka`, no ZooKeeper)
and a kafka-python consumer in one group on the fixture's 0.9 broker: they split the topic as
Java's RangeAssignor does, every message is consumed once by one of them, and the member's
rebalance and its clean stop commit (in the generation that ends) and its stop leaves the
group, so the other member is given partitions at once and resumes each from the offsets the
member committed. The 0.9 bundle's own consumer-groups tool describes such a group: every
partition with its owner and committed offset."""

from __future__ import annotations

import collections
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from kafka.coordinator.assignors.range import RangePartitionAssignor
from support.coordinator_members import PollingMember
from support.kafka import produce
from support.members import consume_until_quiet
from support.tansu import produce as produce_modern
from support.waiting import wait_until

from zkconsumer import ConsumerConnector, TopicPartition, Whitelist
from zkconsumer.cli import cli
from zkconsumer.errors import ZkConsumerError
from zkconsumer.member.kafka_group import KafkaGroup
from zkconsumer.member.state import State
from zkconsumer.testing.consume_process import ConsumeProcess
from zkconsumer.testing.reference import run_tool

pytestmark = pytest.mark.integration

PARTITIONS = 4
SESSION_MS = 10000
# Member ids begin with the client id, so these order the two members: kafka-python first.
THEIR_CLIENT_ID, OUR_CLIENT_ID = "a-kafka-python", "zk-member"


def _config(cluster, group: str) -> dict[str, str]:
    config = {"group.id": group, "group.coordination": "kafka",
              "bootstrap.servers": cluster.bootstrap_servers, "client.id": OUR_CLIENT_ID,
              "auto.offset.reset": "smallest", "consumer.timeout.ms": "1500",
              "session.timeout.ms": str(SESSION_MS), "heartbeat.interval.ms": "300"}
    if cluster.kafka_api_version:
        config["kafka.api.version"] = ".".join(map(str, cluster.kafka_api_version))
    return config


def _values(n: int, prefix: str) -> list[bytes]:
    return [f"{prefix}-{i:04d}".encode() for i in range(n)]


def test_a_kafka_coordinated_member_shares_a_group_with_kafka_python(
        cluster, topic_factory, unique_name):
    topic = topic_factory(partitions=PARTITIONS)
    group = unique_name("kafka-coordinated")
    ours: list[bytes] = []
    theirs = None
    connector = ConsumerConnector(_config(cluster, group))
    try:
        assert isinstance(connector._coordination, KafkaGroup)
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        everything = {TopicPartition(topic, p) for p in range(PARTITIONS)}
        wait_until(lambda: set(connector.owned_partitions()) == everything, timeout=30,
                   message="the member to own every partition alone")
        alone = _values(80, "alone")
        produce(cluster, topic, alone, partitions=PARTITIONS)
        ours += consume_until_quiet(stream)
        assert sorted(ours) == alone

        theirs = PollingMember(cluster, group, topic, THEIR_CLIENT_ID,
                               auto_offset_reset="earliest")
        # Java's RangeAssignor over the sorted member ids: kafka-python's first. Its partitions
        # resume from the member's parting commit (auto commit has not run yet).
        wait_until(lambda: set(connector.owned_partitions()) == {
            TopicPartition(topic, 2), TopicPartition(topic, 3)} and theirs.owns({0, 1}),
            timeout=30, message="the two members to split the partitions by range")
        assert connector.wait_until_stable(timeout=10)

        shared = _values(200, "shared")
        produce(cluster, topic, shared, partitions=PARTITIONS)
        ours += consume_until_quiet(stream)
        wait_until(lambda: len(ours) + len(theirs.values) >= len(alone) + len(shared),
                   timeout=30, message="every message to be consumed")
        assert len(ours) == len(alone) + len(shared) // 2  # produced round-robin

        started = time.monotonic()
        connector.shutdown()
        wait_until(lambda: theirs.owns({0, 1, 2, 3}), timeout=SESSION_MS / 1000.0,
                   message="kafka-python to own every partition after the LeaveGroup")
        # A LeaveGroup, not the session's end, moved the partitions.
        assert time.monotonic() - started < SESSION_MS / 1000.0 - 2

        after = _values(40, "after")
        produce(cluster, topic, after, partitions=PARTITIONS)
        wait_until(lambda: len(ours) + len(theirs.values) >= len(alone + shared + after),
                   timeout=30, message="kafka-python to consume the last batch")
        # Nothing lost and nothing twice: kafka-python resumed every partition from the
        # member's commits, the parting one and the final one.
        assert collections.Counter(ours + theirs.values) == collections.Counter(
            alone + shared + after)
    finally:
        connector.shutdown()
        if theirs is not None:
            theirs.close()


def test_a_whitelist_follows_topics_as_they_are_created(cluster, topic_factory, unique_name):
    """A wildcard subscription on Kafka's coordinator: the topics the whitelist allows now,
    then a matching topic created while the member runs (it joins again with it within a
    metadata refresh); a topic the whitelist does not allow is never consumed. Each topic's
    partitions are spread over both streams."""
    prefix = unique_name("wild")
    first = topic_factory(partitions=2, name=f"{prefix}-a")
    other = topic_factory(partitions=1, name=f"{prefix}-other-x")
    config = {**_config(cluster, prefix), "topic.metadata.refresh.interval.ms": "500",
              "consumer.timeout.ms": "30000"}
    with ConsumerConnector(config) as connector:
        streams = connector.create_message_streams_by_filter(
            Whitelist(f"{prefix}-[a-z]"), num_streams=2)
        wait_until(lambda: len(connector.owned_partitions()) == 2, timeout=30,
                   message="the first topic's partitions")
        assert sorted(connector.owned_partitions().values()) == [
            f"{connector.consumer_id}-0", f"{connector.consumer_id}-1"]
        later = topic_factory(partitions=2, name=f"{prefix}-b")
        wait_until(lambda: {tp.topic for tp in connector.owned_partitions()} == {first, later},
                   timeout=30, message="the topic created later, once matched")
        produce(cluster, first, _values(10, "first"), partitions=2)
        produce(cluster, later, _values(10, "later"), partitions=2)
        produce(cluster, other, _values(5, "other"), partitions=1)
        got: list[bytes] = []
        for stream in streams:
            for _ in range(10):
                got.append(next(stream).value)
        assert sorted(got) == sorted(_values(10, "first") + _values(10, "later"))
        assert other not in {tp.topic for tp in connector.owned_partitions()}


def test_a_sigkilled_member_s_partitions_go_to_kafka_python_and_nothing_is_lost(
        cluster, topic_factory, unique_name, tmp_path):
    """A `zkconsumer consume` worker on Kafka's coordinator and a kafka-python member split
    the topic by range; the worker is SIGKILLed: after its session the other owns everything
    and resumes from the worker's commits (what the worker delivered since may come again)."""
    topic = topic_factory(partitions=PARTITIONS)
    group = unique_name("sigkilled")
    properties = {key: value for key, value in _config(cluster, group).items()
                  if key not in ("group.id", "consumer.timeout.ms")}
    properties.update({"session.timeout.ms": "6000", "auto.commit.interval.ms": "200"})
    worker = ConsumeProcess(None, group, topic, tmp_path, "worker",
                            *(f"--property={key}={value}" for key, value in properties.items()))
    theirs = None
    try:
        wait_until(worker.has_rebalanced, timeout=30, message="the worker's first assignment")
        theirs = PollingMember(cluster, group, topic, THEIR_CLIENT_ID,
                               auto_offset_reset="earliest")
        wait_until(lambda: theirs.owns({0, 1}), timeout=30,
                   message="kafka-python's range share beside the worker")
        before = _values(200, "before")
        produce(cluster, topic, before, partitions=PARTITIONS)
        wait_until(lambda: len(worker.records()) + len(theirs.values) >= len(before),
                   timeout=30, message="the first batch consumed")
        time.sleep(0.5)  # an auto commit (every 200 ms) covers what the worker delivered
        worker.kill()
        killed = time.monotonic()
        wait_until(lambda: theirs.owns({0, 1, 2, 3}), timeout=30,
                   message="kafka-python to own every partition after the worker's session")
        assert time.monotonic() - killed > 3, worker.log_tail()
        after = _values(80, "after")
        produce(cluster, topic, after, partitions=PARTITIONS)
        everything = set(before + after)

        def consumed() -> set[bytes]:
            return {r["value"].encode() for r in worker.records()} | set(theirs.values)
        wait_until(lambda: consumed() >= everything, timeout=30,
                   message="every message consumed by one member or the other")
    finally:
        worker.stop()
        if theirs is not None:
            theirs.close()


def test_the_revocation_callback_runs_before_the_member_joins_the_next_generation(
        cluster, topic_factory, unique_name):
    """As the Java consumer calls its listener: the member is told of the revocation when it
    learns that its generation passed, and only then joins again; so a slow callback holds the
    next generation, and kafka-python's assignment in it, until the callback returned."""
    topic = topic_factory(partitions=2)
    group = unique_name("revoked-first")
    calls: list[tuple[str, float, set]] = []

    def revoked(partitions):
        calls.append(("revoked", time.monotonic(), set(partitions)))
        time.sleep(2.0)
        calls.append(("returned", time.monotonic(), set()))

    def assigned(partitions):
        calls.append(("assigned", time.monotonic(), set(partitions)))

    connector = ConsumerConnector(_config(cluster, group), on_partitions_revoked=revoked,
                                  on_partitions_assigned=assigned)
    theirs = None
    try:
        connector.create_message_streams({topic: 1})
        both = {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        wait_until(lambda: set(connector.owned_partitions()) == both, timeout=30,
                   message="the member to own both partitions")
        theirs = PollingMember(cluster, group, topic, THEIR_CLIENT_ID)
        wait_until(lambda: theirs.rebalances.assigned, timeout=30,
                   message="kafka-python's first assignment")
        assert [(what, partitions) for what, _, partitions in calls[:3]] == [
            ("assigned", both), ("revoked", both), ("returned", set())]
        returned_at = calls[2][1]
        assert theirs.rebalances.assigned_at[0] > returned_at
    finally:
        connector.shutdown()
        if theirs is not None:
            theirs.close()


def test_a_commit_asked_in_the_revocation_callback_goes_with_the_parting_commit(
        cluster, topic_factory, unique_name):
    """Auto commit off: the application commits in on_partitions_revoked, as Java consumers
    do in onPartitionsRevoked. The generation has passed by then, so the commit goes with the
    member's parting commit, in that generation, before it joins again: kafka-python, given a
    partition, resumes after what the member consumed of it (from the earliest offset, it
    would consume it all again)."""
    topic = topic_factory(partitions=2)
    group = unique_name("commit-in-revoked")
    early = _values(20, "early")
    produce(cluster, topic, early, partitions=2)
    connector = ConsumerConnector({**_config(cluster, group), "auto.commit.enable": "false"},
                                  on_partitions_revoked=lambda _p: connector.commit_offsets())
    theirs = None
    try:
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        assert sorted(next(stream).value for _ in range(20)) == early
        theirs = PollingMember(cluster, group, topic, THEIR_CLIENT_ID,
                               auto_offset_reset="earliest")
        wait_until(lambda: theirs.owns({0}), timeout=30, message="kafka-python's range share")
        later = _values(6, "later")
        produce(cluster, topic, later, partitions=2)  # 0, 2, 4 to partition 0
        wait_until(lambda: set(later[0::2]) <= set(theirs.values), timeout=30,
                   message="kafka-python consuming partition 0's later messages")
        assert not set(theirs.values) & set(early), "kafka-python consumed them again"
    finally:
        connector.shutdown()
        if theirs is not None:
            theirs.close()


def test_a_revocation_callback_that_raises_fails_the_member_which_leaves_at_once(
        cluster, topic_factory, unique_name):
    """The member fails loudly and still sends LeaveGroup: kafka-python is given every
    partition well within a session, not after it."""
    topic = topic_factory(partitions=2)
    group = unique_name("revoked-raises")

    def revoked(_partitions):
        raise RuntimeError("cannot give partitions back")

    connector = ConsumerConnector(_config(cluster, group), on_partitions_revoked=revoked)
    theirs = None
    try:
        connector.create_message_streams({topic: 1})
        wait_until(lambda: len(connector.owned_partitions()) == 2, timeout=30,
                   message="the member to own both partitions")
        theirs = PollingMember(cluster, group, topic, THEIR_CLIENT_ID)
        started = time.monotonic()
        wait_until(lambda: connector.state is State.FAILED, timeout=30,
                   message="the member to fail in its revocation callback")
        with pytest.raises(ZkConsumerError, match="on_partitions_revoked callback raised "
                                                  "RuntimeError: cannot give partitions back"):
            connector.wait_until_stable(timeout=0)
        wait_until(lambda: theirs.owns({0, 1}), timeout=SESSION_MS / 1000.0,
                   message="kafka-python to own both partitions")
        assert time.monotonic() - started < SESSION_MS / 1000.0 - 2
    finally:
        connector.shutdown()
        if theirs is not None:
            theirs.close()


def _described_by_the_reference_tool(cluster, group: str, work_dir) -> dict[int, list[str]]:
    """partition -> [current offset, log end offset, lag, owner], as the 0.9 bundle's
    `kafka-consumer-groups.sh --new-consumer --describe` (the class it runs) prints them."""
    result = run_tool("kafka.admin.ConsumerGroupCommand",
                      ["--new-consumer", "--bootstrap-server", cluster.bootstrap_servers,
                       "--describe", "--group", group], work_dir=work_dir)
    assert result.returncode == 0, result.stderr
    rows = {}
    for line in result.stdout.splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) == 7 and fields[0] == group:
            rows[int(fields[2])] = fields[3:]
    return rows


@pytest.mark.reference
def test_the_reference_group_command_describes_a_kafka_coordinated_member(
        cluster, topic_factory, unique_name, tmp_path):
    """The tool decodes each member's assignment from DescribeGroups with the Java client's
    ConsumerProtocol: the rows of our member's partitions prove that the assignment bytes it
    wrote as the group's leader are the standard ones, and its commits are the group's."""
    topic = topic_factory(partitions=PARTITIONS)
    group = unique_name("group-command")
    produce(cluster, topic, _values(40, "first"), partitions=PARTITIONS)
    # kafka-python commits nothing (its rows show no offset) and joins first, so that our
    # member starts its partitions from the beginning.
    theirs = PollingMember(cluster, group, topic, THEIR_CLIENT_ID, auto_offset_reset="earliest",
                           enable_auto_commit=False)
    connector = None
    try:
        wait_until(lambda: theirs.owns({0, 1, 2, 3}), timeout=30,
                   message="kafka-python to own every partition alone")
        connector = ConsumerConnector({**_config(cluster, group), "auto.commit.enable": "false"})
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        wait_until(lambda: set(connector.owned_partitions()) == {
            TopicPartition(topic, 2), TopicPartition(topic, 3)} and theirs.owns({0, 1}),
            timeout=30, message="the two members to split the partitions by range")
        assert len(consume_until_quiet(stream)) == 20
        connector.commit_offsets()
        # Two more a partition after the commit: the log end moves past what was committed.
        produce(cluster, topic, _values(8, "second"), partitions=PARTITIONS)

        rows = _described_by_the_reference_tool(cluster, group, tmp_path)

        # The owner is printed as "<client id>_/<client host>".
        owners = {p: row[3].rpartition("_/") for p, row in rows.items()}
        assert {p: client for p, (client, _, host) in owners.items() if host} == {
            0: THEIR_CLIENT_ID, 1: THEIR_CLIENT_ID, 2: OUR_CLIENT_ID, 3: OUR_CLIENT_ID}, rows
        assert {p: row[:3] for p, row in rows.items()} == {
            0: ["unknown", "12", "unknown"], 1: ["unknown", "12", "unknown"],
            2: ["10", "12", "2"], 3: ["10", "12", "2"]}, rows
    finally:
        if connector is not None:
            connector.shutdown()
        theirs.close()


class _CooperativeStickyByName(RangePartitionAssignor):
    """An assignor no zkconsumer member offers, as far as the coordinator can tell."""

    name = "cooperative-sticky"


def test_a_member_refused_for_its_assignors_names_what_either_side_offers(
        cluster, topic_factory, unique_name):
    """The coordinator's refusal (INCONSISTENT_GROUP_PROTOCOL) names nothing of the others;
    the member asks it (DescribeGroups) and `consume` fails with one line naming both."""
    topic = topic_factory(partitions=1)
    group = unique_name("refused")
    theirs = PollingMember(cluster, group, topic, THEIR_CLIENT_ID,
                           assignor=_CooperativeStickyByName)
    try:
        wait_until(lambda: theirs.owns({0}), timeout=30, message="kafka-python to join")
        version = (["--property", "kafka.api.version=" + ".".join(
            map(str, cluster.kafka_api_version))] if cluster.kafka_api_version else [])
        result = subprocess.run(
            [sys.executable, "-m", "zkconsumer", "consume", "--bootstrap-server",
             cluster.bootstrap_servers, "--group", group, "--topic", topic, "--property",
             "group.coordination=kafka", *version], capture_output=True, text=True,
            timeout=60, stdin=subprocess.DEVNULL)
    finally:
        theirs.close()
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert "with assignors range;" in errors[0], errors[0]  # ours: range alone, the default
    assert "protocol type 'consumer' with assignor 'cooperative-sticky'" in errors[0], errors[0]
    # No log line gives the refusal without the others' side.
    assert "none of these assignors" not in result.stderr, result.stderr


def test_the_cli_consumes_a_group_on_a_modern_brokers_coordinator_without_zookeeper(
        modern_broker, modern_topic_factory, unique_name):
    """Tansu (no ZooKeeper anywhere): `zkconsumer consume` with the brokers alone; a second run
    of the group resumes from the first one's commits."""
    topic = modern_topic_factory(partitions=2)
    group = unique_name("kafka-coordinated-cli")

    def consume(count: int):
        return CliRunner().invoke(cli, [
            "consume", "--bootstrap-server", modern_broker.bootstrap_servers, "--group", group,
            "--topic", topic, "--property", "group.coordination=kafka", "--property",
            "heartbeat.interval.ms=300", "--from-beginning", "--max-messages", str(count),
            "--format", "value"], catch_exceptions=False)

    first, second = _values(20, "first"), _values(6, "second")
    produce_modern(modern_broker.bootstrap_servers, topic, first, partitions=2)
    result = consume(len(first))
    assert result.exit_code == 0, result.output
    assert sorted(result.stdout_bytes.splitlines()) == first
    produce_modern(modern_broker.bootstrap_servers, topic, second, partitions=2)
    result = consume(len(second))
    assert result.exit_code == 0, result.output
    assert sorted(result.stdout_bytes.splitlines()) == second

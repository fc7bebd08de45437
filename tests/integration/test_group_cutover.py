"""`zkconsumer group cutover` on the real cluster: an idle legacy group moved to Kafka's group
coordinator (where a plain kafka-python consumer resumes exactly at its offsets) and back; a
member that honours the fence, simulated with its real znodes, waited for (and its drain's
commit carried over, the group's first one too); a reference Scala member refused, named
before the offsets its group has not committed yet; bad input refused in one line with nothing
written; and a run killed after each step finished by the next one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner
from kafka import KafkaConsumer
from support.coordinator_members import member_at
from support.kafka import committed_in_kafka, produce
from support.legacy_groups import kafka_version_args, write_offsets
from support.offsets import zookeeper_offsets
from support.waiting import wait_until

from zkconsumer.cli import cli
from zkconsumer.localcluster.processes import free_port
from zkconsumer.model import TopicPartition
from zkconsumer.znodes.consumers import ConsumerRegistration
from zkconsumer.znodes.fence import Fence, FenceAwareMember, FencePhase, OnFence
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration


@pytest.fixture
def cutover(cluster):
    """Runs `zkconsumer group cutover --group G ARGS` in-process; (exit code, stdout, stderr)."""
    def run(group: str, *args: str, zookeeper: str | None = None):
        result = CliRunner().invoke(cli, [
            "group", "cutover", "--group", group, *args,
            "--zookeeper", zookeeper or cluster.zookeeper_connect,
            *kafka_version_args(cluster)], catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr
    return run


def _fence(zk, group: str) -> Fence | None:
    path = GroupPaths(group).fence
    if not zk.exists(path):
        return None
    return Fence.decode(path, zk.get(path)[0])


def _idle_group(cluster, zk, topic_factory, unique_name, offsets=(3, 7, 0)):
    topic = topic_factory(partitions=len(offsets))
    produce(cluster, topic, [b"m-%02d" % i for i in range(30)], partitions=len(offsets))
    group = unique_name("cutover")
    write_offsets(zk, group, topic, dict(enumerate(offsets)))
    return group, topic


def _fence_aware_member(zk, group: str, topic: str) -> str:
    """A ZooKeeper member that honours the fence (and exits on it), as its real znodes say:
    the fence-aware znode first, then the registration. The test plays its part."""
    paths = GroupPaths(group)
    consumer_id = f"{group}_host-1700000000000-abcdef01"
    zk.create(paths.fence_aware_member(consumer_id),
              FenceAwareMember("zookeeper", OnFence.EXIT).encode(), ephemeral=True,
              makepath=True)
    zk.create(paths.member(consumer_id), ConsumerRegistration.static({topic: 1}, 1).encode(),
              ephemeral=True, makepath=True)
    return consumer_id


def _resumed_positions(cluster, group: str, topic: str, partitions: int) -> dict[int, int]:
    """Where a plain kafka-python member of the group starts: its first record per partition
    (the topic holds more than every committed offset)."""
    consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=cluster.bootstrap_servers,
                             enable_auto_commit=False, auto_offset_reset="latest",
                             **({"api_version": cluster.kafka_api_version}
                                if cluster.kafka_api_version else {}))
    first: dict[int, int] = {}
    try:
        def all_seen():
            for records in consumer.poll(500).values():
                for record in records:
                    first.setdefault(record.partition, record.offset)
            return len(first) == partitions
        wait_until(all_seen, timeout=60, message="a record of every partition")
        return first
    finally:
        consumer.close()


def test_an_idle_group_moves_to_kafka_where_a_kafka_member_resumes_exactly_and_back(
        cluster, zk, topic_factory, unique_name, cutover):
    group, topic = _idle_group(cluster, zk, topic_factory, unique_name)
    original = {TopicPartition(topic, p): o for p, o in enumerate((3, 7, 0))}

    code, out, err = cutover(group, "--to", "kafka", "--json")
    assert code == 0, err
    planned = json.loads(out)
    assert planned["dry_run"] and planned["next_step"] == "write the fence (draining to kafka)"
    assert [(r["partition"], r["new"], r["change"]) for r in planned["rows"]] == [
        (0, 3, "write"), (1, 7, "write"), (2, 0, "write")]
    assert _fence(zk, group) is None and committed_in_kafka(cluster, group, topic, 3) == {
        0: None, 1: None, 2: None}, "a dry run writes nothing"

    code, out, err = cutover(group, "--to", "kafka", "--execute", "--json")
    assert code == 0, err
    done = json.loads(out)
    assert (done["outcome"], done["offsets_verified"], done["members_moved"]) == \
        ("switched", 3, [])
    assert _fence(zk, group).phase == FencePhase.SWITCHED and _fence(zk, group).to == "kafka"
    assert committed_in_kafka(cluster, group, topic, 3) == {0: 3, 1: 7, 2: 0}

    code, out, err = cutover(group, "--to", "kafka", "--execute")
    assert code == 0, err
    assert out.startswith(f"group {group}: already cut over")

    assert _resumed_positions(cluster, group, topic, 3) == {0: 3, 1: 7, 2: 0}

    # Back: the kafka-python member has left (the group is Empty), its offsets unchanged.
    code, out, err = cutover(group, "--to", "zookeeper", "--execute", "--json")
    assert code == 0, err
    assert json.loads(out)["outcome"] == "switched"
    assert _fence(zk, group) == Fence("zookeeper", FencePhase.SWITCHED,
                                      _fence(zk, group).started_ms)
    assert zookeeper_offsets(zk, group) == original


def _cut_over_while_a_member_drains(zk, group: str, topic: str, cutover, last_commit: int,
                                    before=lambda: True):
    """`--to kafka --execute --json` while a member simulated with its real znodes (fence-aware,
    registered, owning partition 0) drains on the fence: commits `last_commit` once more,
    releases, deregisters, and exits (on_fence=exit). `before` is checked once it is there."""
    paths = GroupPaths(group)
    consumer_id = _fence_aware_member(zk, group, topic)
    zk.create(paths.owner(topic, 0), f"{consumer_id}-0".encode(), ephemeral=True,
              makepath=True)
    assert before()

    def drain() -> None:
        wait_until(lambda: _fence(zk, group), timeout=60, message="the fence")
        write_offsets(zk, group, topic, {0: last_commit})
        zk.delete(paths.owner(topic, 0))
        zk.delete(paths.member(consumer_id))
        zk.delete(paths.fence_aware_member(consumer_id))

    member = threading.Thread(target=drain, daemon=True)
    member.start()
    result = cutover(group, "--to", "kafka", "--execute", "--json")
    member.join(timeout=10)
    return result


def test_a_member_that_honours_the_fence_is_waited_for_and_its_last_commit_carried(
        cluster, zk, topic_factory, unique_name, cutover):
    group, topic = _idle_group(cluster, zk, topic_factory, unique_name, offsets=(3, 7))
    code, out, err = _cut_over_while_a_member_drains(zk, group, topic, cutover, last_commit=12)
    assert code == 0, err
    assert "waiting up to 120s for 1 member(s) to leave zookeeper" in err
    assert json.loads(out)["offsets_verified"] == 2
    assert committed_in_kafka(cluster, group, topic, 2) == {0: 12, 1: 7}


def test_a_member_that_honours_the_fence_needs_no_offsets_before_its_drain(
        cluster, zk, topic_factory, unique_name, cutover):
    """The group has not committed yet, but its one member honours the fence: the fence goes
    out (no refusal for the missing offsets), the member's drain commits, and that commit is
    what is carried over to Kafka."""
    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"m-%02d" % i for i in range(10)], partitions=1)
    group = unique_name("cutover-fresh")
    code, out, err = _cut_over_while_a_member_drains(
        zk, group, topic, cutover, last_commit=6,
        before=lambda: zookeeper_offsets(zk, group) == {})
    assert code == 0, err
    assert json.loads(out)["outcome"] == "switched"
    assert committed_in_kafka(cluster, group, topic, 1) == {0: 6}
    fence = _fence(zk, group)
    assert fence is not None and fence.to == "kafka" and fence.switched


@pytest.mark.reference
def test_a_reference_member_is_named_before_the_missing_offsets_and_nothing_is_written(
        cluster, zk, topic_factory, unique_name, cutover, reference_consumers):
    """Its only member a reference consumer that has not committed yet: one refusal names the
    member that can never honour the fence, first, and the offsets there are none of."""
    topic = topic_factory(partitions=3)
    group = unique_name("cutover")
    reference = reference_consumers(group, topic=topic,
                                    properties={"auto.commit.enable": "false"})
    [consumer_id] = wait_until(lambda: zk.exists(GroupPaths(group).ids) and
                               zk.get_children(GroupPaths(group).ids),
                               timeout=60, message="the reference member")
    assert zookeeper_offsets(zk, group) == {}

    code, out, err = cutover(group, "--to", "kafka", "--execute")

    assert code == 1 and out == ""
    [line] = err.splitlines()
    assert line.startswith(f"error: 2 things stand in the way: (1) 1 member(s) of group "
                           f"{group} on ZooKeeper cannot honour the fence: {consumer_id};")
    assert "may be delivered twice. (2) group " in line
    assert f"(2) group {group} has no committed offsets in ZooKeeper or Kafka" in line
    assert line.endswith("nothing was written")
    assert reference.is_running()
    assert _fence(zk, group) is None and zookeeper_offsets(zk, group) == {}
    assert committed_in_kafka(cluster, group, topic, 3) == {0: None, 1: None, 2: None}


@pytest.mark.parametrize("case", ["unknown group", "no offsets", "no coordinator",
                                  "live on kafka", "topic deleted"])
def test_bad_input_is_one_line_and_nothing_written(
        cluster, zk, topic_factory, unique_name, cutover, case):
    group, topic = _idle_group(cluster, zk, topic_factory, unique_name, offsets=(4,))
    args = ["--to", "kafka", "--execute"]
    expected = {
        "unknown group": "no group {group} under /consumers or on Kafka's group coordinator",
        "no offsets": "group {group} has no committed offsets in ZooKeeper or Kafka",
        "no coordinator": "Kafka's group coordinator cannot be asked",
        "live on kafka": "is already live on Kafka's group coordinator with 1 member(s)",
        "topic deleted": "topic gone-{group} no longer exists but group {group} has offsets "
                         "for it; they are left where they are and not carried over",
    }[case]
    if case == "unknown group":
        group = unique_name("nobody")
    elif case == "no offsets":
        zk.delete(GroupPaths(group).offsets, recursive=True)
    elif case == "no coordinator":
        args += ["--bootstrap-server", f"127.0.0.1:{free_port()}"]
    elif case == "topic deleted":
        write_offsets(zk, group, f"gone-{group}", {0: 9})
    before = zookeeper_offsets(zk, group)

    if case == "live on kafka":
        with member_at(cluster.bootstrap_servers, cluster.kafka_api_version, group, topic, 2):
            code, out, err = cutover(group, *args)
        assert committed_in_kafka(cluster, group, topic, 1) == {0: 2}, "the member's own"
    else:
        code, out, err = cutover(group, *args)
        if case != "no coordinator":
            assert committed_in_kafka(cluster, group, topic, 1) == {0: None}

    assert code == 1 and out == ""
    [line] = err.splitlines()
    assert line.startswith("error: ") and expected.format(group=group) in line
    assert _fence(zk, group) is None and zookeeper_offsets(zk, group) == before


@pytest.mark.parametrize("step", ["cutover fence written", "cutover offsets copied"])
def test_a_run_killed_after_a_step_is_finished_by_the_next(
        cluster, zk, topic_factory, unique_name, cutover, tmp_path, step):
    group, topic = _idle_group(cluster, zk, topic_factory, unique_name)
    paths = GroupPaths(group)
    # A member that honours the fence holds the drain open until the first run is killed.
    consumer_id = _fence_aware_member(zk, group, topic)
    if step == "cutover offsets copied":  # nothing to wait for: the run goes straight through
        zk.delete(paths.member(consumer_id))
        zk.delete(paths.fence_aware_member(consumer_id))
    log = tmp_path / "cutover.log"
    with open(log, "wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "zkconsumer", "--log-format", "json", "group", "cutover",
             "--group", group, "--to", "kafka", "--execute",
             "--zookeeper", cluster.zookeeper_connect, *kafka_version_args(cluster)],
            stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
            env={**os.environ})
    try:
        wait_until(lambda: step in log.read_text() or process.poll() is not None, timeout=60,
                   message=step)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    logged = log.read_text()
    assert step in logged, logged
    fence = _fence(zk, group)
    assert fence is not None and fence.to == "kafka"
    if step == "cutover offsets copied" and "cutover switched" not in logged:
        # The kill can land between the switch's write and its log line: either phase is a
        # state the next run must finish from.
        assert fence.phase in (FencePhase.DRAINING, FencePhase.SWITCHED)
    else:
        assert fence.phase == (FencePhase.SWITCHED if "cutover switched" in logged
                               else FencePhase.DRAINING)
    if step == "cutover fence written":
        assert committed_in_kafka(cluster, group, topic, 3) == {0: None, 1: None, 2: None}
        zk.delete(paths.member(consumer_id))
        zk.delete(paths.fence_aware_member(consumer_id))
    else:
        assert committed_in_kafka(cluster, group, topic, 3) == {0: 3, 1: 7, 2: 0}

    code, out, err = cutover(group, "--to", "kafka", "--execute", "--json")

    assert code == 0, err
    assert json.loads(out)["outcome"] in ("switched", "already cut over")
    assert _fence(zk, group) == fence.moved_on()
    assert committed_in_kafka(cluster, group, topic, 3) == {0: 3, 1: 7, 2: 0}
    assert zookeeper_offsets(zk, group) == {TopicPartition(topic, p): o
                                            for p, o in enumerate((3, 7, 0))}


def test_the_way_back_while_draining_switches_the_fence_back(cluster, zk, topic_factory,
                                                             unique_name, cutover):
    group, _topic = _idle_group(cluster, zk, topic_factory, unique_name)
    zk.create(GroupPaths(group).fence,
              Fence("kafka", FencePhase.DRAINING, int(time.time() * 1000)).encode())
    code, out, err = cutover(group, "--to", "zookeeper", "--execute")
    assert code == 0, err
    assert out.startswith(f"group {group}: rolled back (the fence draining to kafka is "
                          "switched back to zookeeper)")
    back = _fence(zk, group)
    assert (back.to, back.phase) == ("zookeeper", FencePhase.SWITCHED)


def test_a_member_that_never_leaves_times_out_and_leaves_the_fence_to_resume(
        cluster, zk, topic_factory, unique_name, cutover):
    group, topic = _idle_group(cluster, zk, topic_factory, unique_name)
    consumer_id = _fence_aware_member(zk, group, topic)

    code, out, err = cutover(group, "--to", "kafka", "--execute", "--timeout", "1s")

    assert code == 1 and out == ""
    [line] = [line for line in err.splitlines() if line.startswith("error: ")]
    assert line == (f"error: 1 member(s) of group {group} still on zookeeper after 1s: "
                    f"{consumer_id}; the fence stays as it is: run the command again to resume, "
                    "or with --to zookeeper to roll back while it is draining")
    assert _fence(zk, group).phase == FencePhase.DRAINING
    assert committed_in_kafka(cluster, group, topic, 3) == {0: None, 1: None, 2: None}
    code, _, err = cutover(group, "--to", "zookeeper", "--execute")
    assert code == 0, err
    back = _fence(zk, group)
    assert (back.to, back.phase) == ("zookeeper", FencePhase.SWITCHED)

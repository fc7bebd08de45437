"""The group consumer under membership changes, session expiry, broker restarts and bad input."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest
from kazoo.client import KazooClient
from support.kafka import produce
from support.sessions import expire_session
from support.waiting import wait_until

from zkconsumer.assignment import consumer_of_thread
from zkconsumer.localcluster import create_topic
from zkconsumer.localcluster.processes import free_port
from zkconsumer.member.rebalancer import RebalanceFailedError
from zkconsumer.member.state import State
from zkconsumer.zk.group_state import read_members, read_owners
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration


def _values(n: int, prefix: str) -> list[bytes]:
    return [f"{prefix}-{i:06d}".encode() for i in range(n)]


def test_members_join_leave_and_die_while_a_producer_writes(cluster, zk, topic_factory,
                                                           unique_name, cli_members):
    topic = topic_factory(partitions=6)
    group = unique_name("churn")
    commit_every = ("--property", "auto.commit.interval.ms=500")
    first = cli_members(group, topic, "first", *commit_every)
    doomed = cli_members(group, topic, "doomed", *commit_every)
    leaver = cli_members(group, topic, "leaver", *commit_every)

    violations: list[str] = []
    sampling = threading.Event()

    def sample_owners():
        sampler = KazooClient(hosts=cluster.zookeeper_connect)
        sampler.start(timeout=10)
        try:
            while not sampling.is_set():
                # Registrations come before claims and go after releases, so an owner is
                # registered in one of the two reads around the owner read.
                before = set(read_members(sampler, group))
                owners = read_owners(sampler, group)
                live = before | set(read_members(sampler, group))
                for tp, thread in owners.items():
                    if consumer_of_thread(thread) not in live:
                        violations.append(f"{tp} owned by unregistered {thread}")
                time.sleep(0.05)
        finally:
            sampler.stop()
            sampler.close()

    sampler_thread = threading.Thread(target=sample_owners, daemon=True)
    sampler_thread.start()
    # Produce once all three hold their shares: a member that joins after the others have
    # drained the backlog would have nothing to consume before it is killed.
    for member in (first, doomed, leaver):
        wait_until(member.has_rebalanced, timeout=60, message=f"{member.name} to be running")
    sent = _values(3000, "c")
    producer = threading.Thread(
        target=lambda: [produce(cluster, topic, sent[i:i + 100], partitions=6)
                        for i in range(0, len(sent), 100)], daemon=True)
    producer.start()

    wait_until(lambda: len(doomed.records()) > 0, timeout=60, message="the doomed member to consume")
    late = cli_members(group, topic, "late", *commit_every)
    wait_until(leaver.has_rebalanced, timeout=60, message="the leaver to be running")
    assert leaver.terminate() == 0, leaver.log_tail()
    doomed.kill()
    producer.join(timeout=120)

    everyone = (first, doomed, leaver, late)

    def all_consumed():
        seen = {r["value"] for m in everyone for r in m.records()}
        return len(seen) >= len(sent)

    wait_until(all_consumed, timeout=120, message="every produced message to be consumed")
    sampling.set()
    sampler_thread.join(timeout=10)
    wait_until(late.has_rebalanced, timeout=60, message="the late member to be running")
    assert first.terminate() == 0, first.log_tail()
    assert late.terminate() == 0, late.log_tail()

    assert not violations, violations[:5]
    consumed = Counter((r["partition"], r["offset"]) for m in everyone for r in m.records())
    assert {r["value"].encode() for m in everyone for r in m.records()} == set(sent)
    doomed_consumed = {(r["partition"], r["offset"]) for r in doomed.records()}
    duplicates = {key for key, count in consumed.items() if count > 1}
    assert duplicates <= doomed_consumed, "a message was consumed twice without an unclean stop"


def test_a_member_whose_session_expires_registers_again_and_the_group_converges(
        cluster, zk, topic_factory, unique_name, members):
    topic = topic_factory(partitions=4)
    group = unique_name("expiry")
    stays, expires = members(group, topics={topic: 1}), members(group, topics={topic: 1})
    wait_until(lambda: len(read_owners(zk, group)) == 4 and len(
        {consumer_of_thread(t) for t in read_owners(zk, group).values()}) == 2,
               timeout=60, message="both members owning partitions")

    expire_session(cluster.zookeeper_connect, expires.connector.zookeeper_session)

    def converged():
        owners = read_owners(zk, group)
        registered = set(read_members(zk, group))
        return (registered == {stays.consumer_id, expires.consumer_id} and len(owners) == 4
                and {consumer_of_thread(t) for t in owners.values()} == registered)

    wait_until(converged, timeout=90, message="the group to converge after the session expiry")
    produce(cluster, topic, _values(40, "after"), partitions=4)
    wait_until(lambda: len(stays.values()) + len(expires.values()) >= 40, timeout=60,
               message="messages after the expiry")


def test_consumption_resumes_after_the_broker_restarts(cluster, zk, unique_name, members,
                                                       second_broker):
    topic = unique_name("restart")
    create_topic(zk, topic, partitions=2, replication_factor=1)
    produce(cluster, topic, _values(20, "before"), partitions=2)
    group = unique_name("restart")
    member = members(group, topics={topic: 1})
    wait_until(lambda: len(member.values()) >= 20, timeout=60, message="messages before")

    for broker_id in sorted(cluster.local.brokers):
        if broker_id != 0:
            cluster.local.stop_broker(broker_id, graceful=True)
            cluster.local.start_broker(broker_id)
    produce(cluster, topic, _values(20, "after"), partitions=2)
    wait_until(lambda: len(member.values()) >= 40, timeout=90, message="messages after restart")
    assert sorted(member.values()) == sorted(_values(20, "before") + _values(20, "after"))


def test_a_member_of_an_unknown_topic_waits_and_starts_when_it_appears(cluster, zk, unique_name,
                                                                      members):
    topic = unique_name("later")
    group = unique_name("waits")
    member = members(group, topics={topic: 1})
    assert member.connector.wait_until_stable(timeout=30)
    assert read_owners(zk, group) == {}
    create_topic(zk, topic, partitions=2)
    produce(cluster, topic, _values(10, "late"), partitions=2)
    wait_until(lambda: len(member.values()) >= 10, timeout=60, message="messages of the new topic")


def test_a_malformed_registration_of_another_member_fails_loudly_and_writes_no_offset(
        cluster, zk, topic_factory, unique_name, members):
    topic = topic_factory(partitions=2)
    group = unique_name("garbage")
    paths = GroupPaths(group)
    zk.create(paths.member(f"{group}_intruder"), b"{not json", ephemeral=True, makepath=True)
    member = members(group, topics={topic: 1})
    with pytest.raises(Exception, match=f"znode {paths.member(group + '_intruder')}"):
        member.connector.wait_until_stable(timeout=30)
    assert member.connector.state is State.FAILED
    assert not zk.exists(paths.offsets)


def test_a_non_numeric_offset_znode_is_reported_and_left_alone(cluster, zk, topic_factory,
                                                               unique_name, members):
    topic = topic_factory(partitions=1)
    group = unique_name("badoffset")
    path = GroupPaths(group).offset(topic, 0)
    zk.create(path, b"twelve", makepath=True)
    member = members(group, topics={topic: 1})
    with pytest.raises(Exception, match=f"znode {path}"):
        member.connector.wait_until_stable(timeout=30)
    assert zk.get(path)[0] == b"twelve"


def test_rebalance_gives_up_after_its_attempts_owning_nothing(cluster, zk, topic_factory,
                                                              unique_name, members):
    topic = topic_factory(partitions=2)
    group = unique_name("blocked")
    paths = GroupPaths(group)
    squatter = KazooClient(hosts=cluster.zookeeper_connect)
    squatter.start(timeout=10)
    try:
        squatter.create(paths.owner(topic, 1), b"someone-else-0", ephemeral=True, makepath=True)
        started = time.monotonic()
        member = members(group, topics={topic: 1},
                         **{"rebalance.max.retries": "3", "rebalance.backoff.ms": "200",
                            "zookeeper.session.timeout.ms": "1000"})
        with pytest.raises(RebalanceFailedError, match=r"after \d+ rebalance attempts") as failed:
            member.connector.wait_until_stable(timeout=30)
        attempts = int(re.search(r"after (\d+) rebalance", str(failed.value)).group(1))
        # Three attempts at least, and never giving up before a crashed owner could expire.
        assert attempts >= 3
        assert time.monotonic() - started >= 2.0
        assert {tp.partition for tp in read_owners(zk, group)} == {1}
    finally:
        squatter.stop()
        squatter.close()


def test_the_cli_exits_non_zero_with_one_line_when_zookeeper_is_unreachable():
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "zkconsumer", "consume", "--zookeeper", f"127.0.0.1:{free_port()}",
         "--group", "g", "--topic", "t", "--property", "zookeeper.connection.timeout.ms=3000"],
        capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        result.stderr.strip().splitlines()[0]]
    assert "cannot reach ZooKeeper" in result.stderr
    assert time.monotonic() - started < 20


def test_the_cli_fails_with_a_clear_error_when_rebalancing_is_impossible(cluster, zk,
                                                                         topic_factory,
                                                                         unique_name):
    topic = topic_factory(partitions=1)
    group = unique_name("clifail")
    squatter = KazooClient(hosts=cluster.zookeeper_connect)
    squatter.start(timeout=10)
    try:
        squatter.create(GroupPaths(group).owner(topic, 0), b"x-0", ephemeral=True, makepath=True)
        command = [sys.executable, "-m", "zkconsumer", "consume", "--zookeeper",
                   cluster.zookeeper_connect, "--group", group, "--topic", topic,
                   "--property", "rebalance.max.retries=2", "--property", "rebalance.backoff.ms=100",
                   "--property", "zookeeper.session.timeout.ms=1000"]
        if cluster.kafka_api_version:
            command += ["--property",
                        "kafka.api.version=" + ".".join(map(str, cluster.kafka_api_version))]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    finally:
        squatter.stop()
        squatter.close()
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error: consumer ")
    assert re.search(r"after \d+ rebalance attempts", result.stderr)
    assert "Traceback" not in result.stderr


def test_a_stop_while_a_message_is_in_hand_writes_it_before_the_final_commit(
        cluster, zk, topic_factory, unique_name, tmp_path):
    """SIGTERM arrives while the 5th message is being handled: it is still printed, and the
    committed offset is exactly what was printed, on the real CLI and cluster."""
    topic = topic_factory(partitions=1)
    produce(cluster, topic, _values(20, "h"), partitions=1)
    (tmp_path / "stopper.py").write_text(
        "import os, signal, time\n"
        "def handle(message):\n"
        "    if message.offset == 4:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(1)  # the stop is surely requested before this message is done\n")
    group = unique_name("inhand")
    result = subprocess.run(
        [sys.executable, "-m", "zkconsumer", "consume", "--zookeeper", cluster.zookeeper_connect,
         "--group", group, "--topic", topic, "--from-beginning", "--format", "value",
         "--handler", "stopper:handle"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert result.returncode == 0, result.stderr[-2000:]
    printed = result.stdout.splitlines()
    assert printed[:5] == [v.decode() for v in _values(5, "h")]
    committed = int(zk.get(GroupPaths(group).offset(topic, 0))[0])
    assert committed == len(printed), "the committed offset must match what was printed"

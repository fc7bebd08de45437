"""Offset-loss paths on the real cluster: a reset that delivered nothing, a stream read one
`next()` at a time, a raising rebalance callback, claims met again after a lost answer, and
commits of a member that no longer owns its partition."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading

import pytest
from support.kafka import produce
from support.sessions import expire_session
from support.waiting import wait_until

from zkconsumer import ConsumerConnector
from zkconsumer.errors import ZkConsumerError
from zkconsumer.member.state import State
from zkconsumer.member.zk_membership import ZookeeperMembership
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import ZookeeperOffsetStore
from zkconsumer.zk.group_state import read_owners
from zkconsumer.zk.session import zookeeper_session
from zkconsumer.znodes.consumers import ConsumerRegistration, decode_offset
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration


def _config(cluster, group: str, **extra: str) -> dict[str, str]:
    config = {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group,
              "rebalance.backoff.ms": "500", **extra}
    if cluster.kafka_api_version:
        config["kafka.api.version"] = ".".join(map(str, cluster.kafka_api_version))
    return config


def _consume_command(cluster, group: str, topic: str, *extra: str) -> list[str]:
    """`zkconsumer consume` as a new user runs it: no --from-beginning, default reset."""
    return [sys.executable, "-m", "zkconsumer", "--log-format", "json", "consume",
            "--zookeeper", cluster.zookeeper_connect, "--group", group, "--topic", topic,
            "--format", "jsonl", *extra]


def _offset(zk, group: str, topic: str, partition: int) -> int | None:
    path = GroupPaths(group).offset(topic, partition)
    return decode_offset(path, zk.get(path)[0]) if zk.exists(path) else None


def test_a_reset_that_delivered_nothing_is_committed_so_later_messages_are_read(
        cluster, zk, topic_factory, unique_name, tmp_path):
    topic = topic_factory(partitions=1)
    group = unique_name("reset")
    produce(cluster, topic, [b"old-%d" % i for i in range(100)], partitions=1)
    log_file = tmp_path / "first.log"
    with open(log_file, "wb") as log:
        first = subprocess.Popen(_consume_command(cluster, group, topic),
                                 stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
    try:
        wait_until(lambda: "start at their reset position" in log_file.read_text(),
                   timeout=60, message="the reset to the log end")
        first.send_signal(signal.SIGTERM)
        out, _ = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, log_file.read_text()[-2000:]
    assert out == b"", "the default reset is the log end: nothing old is delivered"
    assert _offset(zk, group, topic, 0) == 100, "the reset position was not committed"

    produce(cluster, topic, [b"new-%d" % i for i in range(50)], partitions=1)
    second = subprocess.run(_consume_command(cluster, group, topic, "--max-messages", "50"),
                            capture_output=True, timeout=120, stdin=subprocess.DEVNULL,
                            check=False)
    assert second.returncode == 0, second.stderr.decode()[-2000:]
    records = [json.loads(line) for line in second.stdout.splitlines()]
    assert [r["offset"] for r in records] == list(range(100, 150))
    assert _offset(zk, group, topic, 0) == 150


def test_next_of_iter_hands_out_consecutive_offsets_and_a_commit_covers_them(
        cluster, zk, topic_factory, unique_name):
    topic = topic_factory(partitions=1)
    group = unique_name("next")
    produce(cluster, topic, [b"m-%d" % i for i in range(20)], partitions=1)
    config = _config(cluster, group, **{"auto.offset.reset": "smallest",
                                        "auto.commit.enable": "false",
                                        "consumer.timeout.ms": "10000"})
    with ConsumerConnector(config) as connector:
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        offsets = [next(iter(stream)).offset for _ in range(3)]
        assert offsets == [0, 1, 2]
        assert connector.commit_offsets() == {TopicPartition(topic, 0): 3}
    assert _offset(zk, group, topic, 0) == 3


def test_a_raising_assigned_callback_fails_the_member_and_releases_everything(
        cluster, zk, topic_factory, unique_name):
    topic = topic_factory(partitions=2)
    group = unique_name("callback")

    def refuse(_partitions):
        raise RuntimeError("cannot take partitions now")

    config = _config(cluster, group, **{"auto.offset.reset": "smallest",
                                        "consumer.timeout.ms": "30000"})
    connector = ConsumerConnector(config, on_partitions_assigned=refuse)
    try:
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        with pytest.raises(ZkConsumerError, match="on_partitions_assigned callback raised "
                                                  "RuntimeError: cannot take partitions now"):
            connector.wait_until_stable(timeout=60)
        assert connector.state is State.FAILED
        with pytest.raises(ZkConsumerError, match="cannot take partitions now"):
            next(stream)
        wait_until(lambda: not read_owners(zk, group) and not zk.get_children(
            GroupPaths(group).ids), timeout=30,
                   message="the failed member to release its partitions and leave the group")
    finally:
        connector.shutdown()


def _membership(zk, group: str, consumer: str) -> ZookeeperMembership:
    registration = ConsumerRegistration.static({"t": 1}, 0)
    return ZookeeperMembership(zk, group, f"{group}_{consumer}", registration)


def test_a_claim_met_again_after_its_answer_was_lost_succeeds(zk, unique_name):
    group = unique_name("claims")
    membership = _membership(zk, group, "me")
    wanted = {TopicPartition("t", 0): f"{group}_me-0", TopicPartition("t", 1): f"{group}_me-0"}
    assert membership.claim(wanted) == []
    # As after a ConnectionLoss whose transaction was applied: the same claim again, plus one
    # partition more, and one that moved to another of our threads.
    again = {**wanted, TopicPartition("t", 2): f"{group}_me-0",
             TopicPartition("t", 1): f"{group}_me-1"}
    assert membership.claim(again) == []
    assert read_owners(zk, group) == again


def test_registrations_are_read_once_per_id_until_an_unknown_session_contests_a_claim(
        cluster, zk, unique_name):
    """A rebalance reads only the registrations of ids it has not seen: with N members, N x N
    reads per join or leave were what made big groups slow. A claim contested by a member
    whose registration was read in the session that owns the znode reads nothing again (a peer
    that has not let go yet, the usual contest); one contested by a session no registration
    read has (an id registered again in a new session may say something else) reads every
    registration again, once for that session; so does an id gone and back between two
    reads."""
    group = unique_name("registrations")
    paths = GroupPaths(group)
    t0 = TopicPartition("t", 0)
    with zookeeper_session(cluster.zookeeper_connect) as peer, \
            zookeeper_session(cluster.zookeeper_connect) as stranger:
        zk.create(paths.member(f"{group}_a"), ConsumerRegistration.static({"t": 1}, 0).encode(),
                  makepath=True)
        peer.create(paths.member(f"{group}_b"), ConsumerRegistration.static({"t": 1}, 0).encode(),
                    ephemeral=True)
        membership = _membership(zk, group, "a")
        assert set(membership.snapshot(True).members) == {f"{group}_a", f"{group}_b"}

        changed = ConsumerRegistration.static({"t": 2}, 0)
        peer.set(paths.member(f"{group}_b"), changed.encode())
        zk.create(paths.member(f"{group}_c"), changed.encode())
        members = membership.snapshot(True).members
        assert members[f"{group}_b"].subscription == {"t": 1}, "a known id is not read again"
        assert members[f"{group}_c"].subscription == {"t": 2}, "a new id is read"
        zk.delete(paths.member(f"{group}_c"))
        assert set(membership.snapshot(True).members) == {f"{group}_a", f"{group}_b"}

        peer.create(paths.owner("t", 0), f"{group}_b-0".encode(), ephemeral=True, makepath=True)
        assert membership.claim({t0: f"{group}_a-0"}) == [t0]
        assert membership.snapshot(True).members[f"{group}_b"].subscription == {"t": 1}, \
            "a contest by a known member's session reads nothing again"
        peer.delete(paths.owner("t", 0))

        stranger.create(paths.owner("t", 0), b"someone-else-0", ephemeral=True)
        assert membership.claim({t0: f"{group}_a-0"}) == [t0]
        assert membership.snapshot(True).members[f"{group}_b"].subscription == {"t": 2}, \
            "a contest by a session no registration has reads them all again"
        peer.set(paths.member(f"{group}_b"), ConsumerRegistration.static({"t": 3}, 0).encode())
        assert membership.claim({t0: f"{group}_a-0"}) == [t0]
        assert membership.snapshot(True).members[f"{group}_b"].subscription == {"t": 2}, \
            "the same unknown session again (a member gone that has not let go) reads nothing"

        # b restarts with a fixed id and another subscription between two reads: the
        # registry's child version counts its going and coming back.
        peer.delete(paths.member(f"{group}_b"))
        peer.create(paths.member(f"{group}_b"),
                    ConsumerRegistration.static({"t": 4}, 0).encode(), ephemeral=True)
        assert membership.snapshot(True).members[f"{group}_b"].subscription == {"t": 4}, \
            "an id gone and back between two reads is read again"


def test_a_claim_owned_by_another_session_is_contested(cluster, zk, unique_name):
    group = unique_name("claims")
    with zookeeper_session(cluster.zookeeper_connect) as other_zk:
        other = _membership(other_zk, group, "other")
        assert other.claim({TopicPartition("t", 0): f"{group}_other-0"}) == []
        mine = _membership(zk, group, "me")
        assert mine.claim({TopicPartition("t", 0): f"{group}_me-0"}) == [TopicPartition("t", 0)]


def test_a_commit_gathered_before_a_session_expiry_is_refused_after_it(
        cluster, zk, unique_name):
    group = unique_name("guard")
    tp = TopicPartition("t", 0)
    with zookeeper_session(cluster.zookeeper_connect) as old_zk:
        old = _membership(old_zk, group, "old")
        assert old.claim({tp: f"{group}_old-0"}) == []
        first_session = old_zk.client_id[0]
        checks = old.owner_checks({tp: first_session})
        ZookeeperOffsetStore(old_zk, group).commit({tp: 20}, owners=checks)
        assert _offset(zk, group, "t", 0) == 20, "the owner's own commit is written"
        expire_session(cluster.zookeeper_connect, old_zk.client_id)  # our owner znode goes too
        wait_until(lambda: old_zk.connected and old_zk.client_id[0] != first_session,
                   timeout=30, message="the same client in a new session")
        new = _membership(zk, group, "new")
        assert new.claim({tp: f"{group}_new-0"}) == []
        ZookeeperOffsetStore(zk, group).commit(
            {tp: 30}, owners=new.owner_checks({tp: zk.client_id[0]}))
        assert old.owner_checks({tp: first_session}) == {}, "claimed in a session that is gone"
        ZookeeperOffsetStore(old_zk, group).commit({tp: 25}, owners=checks)  # late, same client
        assert _offset(zk, group, "t", 0) == 30, "a commit without ownership rewound the offset"


def test_a_zookeeper_commit_is_refused_once_the_owner_znode_is_not_ours_any_more(
        cluster, zk, unique_name):
    group = unique_name("guard")
    tp = TopicPartition("t", 0)
    member = _membership(zk, group, "me")
    assert member.claim({tp: f"{group}_me-0"}) == []
    checks = member.owner_checks({tp: zk.client_id[0]})
    ZookeeperOffsetStore(zk, group).commit({tp: 40}, owners=checks)
    # An operator deleted the owner znode and a reference consumer claimed the partition.
    owner = GroupPaths(group).owner("t", 0)
    zk.delete(owner)
    with zookeeper_session(cluster.zookeeper_connect) as other_zk:
        other_zk.create(owner, b"reference-0", ephemeral=True)
        ZookeeperOffsetStore(zk, group).commit({tp: 35}, owners=checks)
        assert _offset(zk, group, "t", 0) == 40


def test_broker_and_topic_watches_start_when_their_znodes_appear_later(cluster, zk,
                                                                      unique_name):
    chroot = "/" + unique_name("chroot")
    zk.ensure_path(chroot)
    with zookeeper_session(cluster.zookeeper_connect + chroot) as with_chroot:
        membership = _membership(with_chroot, "g", "me")
        changes = threading.Semaphore(0)
        membership.watch(changes.release, topics=[], wildcard=True)
        for path, what in [("/brokers/ids", "the broker registry's creation"),
                           ("/brokers/ids/0", "a broker registering later"),
                           ("/brokers/topics", "the topic registry's creation"),
                           ("/brokers/topics/new", "a topic created later")]:
            with_chroot.create(path, b"", makepath=True)
            assert changes.acquire(timeout=10), f"{what} was not seen"

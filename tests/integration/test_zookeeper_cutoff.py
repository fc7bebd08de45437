"""A member cut off from ZooKeeper while it keeps running and fetching from Kafka.

Unlike a frozen process, such a member goes on delivering what it fetches while its session
expires on the server and another member takes its partitions: every message it hands out
from then on is one the group also delivers elsewhere, and every offset it writes may rewind
the new owner's. So from the moment its connection drops (kazoo: SUSPENDED) it must deliver
and commit nothing until it knows whether its session survived; here it did not, and it must
register again and take its share once ZooKeeper is reachable, with nothing lost. With offsets
in Kafka its commits would not even need ZooKeeper, so both storages are checked.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable

import pytest
from kazoo.exceptions import NoNodeError
from support.kafka import committed_in_kafka, produce
from support.offsets import zookeeper_offsets
from support.waiting import wait_until

from zkconsumer.assignment import consumer_of_thread
from zkconsumer.model import TopicPartition
from zkconsumer.testing.tcp_proxy import TcpProxy
from zkconsumer.zk.group_state import read_owners
from zkconsumer.znodes.consumers import decode_offset
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration

PARTITIONS = 4
SESSION_TIMEOUT_MS = 4000  # the local server's minimum
# The cut closes the member's connection, which kazoo notices at once; this covers that and
# the message the member has in hand then.
NOTICE_S = 1.0
COMMIT_EVERY = {"auto.commit.interval.ms": "200"}
# Offsets in ZooKeeper (the default), or in Kafka only, where no ZooKeeper write can fail for
# a cut-off member: its commits would still go through unless it pauses them.
STORAGES = {"zookeeper": {}, "kafka": {"offsets.storage": "kafka", "dual.commit.enabled": "false"}}


@pytest.fixture
def zookeeper_proxy(cluster):
    """A cuttable path to the cluster's ZooKeeper. Requested before `members`, so it is closed
    only after the members were shut down (through it)."""
    server = cluster.zookeeper_connect.split("/")[0].split(",")[0]
    host, _, port = server.rpartition(":")
    with TcpProxy(int(port), host) as proxy:
        yield proxy


# Committed offsets by partition, each with the version of its write where the store has one.
Commits = dict[TopicPartition, tuple[int, int | None]]


def zookeeper_commits(zk, group: str, topic: str) -> Callable[[], Commits]:
    paths = GroupPaths(group)

    def read() -> Commits:
        found = {}
        for p in range(PARTITIONS):
            path = paths.offset(topic, p)
            try:
                data, stat = zk.get(path)
            except NoNodeError:
                continue
            found[TopicPartition(topic, p)] = (decode_offset(path, data), stat.version)
        return found

    return read


def kafka_commits(cluster, group: str, topic: str) -> Callable[[], Commits]:
    def read() -> Commits:
        return {TopicPartition(topic, p): (offset, None)
                for p, offset in committed_in_kafka(cluster, group, topic, PARTITIONS).items()
                if offset is not None}

    return read


class OffsetWatch:
    """Samples the group's committed offsets until stopped: any offset that goes back, and
    any change to a cut-off member's partition while that partition is not owned by the peer,
    i.e. a commit only the cut-off member can have made."""

    def __init__(self, read_commits: Callable[[], Commits], zk, group: str) -> None:
        self._read = read_commits
        self._zk = zk
        self._group = group
        self._cut_partitions: set[TopicPartition] = set()
        self._peer: str | None = None
        self._baseline: Commits | None = None
        self._last: dict[TopicPartition, int] = {}
        self._went_back: dict[TopicPartition, list[tuple[int, int]]] = defaultdict(list)
        self._committed_while_cut: dict[TopicPartition, list[int]] = defaultdict(list)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def start_cut(self, cut_partitions: set[TopicPartition], peer: str) -> None:
        self._cut_partitions, self._peer = cut_partitions, peer
        self._baseline = self._read()

    def end_cut(self) -> None:
        self._baseline = None

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=30)

    def broken(self) -> list[str]:
        return [*(f"(b) {tp}: {len(offsets)} commits while its member was cut off "
                  f"(offsets {offsets[0]} .. {offsets[-1]})"
                  for tp, offsets in sorted(self._committed_while_cut.items())),
                *(f"(b) {tp}: committed offset went back {len(backs)} times, first "
                  f"{backs[0][0]} -> {backs[0][1]}"
                  for tp, backs in sorted(self._went_back.items()))]

    def _watch(self) -> None:
        while not self._done.wait(0.05):
            baseline = self._baseline
            commits = self._read()  # before the owners: a change seen here happened before
            owners = read_owners(self._zk, self._group)
            for tp, (offset, _version) in commits.items():
                if offset < self._last.get(tp, -1):
                    self._went_back[tp].append((self._last[tp], offset))
                self._last[tp] = max(offset, self._last.get(tp, -1))
                owner = owners.get(tp)
                if baseline is not None and tp in self._cut_partitions \
                        and commits[tp] != baseline.get(tp) \
                        and (owner is None or consumer_of_thread(owner) != self._peer):
                    self._committed_while_cut[tp].append(offset)
                    baseline[tp] = commits[tp]


def _within(timeout: float, probe) -> bool:
    try:
        wait_until(probe, timeout=timeout)
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("storage", sorted(STORAGES))
def test_a_member_cut_off_from_zookeeper_pauses_then_rejoins_and_nothing_is_lost(
        cluster, zk, topic_factory, unique_name, zookeeper_proxy, members, storage):
    topic = topic_factory(partitions=PARTITIONS)
    group = unique_name("cutoff")
    options = {**COMMIT_EVERY, **STORAGES[storage]}
    cut = members(group, topics={topic: 1}, **options,
                  **{"zookeeper.connect": zookeeper_proxy.address,
                     "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)})
    peer = members(group, topics={topic: 1}, **options)
    read_commits = (zookeeper_commits(zk, group, topic) if storage == "zookeeper"
                    else kafka_commits(cluster, group, topic))

    def owned_by(member) -> set[TopicPartition]:
        return {tp for tp, thread in read_owners(zk, group).items()
                if consumer_of_thread(thread) == member.consumer_id}

    wait_until(lambda: len(owned_by(cut)) == 2 and len(owned_by(peer)) == 2, timeout=60,
               message="both members owning two partitions")

    sent: list[bytes] = []
    producing = threading.Event()
    producing.set()

    def produce_until_stopped() -> None:
        batch = 0
        while producing.is_set():
            values = [f"cutoff-{batch:05d}-{i}".encode() for i in range(PARTITIONS * 5)]
            produce(cluster, topic, values, partitions=PARTITIONS)
            sent.extend(values)
            batch += 1
            producing.wait(0.1)

    producer = threading.Thread(target=produce_until_stopped, daemon=True)
    producer.start()
    watch = OffsetWatch(read_commits, zk, group)
    broken: list[str] = []
    try:
        wait_until(lambda: len(cut.values()) >= 20, timeout=60,
                   message="the member to be consuming before the cut")
        cut_partitions = owned_by(cut)
        registration = GroupPaths(group).member(cut.consumer_id)

        zookeeper_proxy.cut()
        try:
            time.sleep(NOTICE_S)  # what it may still hand out is what this window covers
            delivered_at_notice = len(cut.values())
            watch.start_cut(cut_partitions, peer.consumer_id)

            # Keep it cut until its session expired and the peer consumes its partitions.
            def peer_from_cut() -> int:
                return sum(1 for m in list(peer.messages)
                           if TopicPartition(m.topic, m.partition) in cut_partitions)

            wait_until(lambda: not zk.exists(registration), timeout=30,
                       message="the cut-off member's session to expire")
            every_partition = {TopicPartition(topic, p) for p in range(PARTITIONS)}
            wait_until(lambda: owned_by(peer) == every_partition, timeout=60,
                       message="the peer to take every partition")
            taken_over_at = peer_from_cut()
            wait_until(lambda: peer_from_cut() >= taken_over_at + 20, timeout=60,
                       message="the peer to consume the cut-off member's partitions")
            delivered_while_cut = len(cut.values()) - delivered_at_notice
            if delivered_while_cut:
                broken.append(f"(a) the cut-off member delivered {delivered_while_cut} "
                              f"messages from {NOTICE_S:g}s after the cut until it was restored")
            watch.end_cut()
        finally:
            zookeeper_proxy.restore()

        if not _within(60, lambda: zk.exists(registration)):
            broken.append("(c) the cut-off member did not register again within 60s of the "
                          "restore")
        elif not _within(60, lambda: owned_by(cut) and owned_by(peer)):
            broken.append("(c) the cut-off member did not take a share again after "
                          "re-registering")
        producing.clear()
        producer.join(timeout=60)
        everything = set(sent)
        if not _within(60, lambda: everything <= set(cut.values()) | set(peer.values())):
            missing = everything - set(cut.values()) - set(peer.values())
            broken.append(f"(c) {len(missing)} of {len(everything)} produced messages were "
                          f"never delivered, e.g. {sorted(missing)[:3]}")
    finally:
        producing.clear()
        watch.stop()
    if cut.failure or peer.failure:
        broken.append(f"a member failed: {cut.failure or peer.failure}")
    broken += watch.broken()
    assert not broken, "\n".join(broken)


def test_a_member_stopped_while_cut_off_commits_once_its_session_is_back(
        cluster, zk, topic_factory, unique_name, zookeeper_proxy, members, caplog):
    """A stop that meets a ZooKeeper blip: the final commit waits for the connection to come
    back in the same session, so what was consumed is not delivered again (the fault runner
    found a stop that gave up on it at once)."""
    topic = topic_factory(partitions=1)
    group = unique_name("cutoff-stop")
    produce(cluster, topic, [b"m%d" % i for i in range(20)], partitions=1)
    caplog.set_level(logging.INFO, logger="zkconsumer")
    member = members(group, topics={topic: 1}, **{
        "auto.commit.interval.ms": "600000",  # only the final commit commits
        "zookeeper.connect": zookeeper_proxy.address, "zookeeper.session.timeout.ms": "20000"})
    wait_until(lambda: len(member.values()) == 20, timeout=60,
               message="the member to consume every message")

    def logged(words: str) -> bool:
        return any(words in record.getMessage() for record in caplog.records)

    zookeeper_proxy.cut()
    stopping = threading.Thread(target=member.stop, daemon=True)
    try:
        wait_until(lambda: logged("ZooKeeper connection lost"), timeout=30,
                   message="the member to notice the cut")
        stopping.start()
        wait_until(lambda: logged("the final commit waits for the ZooKeeper connection"),
                   timeout=30, message="the stop's final commit to wait for ZooKeeper")
    finally:
        zookeeper_proxy.restore()
    stopping.join(timeout=30)
    assert not stopping.is_alive()
    assert not logged("stopped without finishing"), caplog.text
    assert zookeeper_offsets(zk, group) == {TopicPartition(topic, 0): 20}

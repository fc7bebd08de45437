"""A member partitioned from ZooKeeper (its packets dropped silently, nothing closed) while it
keeps committing every 100 ms and fetching from Kafka.

Its connection is not reset, so nothing tells it: it has only its own timers, while the server
expires its session a session timeout after the last packet that reached it, and a peer takes
its partitions. kazoo's own timer counts from the last request *sent*, so a member that keeps
sending requests into the partition would never time out by it; the server's counts from the
last packet *received*. The member must stop delivering before the server can expire its
session, whatever it sends meanwhile: no partition is delivered by two members at once.
"""

from __future__ import annotations

import threading
import time

import pytest
from support.kafka import produce
from support.log_capture import captured_logs
from support.waiting import wait_until

from zkconsumer.assignment import consumer_of_thread
from zkconsumer.model import TopicPartition
from zkconsumer.testing.tcp_proxy import TcpProxy
from zkconsumer.zk.group_state import read_owners
from zkconsumer.zk.session import connect
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration

PARTITIONS = 4
# The local server's minimum (2 ticks of 2 s); the test counts on what the server granted.
SESSION_TIMEOUT_S = 4.0
OPTIONS = {"auto.commit.interval.ms": "100", "offsets.storage": "zookeeper",
           "zookeeper.session.timeout.ms": str(int(SESSION_TIMEOUT_S * 1000))}
# Besides its auto commit (one request in flight at a time: it waits for the answer), the
# partitioned member's session carries a request every this often, as anything else sharing
# the session would: each one resets kazoo's timer.
EXTRA_REQUEST_EVERY_S = 0.1


@pytest.fixture
def zookeeper_proxy(cluster):
    """A path to the cluster's ZooKeeper that can be partitioned. Requested before `members`,
    so it is closed only after the members were shut down (through it)."""
    server = cluster.zookeeper_connect.split("/")[0].split(",")[0]
    host, _, port = server.rpartition(":")
    with TcpProxy(int(port), host) as proxy:
        yield proxy


class SteadyProducer:
    """Produces a few messages to every partition about ten times a second until stopped."""

    def __init__(self, cluster, topic: str) -> None:
        self._running = threading.Event()
        self._running.set()
        self._thread = threading.Thread(target=self._produce, args=(cluster, topic), daemon=True)
        self._thread.start()

    def _produce(self, cluster, topic: str) -> None:
        batch = 0
        while self._running.is_set():
            produce(cluster, topic, [f"partition-{batch:05d}-{i}".encode()
                                     for i in range(PARTITIONS * 2)], partitions=PARTITIONS)
            batch += 1
            self._running.wait(0.1)

    def stop(self) -> None:
        self._running.clear()
        self._thread.join(timeout=60)


class RequestSender:
    """Sends a ZooKeeper request (an `exists` of /) on a client every `every_s`, without
    waiting for the answers, until stopped."""

    def __init__(self, zk, every_s: float) -> None:
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._send, args=(zk, every_s), daemon=True)
        self._thread.start()

    def _send(self, zk, every_s: float) -> None:
        while not self._stopped.wait(every_s):
            zk.exists_async("/")

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=10)


def _after(arrivals, since: float, tp: TopicPartition) -> list[float]:
    return [at for at, delivered in arrivals if delivered == tp and at > since]


# Each takes about 8 s (the server's shortest session timeout is 4 s); the member that sends
# more is the harder case, so the other runs with the slow tests.
@pytest.mark.parametrize("requests", [pytest.param("auto commit only", marks=pytest.mark.slow),
                                      "a request every 100 ms besides"])
def test_a_member_partitioned_from_zookeeper_stops_delivering_before_its_session_can_expire(
        cluster, zk, topic_factory, unique_name, zookeeper_proxy, members, requests):
    topic = topic_factory(partitions=PARTITIONS)
    group = unique_name("partition")
    cut = members(group, topics={topic: 1}, **OPTIONS,
                  **{"zookeeper.connect": zookeeper_proxy.address})
    peer = members(group, topics={topic: 1}, **OPTIONS)

    def owned_by(member) -> set[TopicPartition]:
        return {tp for tp, thread in read_owners(zk, group).items()
                if consumer_of_thread(thread) == member.consumer_id}

    wait_until(lambda: len(owned_by(cut)) == 2 and len(owned_by(peer)) == 2, timeout=60,
               message="both members owning two partitions")
    producer = SteadyProducer(cluster, topic)
    sender = None
    try:
        cut_partitions = owned_by(cut)
        started = time.monotonic()
        wait_until(lambda: all(_after(cut.delivered(), started, tp) for tp in cut_partitions),
                   timeout=60, message="the member to be delivering from its partitions")
        if requests != "auto commit only":
            sender = RequestSender(cut.connector._zk, EXTRA_REQUEST_EVERY_S)
        with captured_logs() as logs:
            zookeeper_proxy.blackhole()
            partitioned_at = time.monotonic()
            # The server has heard nothing from the member since then, so it may expire the
            # session (and the peer take its partitions) from a session timeout later.
            earliest_expiry = zookeeper_proxy.last_forwarded_upstream \
                + cut.connector._zk.handler.hearing.session_timeout_s
            try:
                wait_until(lambda: not zk.exists(GroupPaths(group).member(cut.consumer_id)),
                           timeout=30, message="the partitioned member's session to expire")
                wait_until(lambda: all(_after(peer.delivered(), partitioned_at, tp)
                                       for tp in cut_partitions),
                           timeout=60, message="the peer to deliver from the member's partitions")
                delivered_by_cut = cut.delivered()
                delivered_by_peer = peer.delivered()
            finally:
                zookeeper_proxy.restore()
                if sender is not None:
                    sender.stop()
            lines = list(logs)
        wait_until(lambda: zk.exists(GroupPaths(group).member(cut.consumer_id)), timeout=30,
                   message="the member to register again once the partition healed")
    finally:
        producer.stop()

    broken = []
    for tp in sorted(cut_partitions):
        last_by_cut = max(at for at, delivered in delivered_by_cut if delivered == tp)
        first_by_peer = min(_after(delivered_by_peer, partitioned_at, tp))
        print(f"{tp}: partitioned member's last delivery {last_by_cut - partitioned_at:+.2f}s "
              f"after the partition, peer's first {first_by_peer - partitioned_at:+.2f}s, "
              f"earliest expiry {earliest_expiry - partitioned_at:+.2f}s")
        if last_by_cut >= first_by_peer:
            broken.append(f"{tp} delivered by both members at once: the partitioned member "
                          f"until {last_by_cut - first_by_peer:.2f}s after the peer's first")
        if last_by_cut >= earliest_expiry:
            broken.append(f"{tp} delivered by the partitioned member "
                          f"{last_by_cut - earliest_expiry:.2f}s after its session could "
                          "expire on the server")
    events = [line["event"] for line in lines
              if line.get("consumer_id", cut.consumer_id) == cut.consumer_id]
    paused = [i for i, event in enumerate(events) if event.startswith("commits paused")]
    if paused and "auto commit works again" in events[paused[0]:]:
        broken.append("'auto commit works again' logged after 'commits paused' while the "
                      "member was partitioned")
    assert not broken, "\n".join(broken)


def test_the_silence_allowed_is_counted_on_the_session_timeout_the_server_granted(cluster):
    """A server grants from 2 to 20 ticks (its default bounds): asked for 1 s and for 600 s it
    grants its bounds, and a session that asked for 600 s expires after the maximum."""
    granted = []
    for asked in (1.0, 600.0):
        client = connect(cluster.zookeeper_connect, session_timeout_s=asked)
        try:
            granted.append(client.handler.hearing.session_timeout_s)
        finally:
            client.stop()
            client.close()
    shortest, longest = granted
    assert longest == pytest.approx(10 * shortest) and longest < 600.0, granted

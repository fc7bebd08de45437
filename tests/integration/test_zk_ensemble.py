"""Groups on a 3-server ZooKeeper ensemble (Debian's zookeeper 3.8), with the faults a single
server cannot show: leader changes, which give every session a fresh timeout, and a majority
lost, during which no ZooKeeper call is answered at all. Messages come from the session's
0.9.0.1 broker through --bootstrap-server, as the issue's trials did."""

from __future__ import annotations

import time

import pytest
from kazoo.protocol.states import KazooState
from support.kafka import produce
from support.waiting import wait_until

from zkconsumer.assignment import consumer_of_thread
from zkconsumer.cli.signals import STOP_TIMEOUT_S
from zkconsumer.model import TopicPartition
from zkconsumer.testing.consume_process import ConsumeProcess
from zkconsumer.zk.group_state import read_owners
from zkconsumer.zk.session import connect

pytestmark = pytest.mark.integration

SESSION_TIMEOUT_MS = 6000
# Long enough that kazoo's default backoff (doubling up to an hour) sleeps well past the
# moment the ensemble serves again; about once a second, a member is back at once.
OUTAGE_S = 15.0
RECONNECTED_WITHIN_S = 3.0


@pytest.fixture
def members_on_ensemble(cluster, zookeeper_ensemble, tmp_path):
    """`zkconsumer consume` processes in a group on the ensemble; killed when the test ends."""
    started: list[ConsumeProcess] = []

    def start(group: str, topic: str, name: str, *extra: str) -> ConsumeProcess:
        member = ConsumeProcess(
            zookeeper_ensemble.connect_string, group, topic, tmp_path, name,
            "--bootstrap-server", cluster.bootstrap_servers,
            "--property", "kafka.api.version=0.9",
            "--property", f"zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}",
            "--property", "auto.commit.interval.ms=500", *extra)
        started.append(member)
        return member

    yield start
    for member in started:
        member.stop()


def test_the_ensemble_elects_a_new_leader_and_stops_serving_without_a_majority(
        zookeeper_ensemble):
    leader = zookeeper_ensemble.leader()
    zookeeper_ensemble.kill_server(leader)
    assert zookeeper_ensemble.wait_until_serving(timeout=30) != leader
    stopped = zookeeper_ensemble.lose_quorum()
    assert len(stopped) == 1 and not zookeeper_ensemble.serving()
    zookeeper_ensemble.restore([*stopped, leader])
    wait_until(lambda: all(zookeeper_ensemble.mode(s) for s in zookeeper_ensemble.servers),
               timeout=30, message="every server to serve again")


def test_a_session_reconnects_within_seconds_of_the_quorum_coming_back_and_is_kept(
        zookeeper_ensemble):
    client = connect(zookeeper_ensemble.connect_string,
                     session_timeout_s=SESSION_TIMEOUT_MS / 1000)
    try:
        session = client.client_id[0]
        stopped = zookeeper_ensemble.lose_quorum()
        wait_until(lambda: client.state == KazooState.SUSPENDED, timeout=30,
                   message="the client to notice the quorum loss")
        time.sleep(OUTAGE_S)  # the outage itself: no wait for a condition
        zookeeper_ensemble.restore(stopped)
        serving_at = time.monotonic()
        wait_until(lambda: client.state == KazooState.CONNECTED, timeout=60, interval=0.05,
                   message="the client to reconnect")
        late = time.monotonic() - serving_at
        assert late < RECONNECTED_WITHIN_S, f"reconnected {late:.1f}s after the quorum was back"
        assert client.client_id[0] == session, "the session did not survive the outage"
    finally:
        client.stop()
        client.close()


LOST = "ZooKeeper connection lost; delivery and commits paused"
BACK = "ZooKeeper connection back in the same session; delivering again"


def _connection_events(member: ConsumeProcess) -> list[str]:
    return [line["event"] for line in member.log_lines() if line.get("event") in (LOST, BACK)]


def test_sigterm_during_a_quorum_loss_stops_the_member_in_bounded_time(
        zookeeper_ensemble, members_on_ensemble, topic_factory, cluster, unique_name):
    topic = topic_factory(partitions=2)
    produce(cluster, topic, [b"before-%d" % i for i in range(20)], partitions=2)
    member = members_on_ensemble(unique_name("stop"), topic, "member")
    wait_until(lambda: len(member.records()) == 20, timeout=90,
               message=f"the member to consume; its log: {member.log_tail()}")
    zookeeper_ensemble.lose_quorum()
    wait_until(lambda: not zookeeper_ensemble.serving(), timeout=30,
               message="the server left to stop serving")
    wait_until(lambda: _connection_events(member)[-1:] == [LOST], timeout=30,
               message="the member to lose its connection for good")
    asked_at = time.monotonic()
    member.request_stop()
    try:
        status = member.process.wait(timeout=STOP_TIMEOUT_S + 20)
    except Exception:
        pytest.fail(f"still running {STOP_TIMEOUT_S + 20:g}s after SIGTERM, with no quorum")
    took = time.monotonic() - asked_at
    assert took <= STOP_TIMEOUT_S + 2, f"stopped {took:.1f}s after SIGTERM"
    assert status == 0, member.log_tail()
    (unfinished,) = member.log_events("stopped without finishing with ZooKeeper")
    assert "the deregistration" in unfinished["not_done"]


# Between two claim attempts, so that a member waiting for an owner sleeps through the
# failovers (as with the default 2 s, most of the time) instead of having its rebalance cut
# short and started again, which restarts today's wait; and just longer than that wait (two
# session timeouts), so that today's member gives up at its second attempt.
CLAIM_BACKOFF_S = 2 * SESSION_TIMEOUT_MS / 1000 + 3


def test_a_crashed_members_partitions_are_owned_again_across_leader_failovers(
        zookeeper_ensemble, members_on_ensemble, topic_factory, unique_name):
    """The issue's case: a member SIGKILLed while the group rebalances, then ZooKeeper leaders
    stopped: each new leader gives the dead member's session a fresh timeout, so its owner
    znodes outlive any wait counted from the start of the rebalance. No survivor may give up,
    and its partitions must be owned again once its session expires."""
    topic = topic_factory(partitions=6)
    group = unique_name("failover")
    options = ("--property", "rebalance.max.retries=1",
               "--property", f"rebalance.backoff.ms={CLAIM_BACKOFF_S * 1000:.0f}")
    first = [members_on_ensemble(group, topic, name, *options) for name in ("a", "b", "c")]
    zk = connect(zookeeper_ensemble.connect_string)
    try:
        def owners() -> dict[TopicPartition, str]:
            return {tp: consumer_of_thread(thread)
                    for tp, thread in read_owners(zk, group).items()}

        wait_until(lambda: all(m.consumer_id() for m in first)
                   and set(owners().values()) == {m.consumer_id() for m in first}
                   and len(owners()) == 6, timeout=90,
                   message="three members owning two partitions each")
        # Range over six partitions, members in the order of their ids: two each. A fourth
        # member, newest and so last, gets the last partition, whose owner, killed now, never
        # lets go of it.
        crashed = max(first, key=lambda m: m.consumer_id())
        crashed.kill()
        joining = members_on_ensemble(group, topic, "d", *options)
        wait_until(lambda: joining.log_events("partitions still owned by others; waiting for "
                                              "their release"), timeout=60,
                   message="the new member to wait for the crashed one")
        contested_at = time.monotonic()
        # Leader failovers, each giving the crashed member's session a fresh timeout, until
        # that session outlives the new member's second attempt (and the last failover is over
        # before it): today's member gives up there, its wait being over.
        while True:
            leader = zookeeper_ensemble.leader()
            zookeeper_ensemble.stop_server(leader)
            zookeeper_ensemble.wait_until_serving(timeout=30)
            last_failover_at = time.monotonic()
            zookeeper_ensemble.start_server(leader)  # a follower joining disturbs no client
            if last_failover_at - contested_at > CLAIM_BACKOFF_S - SESSION_TIMEOUT_MS / 1000:
                break
        survivors = [m for m in first if m is not crashed] + [joining]
        live_ids = {m.consumer_id() for m in survivors}
        wait_until(lambda: len(owners()) == 6 and set(owners().values()) == live_ids,
                   timeout=2 * SESSION_TIMEOUT_MS / 1000 + 10,
                   message=f"the crashed member's partitions to be owned again: {owners()}")
        owned_again_s = time.monotonic() - last_failover_at
        for member in survivors:
            assert member.process.poll() is None, f"{member.name} exited: {member.log_tail()}"
            assert not member.log_events("consumer failed"), member.log_tail()
        assert owned_again_s <= SESSION_TIMEOUT_MS / 1000 + 10
    finally:
        zk.stop()
        zk.close()

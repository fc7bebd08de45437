"""A member whose whole process is frozen (SIGSTOP: a long GC pause, a VM migrated, a container
throttled) for more than twice its session while the group's other members take its
partitions, then thawed (SIGCONT).

Three `zkconsumer consume` workers share a group; each application takes 12 ms a message, and
a burst leaves each with more fetched than it can hand out in a session. The victim is frozen
while it works through its share, so its queue still holds fetched messages of partitions the
others deliver meanwhile. When it runs again its streams run before its coordination thread
learns anything: its lease (renewed only by answers from ZooKeeper in its session, or by
heartbeats answered in its Kafka generation) lapsed during the freeze, so it hands out none of
them. Judged from the delivery times and offsets of all three: no message the victim delivers
after the thaw is one another member delivered during the freeze, no partition is delivered
by two members at once (as the fault runner judges it), and every message produced is
consumed."""

from __future__ import annotations

import signal
import time

import pytest
from support.kafka import produce, steady_producer
from support.waiting import wait_until

from zkconsumer.testing import delivery_log
from zkconsumer.testing.consume_process import ConsumeProcess
from zkconsumer.testing.delivery_overlap import overlaps

pytestmark = pytest.mark.integration

PARTITIONS = 6  # two per member
DELAY_S = 0.012  # the application, per message
BURST = 1800  # 600 per member: 7 s of its application, more than a session
STINT_GAP_S = 0.3  # as the fault runner judges overlaps
OVERLAP_TOLERANCE_S = 0.1
# The shortest sessions each coordination allows: ZooKeeper's local server two ticks of 2 s,
# the 0.9 broker's group.min.session.timeout.ms.
SESSIONS_S = {"zookeeper": 4.0, "kafka": 6.0}


def _options(coordination: str, cluster) -> tuple[str, ...]:
    session_ms = str(int(SESSIONS_S[coordination] * 1000))
    if coordination == "zookeeper":
        properties = {"zookeeper.session.timeout.ms": session_ms, "rebalance.backoff.ms": "500",
                      "rebalance.max.retries": "20"}
    else:
        properties = {"group.coordination": "kafka",
                      "bootstrap.servers": cluster.bootstrap_servers,
                      "session.timeout.ms": session_ms, "heartbeat.interval.ms": "500"}
        if cluster.kafka_api_version:
            properties["kafka.api.version"] = ".".join(map(str, cluster.kafka_api_version))
    properties["auto.commit.interval.ms"] = "200"
    return tuple(f"--property={key}={value}" for key, value in properties.items())


# Each run costs about 20 s (three workers, a freeze of more than two sessions, and the
# group's settling after it). Kafka's coordinator runs with the long tests: the default run
# freezes a member there through the fault runner's `freeze` kind
# (test_fault_injection.py's Kafka case), judged the same way.
@pytest.mark.parametrize("coordination", ["zookeeper",
                                          pytest.param("kafka", marks=pytest.mark.long)])
def test_a_frozen_member_hands_out_nothing_another_delivered_while_it_was_frozen(
        cluster, topic_factory, unique_name, tmp_path, coordination):
    session_s = SESSIONS_S[coordination]
    topic = topic_factory(partitions=PARTITIONS)
    group = unique_name("frozen")
    zookeeper = cluster.zookeeper_connect if coordination == "zookeeper" else None
    logs = {name: tmp_path / f"{name}.deliveries" for name in ("a", "b", "victim")}
    workers = {}
    try:
        for name, path in logs.items():
            workers[name] = ConsumeProcess(
                zookeeper, group, topic, tmp_path, name, *_options(coordination, cluster),
                "--property", f"client.id={name}",
                "--handler", "zkconsumer.testing.delivery_log:record",
                environment={delivery_log.ENVIRONMENT_VARIABLE: str(path),
                             delivery_log.DELAY_VARIABLE: str(DELAY_S)})
        victim = workers["victim"]

        def delivered(name: str) -> list[tuple[int, int, float]]:
            return delivery_log.read_delivery_times(logs[name])

        def lately(name: str) -> set[int]:
            """The partitions a worker delivered in the last second."""
            since = time.time() - 1.0
            return {p for p, _o, t in delivered(name) if t > since}

        def settled() -> bool:
            shares = [lately(name) for name in workers]
            return all(len(share) == 2 for share in shares) \
                and len(set().union(*shares)) == PARTITIONS

        with steady_producer(cluster, topic, PARTITIONS) as produced:
            wait_until(settled, timeout=90, message="each worker delivering its two "
                                                    "partitions: " + victim.log_tail(3))
            theirs = lately("victim")  # the victim's share, settled
            burst = [b"burst-%05d" % i for i in range(BURST)]
            produce(cluster, topic, burst, partitions=PARTITIONS)
            produced.extend(burst)
            wait_until(lambda: any(r["value"].startswith("burst-") for r in victim.records()),
                       timeout=30, message="the victim handing out the burst")
            frozen_at = time.time()
            victim.process.send_signal(signal.SIGSTOP)
            try:
                wait_until(lambda: all(any(p == q and t > frozen_at
                                           for name in ("a", "b")
                                           for q, _o, t in delivered(name))
                                       for p in theirs), timeout=60,
                           message="the others delivering the frozen member's partitions")
                time.sleep(max(0.0, frozen_at + 2 * session_s + 1.0 - time.time()))
                thawed_at = time.time()
            finally:
                victim.process.send_signal(signal.SIGCONT)
            # Back in the group: it delivers again, from what it was given anew.
            rebalanced = len(victim.log_events("rebalanced"))
            wait_until(lambda: len(victim.log_events("rebalanced")) > rebalanced
                       and any(t > thawed_at for _p, _o, t in delivered("victim")),
                       timeout=60, message="the thawed member delivering again: "
                                           + victim.log_tail(3))
        everything = {value.decode() for value in produced}

        def consumed() -> set[str]:
            return {r["value"] for worker in workers.values() for r in worker.records()}
        wait_until(lambda: consumed() >= everything, timeout=90,
                   message="every message produced consumed by one worker or another")
        for worker in workers.values():
            assert worker.terminate() == 0, worker.log_tail(5)
    finally:
        for worker in workers.values():
            worker.stop()

    during_freeze = {(p, o) for name in ("a", "b") for p, o, t in delivered(name)
                     if frozen_at < t < thawed_at}
    after_thaw = [(p, o, t) for p, o, t in delivered("victim") if t >= thawed_at]
    stale = [(p, o, round(t - thawed_at, 3)) for p, o, t in after_thaw if (p, o) in during_freeze]
    print(f"{coordination}: frozen {thawed_at - frozen_at:.1f}s; the others delivered "
          f"{len(during_freeze)} messages meanwhile; after the thaw the victim handed out "
          f"{len(after_thaw)}, {len(stale)} of them delivered by another during the freeze")
    assert any(p in theirs for p, _o in during_freeze), "the others never took over"
    assert stale == [], f"handed out after the thaw, though another delivered them: {stale[:10]}"
    found = overlaps({name: delivered(name) for name in workers}, STINT_GAP_S,
                     OVERLAP_TOLERANCE_S)
    assert found == [], found

"""A member on Kafka's group coordinator partitioned from its brokers while it keeps running.

The `zkconsumer consume` worker runs on a host of its own (a network namespace) and reaches
the broker only through zkconsumer.testing's proxy, which is blackholed for twice its session
timeout: nothing it sends arrives, nothing comes back, no connection is closed. Its handler
takes 40 ms a message and a burst just before the cut leaves it more queued than a session
takes to deliver, so it would go on delivering past the takeover if nothing stopped it. A kafka-python
member shares the group from this host. The worker must stop delivering before the coordinator
can give its partitions to the other member (its gate closes a session after its last answered
heartbeat; the coordinator's session runs from the last heartbeat it received), so no partition
is delivered by both at once, judged from both members' delivery times as the fault runner
judges them; after the partition heals the worker joins again and takes its share back, and
every message produced throughout is consumed by one of them."""

from __future__ import annotations

import time

import pytest
from support.coordinator_members import PollingMember
from support.kafka import produce, steady_producer
from support.netns import available, network_namespace
from support.waiting import wait_until

from zkconsumer.testing import delivery_log
from zkconsumer.testing.consume_process import ConsumeProcess
from zkconsumer.testing.delivery_overlap import overlaps
from zkconsumer.testing.tcp_proxy import TcpProxy

pytestmark = pytest.mark.integration

PARTITIONS = 4
SESSION_S = 6.0  # the 0.9 broker's shortest
STINT_GAP_S = 0.3
# kafka-python's deliveries are timed when its poll returns, for the whole batch.
OVERLAP_TOLERANCE_S = 0.1
DELAY_S = 0.04  # the worker's handler, per message
BURST = 800  # 400 for the worker's two partitions: 16 s of its handler, over two sessions


def test_a_member_cut_from_its_brokers_stops_delivering_before_another_takes_over(
        cluster, topic_factory, unique_name, tmp_path):
    reason = available()
    if reason:
        pytest.skip(reason)
    topic = topic_factory(partitions=PARTITIONS)
    group = unique_name("partitioned")
    host, _, port = cluster.bootstrap_servers.partition(",")[0].rpartition(":")
    deliveries = tmp_path / "worker.deliveries"
    properties = {"group.coordination": "kafka", "bootstrap.servers": f"{host}:{port}",
                  "client.id": "zk-member", "session.timeout.ms": str(int(SESSION_S * 1000)),
                  "heartbeat.interval.ms": "300", "auto.commit.interval.ms": "200",
                  "auto.offset.reset": "smallest"}
    if cluster.kafka_api_version:
        properties["kafka.api.version"] = ".".join(map(str, cluster.kafka_api_version))
    theirs = None
    with network_namespace() as namespace, \
            TcpProxy(int(port), host, listen=(namespace.host_address, 0)) as proxy, \
            namespace.forward(int(port), proxy.port):
        worker = ConsumeProcess(
            None, group, topic, tmp_path, "worker",
            *(f"--property={key}={value}" for key, value in properties.items()),
            "--handler", "zkconsumer.testing.delivery_log:record",
            environment={delivery_log.ENVIRONMENT_VARIABLE: str(deliveries),
                         delivery_log.DELAY_VARIABLE: str(DELAY_S)},
            launcher=namespace.launcher)
        try:
            wait_until(worker.has_rebalanced, timeout=30,
                       message=f"the worker's first assignment: {worker.log_tail(3)}")
            theirs = PollingMember(cluster, group, topic, "a-kafka-python",
                                   auto_offset_reset="earliest")
            wait_until(lambda: theirs.owns({0, 1}), timeout=30,
                       message="kafka-python's range share beside the worker")
            with steady_producer(cluster, topic, PARTITIONS) as produced:
                wait_until(lambda: len(delivery_log.read_delivery_times(deliveries)) > 20
                           and len(theirs.values) > 20, timeout=30,
                           message="both members delivering")
                produce(cluster, topic, [b"burst-%04d" % i for i in range(BURST)],
                        partitions=PARTITIONS)
                produced.extend(b"burst-%04d" % i for i in range(BURST))
                # Once it hands out a message of the burst, its fetch of the burst is in its
                # queue: a fetch answers with all that a partition has, up to 1 MiB.
                wait_until(lambda: any(r["value"].startswith("burst-")
                                       for r in worker.records()), timeout=30,
                           message="the worker delivering the burst")
                proxy.blackhole()
                cut_at = time.monotonic()
                wait_until(lambda: theirs.owns({0, 1, 2, 3}), timeout=4 * SESSION_S,
                           message="kafka-python given every partition during the cut")
                taken_over_s = time.monotonic() - cut_at
                time.sleep(max(0.0, 2 * SESSION_S - (time.monotonic() - cut_at)))
                proxy.restore()
                wait_until(lambda: theirs.owns({0, 1}), timeout=30,
                           message="the worker back in the group with its share")
                wait_until(lambda: len(worker.log_events("rebalanced")) >= 3, timeout=30,
                           message="the worker's assignment after the partition healed")
            everything = set(produced)

            def consumed() -> set[bytes]:
                return {r["value"].encode() for r in worker.records()} | set(theirs.values)
            wait_until(lambda: consumed() >= everything, timeout=30,
                       message="every message produced consumed by one member or the other")
            assert taken_over_s > SESSION_S - 1, "the coordinator moved partitions too soon"
            found = overlaps({"worker": delivery_log.read_delivery_times(deliveries),
                              "kafka-python": theirs.delivery_times}, STINT_GAP_S,
                             OVERLAP_TOLERANCE_S)
            assert found == [], found
        finally:
            worker.stop()
            if theirs is not None:
                theirs.close()

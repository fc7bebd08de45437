"""A worker's metrics on the real cluster: what it consumed, its lag as the log grows under a
stream nobody reads, rebalances, commits and fetches counted, /healthz turning 503 when the
member fails, and `zkconsumer consume --metrics-port` serving all of it."""

from __future__ import annotations

import socket
import threading

import pytest
from support.kafka import end_offsets, produce
from support.scrape import get, samples
from support.waiting import wait_until

from zkconsumer import ConsumerConnector
from zkconsumer.errors import ZkConsumerError
from zkconsumer.localcluster.processes import free_port
from zkconsumer.member.state import State
from zkconsumer.zk.group_state import read_members

pytestmark = pytest.mark.integration


def _config(cluster, group: str, **extra: str) -> dict[str, str]:
    config = {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group,
              "auto.offset.reset": "smallest", "consumer.timeout.ms": "30000",
              "rebalance.backoff.ms": "500", **extra}
    if cluster.kafka_api_version:
        config["kafka.api.version"] = ".".join(map(str, cluster.kafka_api_version))
    return config


@pytest.mark.parametrize("backend", ["wire", "kafka-python"])
def test_a_worker_counts_what_it_consumed_and_its_lag_follows_the_log(
        cluster, topic_factory, unique_name, backend):
    topic = topic_factory(partitions=2)
    first = [b"first-%03d" % i for i in range(40)]
    produce(cluster, topic, first, partitions=2)
    # Room in the queue for everything: a stream whose queue is full holds its fetches back,
    # and with them the high watermarks the lag is computed from.
    config = _config(cluster, unique_name("metrics"), **{"auto.commit.enable": "false",
                                                         "queued.max.message.chunks": "50",
                                                         "fetch.backend": backend})
    with ConsumerConnector(config) as connector:
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        consumed = [next(stream) for _ in range(40)]
        stream.mark_consumed()
        committed = connector.commit_offsets()
        assert sorted(m.value for m in consumed) == sorted(first)

        ends = end_offsets(cluster, topic, 2)
        caught_up = {f"{topic}-{tp.partition}": ends[tp.partition] - offset
                     for tp, offset in committed.items()}
        assert caught_up == {f"{topic}-0": 0, f"{topic}-1": 0}
        figures = wait_until(lambda: (f := connector.metrics())["partition_lag"] == caught_up
                             and f, timeout=30, message="lag 0 on both partitions")
        assert figures["messages_consumed"] == {topic: 40}
        assert figures["max_lag"] == 0
        assert figures["owned_partitions"] == 2
        assert figures["topic_owned_partitions"] == {topic: 2}
        assert figures["rebalances"]["success"] >= 1
        assert figures["rebalances"]["failure"] == 0
        assert figures["commits"]["zookeeper"]["success"] >= 1
        if backend == "wire":  # kafka-python's fetch requests are out of sight
            ((broker, fetches),) = figures["fetch_requests"].items()
            assert fetches > 0
            assert figures["fetch_duration_seconds"][broker]["count"] >= fetches
        else:
            assert figures["fetch_requests"] == {}

        # Nobody reads the stream now: the log grows, the fetcher learns of it, the lag grows.
        second = [b"second-%03d" % i for i in range(20)]
        produce(cluster, topic, second, partitions=2)
        # The high watermark and the queued chunk of one response are recorded one after the
        # other, so a scrape between the two may see the one without the other: wait for both.
        queued_bytes = {topic: sum(map(len, first + second))}
        figures = wait_until(
            lambda: (f := connector.metrics())["partition_lag"] == {f"{topic}-0": 10,
                                                                    f"{topic}-1": 10}
            and f["bytes_consumed"] == queued_bytes and f,
            timeout=30, message="lag 10 on both partitions and the second chunks queued")
        assert figures["max_lag"] == 10
        assert figures["messages_consumed"] == {topic: 40}, "nothing more was handed out"
        assert figures["fetch_queue_chunks"] >= 1


def test_dual_commit_counts_each_storage(cluster, topic_factory, unique_name):
    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"m-%d" % i for i in range(5)], partitions=1)
    config = _config(cluster, unique_name("dual"), **{"offsets.storage": "kafka",
                                                      "auto.commit.enable": "false"})
    with ConsumerConnector(config) as connector:
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        for _ in range(5):
            next(stream)
        connector.commit_offsets()
        commits = connector.metrics()["commits"]
    assert commits["kafka"]["success"] >= 1
    assert commits["zookeeper"]["success"] >= 1
    assert "failure" not in commits["kafka"]


def test_healthz_turns_503_when_the_member_fails(cluster, zk, topic_factory, unique_name):
    topic = topic_factory(partitions=2)
    group = unique_name("health")
    port = free_port()
    refuse = threading.Event()

    def revoked(_partitions):
        if refuse.is_set():
            raise RuntimeError("cannot give partitions back now")

    failing = ConsumerConnector(_config(cluster, group, **{"metrics.port": str(port)}),
                                on_partitions_revoked=revoked)
    other = None
    try:
        failing.create_message_streams({topic: 1})
        assert failing.wait_until_stable(timeout=60)
        healthy = f"registered in group {group} as {failing.consumer_id} (stable)\n"
        assert get(port, "/healthz") == (200, healthy)
        refuse.set()
        other = ConsumerConnector(_config(cluster, group))  # its arrival revokes a partition
        other.create_message_streams({topic: 1})
        wait_until(lambda: failing.state is State.FAILED, timeout=60,
                   message="the member to fail in its revoked callback")
        with pytest.raises(ZkConsumerError, match="cannot give partitions back now"):
            failing.wait_until_stable(timeout=0)
        status, why = get(port, "/healthz")
        assert status == 503
        assert why == ("failed: the on_partitions_revoked callback raised RuntimeError: "
                       "cannot give partitions back now\n")
        assert failing.metrics()["rebalances"]["failure"] == 1
        wait_until(lambda: failing.consumer_id not in read_members(zk, group), timeout=30,
                   message="the failed member to leave the group")
        assert get(port, "/healthz")[0] == 503, "a member that left is not healthy"
    finally:
        failing.shutdown()
        if other is not None:
            other.shutdown()


def test_consume_serves_metrics_and_refuses_a_port_in_use(
        cluster, zk, topic_factory, unique_name, cli_members):
    topic = topic_factory(partitions=2)
    group = unique_name("cli")
    produce(cluster, topic, [b"m-%02d" % i for i in range(30)], partitions=2)
    port = free_port()
    worker = cli_members(group, topic, "worker", "--metrics-port", str(port))
    wait_until(lambda: len(worker.records()) == 30, timeout=60, message="30 messages")

    def consumed() -> float | None:
        found = samples(get(port, "/metrics")[1])
        return found.get(("zkconsumer_messages_consumed_total", (("topic", topic),)))

    wait_until(lambda: consumed() == 30, timeout=30, message="30 messages counted")
    assert get(port, "/healthz")[0] == 200

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        refused = cli_members(group, topic, "refused", "--metrics-port", str(busy))
        assert refused.process.wait(timeout=60) == 1
        assert (f"error: cannot serve metrics on 127.0.0.1:{busy}: Address already in use"
                in refused.log.read_text().splitlines()), refused.log_tail()
    assert list(read_members(zk, group)) == [worker.consumer_id()], "the refused one joined"
    assert worker.terminate() == 0


def test_a_member_on_kafkas_coordinator_serves_the_same_metrics(
        cluster, topic_factory, unique_name):
    """group.coordination=kafka: what it consumed, its lag, its rebalances (the generations it
    was given), its commits through the coordinator, and /healthz."""
    topic = topic_factory(partitions=2)
    values = [b"k-%02d" % i for i in range(20)]
    produce(cluster, topic, values, partitions=2)
    group = unique_name("kafka-metrics")
    port = free_port()
    config = {"group.id": group, "group.coordination": "kafka",
              "bootstrap.servers": cluster.bootstrap_servers, "auto.offset.reset": "smallest",
              "auto.commit.enable": "false", "heartbeat.interval.ms": "300",
              "metrics.port": str(port)}
    if cluster.kafka_api_version:
        config["kafka.api.version"] = ".".join(map(str, cluster.kafka_api_version))
    with ConsumerConnector(config) as connector:
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        consumed = [next(stream) for _ in range(20)]
        assert sorted(m.value for m in consumed) == sorted(values)
        stream.mark_consumed()
        connector.commit_offsets()
        figures = wait_until(lambda: (f := connector.metrics())["max_lag"] == 0 and f,
                             timeout=30, message="lag 0")
        assert figures["messages_consumed"] == {topic: 20}
        assert figures["owned_partitions"] == 2
        assert figures["rebalances"]["success"] >= 1
        assert figures["commits"]["kafka"]["success"] >= 1
        scraped = samples(get(port, "/metrics")[1])
        assert scraped[("zkconsumer_messages_consumed_total", (("topic", topic),))] == 20
        status, health = get(port, "/healthz")
        assert status == 200 and health.startswith(f"registered in group {group}"), health
    assert wait_until(lambda: _refused(port), timeout=10, message="the server to stop")


def _refused(port: int) -> bool:
    try:
        get(port, "/healthz")
    except OSError:
        return True
    return False

"""A real Prometheus server scrapes a `zkconsumer consume` worker and `zkconsumer exporter`,
and PromQL over what it stored gives the lag and the counts the cluster holds."""

from __future__ import annotations

import pytest
from support.exporter import lag_of
from support.kafka import produce
from support.legacy_groups import kafka_version_args, write_offsets
from support.prometheus import start_prometheus
from support.waiting import wait_until

from zkconsumer.localcluster.processes import free_port

pytestmark = pytest.mark.integration


def value_of(result: list[dict]) -> float | None:
    """The one sample of an instant query, or None while there is none."""
    return float(result[0]["value"][1]) if len(result) == 1 else None


def test_prometheus_scrapes_a_worker_and_the_exporter(
        cluster, zk, topic_factory, unique_name, cli_members, exporter_process,
        prometheus_binary, work_root):
    topic = topic_factory(partitions=2)
    produce(cluster, topic, [b"m-%02d" % i for i in range(20)], partitions=2)  # 10 each
    behind, working = unique_name("behind"), unique_name("working")
    write_offsets(zk, behind, topic, {0: 3, 1: 10})
    worker_port = free_port()
    worker = cli_members(working, topic, "worker", "--metrics-port", str(worker_port))
    exporter = exporter_process("--zookeeper", cluster.zookeeper_connect, "--interval", "0.5s",
                                "--group-regex", f"({behind}|{working})",
                                *kafka_version_args(cluster))
    wait_until(lambda: len(worker.records()) == 20, timeout=60, message="the worker's 20")
    wait_until(lambda: lag_of(exporter.scrape(), behind, topic, 0) == 7, timeout=60,
               message="the exporter's first scan")

    prometheus = start_prometheus(work_root / "prometheus", prometheus_binary, {
        "worker": f"127.0.0.1:{worker_port}", "exporter": f"127.0.0.1:{exporter.port}"})
    try:
        prometheus.wait_for_targets_up(timeout=60)
        lag = prometheus.wait_for(f'zkconsumer_group_lag{{group="{behind}",partition="0"}}',
                                  lambda result: value_of(result) == 7, timeout=60)
        assert lag[0]["metric"]["job"] == "exporter"
        total = prometheus.wait_for(
            f'sum by (consumergroup) (kafka_consumergroupzookeeper_lag_zookeeper'
            f'{{consumergroup="{behind}"}})', lambda result: value_of(result) == 7, timeout=60)
        assert total[0]["metric"] == {"consumergroup": behind}
        prometheus.wait_for(f'zkconsumer_messages_consumed_total{{topic="{topic}"}}',
                            lambda result: value_of(result) == 20, timeout=60)
        prometheus.wait_for(f'sum(zkconsumer_partition_lag{{topic="{topic}"}})',
                            lambda result: value_of(result) == 0, timeout=60)
        owned = prometheus.wait_for(f'count(zkconsumer_partition_owned{{group="{working}"}})',
                                    lambda result: value_of(result) == 2, timeout=60)
        assert value_of(owned) == 2
        orphaned = prometheus.query(
            f'zkconsumer_partition_owned{{group="{working}"}} == 0 '
            f'and on(group) zkconsumer_group_members > 0')
        assert orphaned == [], "every partition of the working group has an owner"
    finally:
        prometheus.stop()
    assert worker.terminate() == 0
    assert exporter.stop() == 0

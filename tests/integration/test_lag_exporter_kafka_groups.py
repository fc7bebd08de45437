"""The lag exporter watching groups on Kafka's group coordinator, as operators run it: a
kafka-python consumer group that lags, on the 0.9.0.1 cluster and on a ZooKeeper-less broker
(Tansu), seen under kafka_exporter's metric names and Burrow's paths."""

from __future__ import annotations

import json

import pytest
from support.coordinator_members import member_at
from support.exporter import get
from support.kafka import produce
from support.legacy_groups import kafka_version_args
from support.offsets import commit_in_kafka
from support.waiting import wait_until

from zkconsumer.model import TopicPartition

pytestmark = pytest.mark.integration


def kafka_lag(found: dict, group: str, topic: str, partition: int) -> float | None:
    return found.get(("kafka_consumergroup_lag", (("consumergroup", group),
                                                  ("partition", str(partition)),
                                                  ("topic", topic))))


def burrow_status(port: int, group: str) -> dict:
    status, body = get(port, f"/v3/kafka/local/consumer/{group}/status")
    return json.loads(body)["status"] if status == 200 else {}


def test_a_lagging_kafka_group_shows_its_lag_and_err_through_kafka_exporter_and_burrow(
        cluster, topic_factory, unique_name, exporter_process):
    """Its member is alive and owns the partition but its offset does not move: STALL, which
    Burrow answers ERR. Once the member leaves, a 0.9 coordinator no longer lists the group,
    which the exporter goes on watching while Kafka holds its offsets: STOP."""
    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"m-%02d" % i for i in range(20)], partitions=1)
    group = unique_name("kafka-group")
    exporter = exporter_process("--zookeeper", cluster.zookeeper_connect, "--interval", "0.3s",
                                "--window-samples", "2", "--group-regex", group,
                                *kafka_version_args(cluster))
    with member_at(cluster.bootstrap_servers, cluster.kafka_api_version, group, topic, 5):
        found = wait_until(lambda: (f := exporter.scrape()) and kafka_lag(f, group, topic, 0)
                           == 15 and f, timeout=30, message="the Kafka group's lag")
        assert found[("kafka_consumergroup_members", (("consumergroup", group),))] == 1
        assert found[("kafka_consumergroup_current_offset", (
            ("consumergroup", group), ("partition", "0"), ("topic", topic)))] == 5
        stalled = wait_until(lambda: (s := burrow_status(exporter.port, group)).get(
            "status") == "ERR" and s, timeout=30, message="Burrow's ERR for the group")
        assert [(p["partition"], p["status"], p["current_lag"]) for p in
                stalled["partitions"]] == [(0, "STALL", 15)]
    stopped = wait_until(lambda: (s := burrow_status(exporter.port, group)).get(
        "partitions") and s["partitions"][0]["status"] == "STOP" and s, timeout=30,
        message="the group seen stopping after its member left")
    assert stopped["status"] == "ERR"
    assert exporter.stop() == 0


def test_an_exporter_without_zookeeper_lists_a_stopped_kafka_group_with_its_lag(
        modern_broker, modern_topic_factory, unique_name, exporter_process):
    """Only --bootstrap-server, as for a KRaft cluster. Offsets in Kafka and no member: a
    newer broker lists such a group (Empty), so it is watched whether or not the exporter saw
    it alive."""
    from support.tansu import produce as produce_modern

    topic = modern_topic_factory(partitions=2)
    # One record per batch: Tansu's ListOffsets answers the log end only then (see tansu.py).
    produce_modern(modern_broker.bootstrap_servers, topic, [b"r-%d" % i for i in range(10)], 2,
                   batch_each=True)
    group = unique_name("tansu-group")
    commit_in_kafka(modern_broker.bootstrap_servers, group, {TopicPartition(topic, 0): 3})
    exporter = exporter_process("--bootstrap-server", modern_broker.bootstrap_servers,
                                "--interval", "0.3s", "--group-regex", group)
    found = wait_until(lambda: (f := exporter.scrape()) and kafka_lag(f, group, topic, 0) == 2
                       and f, timeout=30, message="the Tansu group's lag")
    assert found[("kafka_consumergroup_members", (("consumergroup", group),))] == 0
    assert kafka_lag(found, group, topic, 1) is None, "no offset committed there"
    listed = json.loads(get(exporter.port, "/v3/kafka/local/consumer")[1])["consumers"]
    assert listed == [group]
    assert burrow_status(exporter.port, group)["totallag"] == 2
    assert exporter.stop() == 0


@pytest.mark.long
def test_a_live_kafka_group_on_a_zookeeper_less_broker_is_described_with_its_member(
        cluster, modern_broker, modern_topic_factory, unique_name, exporter_process):
    """Long only because Tansu 0.6 answers a consumer's JoinGroup after seconds (3 to 13 here,
    with the shortest session and rebalance timeouts it takes): `scripts/test -m long`."""
    from support.tansu import produce as produce_modern

    topic = modern_topic_factory(partitions=1)
    produce_modern(modern_broker.bootstrap_servers, topic, [b"r-%d" % i for i in range(10)], 1,
                   batch_each=True)
    group = unique_name("tansu-group")
    with member_at(modern_broker.bootstrap_servers, None, group, topic, 3,
                   max_poll_interval_ms=1000, session_timeout_ms=1000,
                   heartbeat_interval_ms=200) as member:
        exporter = exporter_process("--zookeeper", cluster.zookeeper_connect,
                                    "--bootstrap-server", modern_broker.bootstrap_servers,
                                    "--interval", "0.3s", "--group-regex", group)

        def lag_with_its_member() -> dict | None:
            member.poll(0)  # within max.poll.interval.ms, to stay in the group
            found = exporter.scrape()
            members = found.get(("kafka_consumergroup_members", (("consumergroup", group),)))
            return found if kafka_lag(found, group, topic, 0) == 7 and members == 1 else None

        wait_until(lag_with_its_member, timeout=30, message="the Tansu group's lag and member")

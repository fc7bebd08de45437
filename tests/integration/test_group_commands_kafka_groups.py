"""`zkconsumer group list|describe` on groups Kafka's group coordinator knows: a kafka-python
consumer group on the 0.9.0.1 cluster (alone, then with offsets in ZooKeeper too), and a group
with only offsets on a ZooKeeper-less broker (Tansu), asked with --bootstrap-server alone."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.coordinator_members import member_at
from support.kafka import produce
from support.legacy_groups import kafka_version_args
from support.offsets import commit_in_kafka

from zkconsumer.cli import cli
from zkconsumer.localcluster.processes import free_port
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import ZookeeperOffsetStore

pytestmark = pytest.mark.integration


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def listed(*connection: str) -> dict[str, dict]:
    code, out, err = run("group", "list", "--json", *connection)
    assert code == 0, err
    return {row["group"]: row for row in json.loads(out)}


def test_a_kafka_group_is_listed_and_described_with_its_member_partitions_and_lag(
        cluster, zk, topic_factory, unique_name):
    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"m-%02d" % i for i in range(20)], partitions=1)
    group = unique_name("kafka-group")
    on_zookeeper = ("--zookeeper", cluster.zookeeper_connect, *kafka_version_args(cluster))
    with member_at(cluster.bootstrap_servers, cluster.kafka_api_version, group, topic, 5):
        row = listed(*on_zookeeper)[group]
        assert (row["where"], row["state"], row["members"], row["storage"], row["lag"]) == \
            ("kafka", "Stable", 1, "kafka", 15)
        assert listed("--bootstrap-server", cluster.bootstrap_servers,
                      *kafka_version_args(cluster))[group]["lag"] == 15, "without ZooKeeper"
        code, out, err = run("group", "describe", "--group", group, "--json", *on_zookeeper)
        assert code == 0, err
        found = json.loads(out)
        coordinator = found["coordinator"]
        [member] = coordinator["members"]
        assert (found["where"], coordinator["state"], coordinator["protocol_type"],
                coordinator["protocol"]) == ("kafka", "Stable", "consumer", "range")
        assert member["assigned"] == {topic: [0]} and member["client_id"].startswith("kafka")
        assert member["client_host"]
        assert [(p["partition"], p["kafka_offset"], p["log_end_offset"], p["lag"], p["owner"])
                for p in found["partitions"]] == [(0, 5, 20, 15, member["member_id"])]
        assert found["members"] == [], "none registered in ZooKeeper"
        code, text, _ = run("group", "describe", "--group", group, *on_zookeeper)
        assert code == 0
        assert "on Kafka's group coordinator: Stable, protocol consumer/range" in text
        assert f"{member['member_id']}" in text and f"{topic}:0" in text

        ZookeeperOffsetStore(zk, group).commit({TopicPartition(topic, 0): 3})
        row = listed(*on_zookeeper)[group]
        assert (row["where"], row["storage"], row["lag"]) == ("both", "both", 15), \
            "one group, its lag from the larger offset"
        code, out, _ = run("group", "list", *on_zookeeper)
        [line] = [line for line in out.splitlines() if line.startswith(group + " ")]
        assert line.split()[1:4] == ["both", "Stable", "1"]


def test_unknown_groups_and_unreachable_brokers_are_one_line(cluster, unique_name):
    code, _, err = run("group", "describe", "--group", unique_name("nobody"), "--zookeeper",
                       cluster.zookeeper_connect, *kafka_version_args(cluster))
    assert code == 1 and "no group" in err and len(err.strip().splitlines()) == 1
    nowhere = f"127.0.0.1:{free_port()}"
    for command in (["list"], ["describe", "--group", "g"]):
        code, _, err = run("group", *command, "--bootstrap-server", nowhere)
        assert code == 1 and nowhere in err and len(err.strip().splitlines()) == 1, err
    code, _, err = run("group", "list")
    assert code == 1 and "--bootstrap-server" in err and len(err.strip().splitlines()) == 1


def test_a_group_with_only_offsets_on_a_zookeeper_less_broker(
        modern_broker, modern_topic_factory, unique_name):
    """Empty on the coordinator: a broker newer than 0.9 keeps such a group listed."""
    from support.tansu import produce as produce_modern

    topic = modern_topic_factory(partitions=2)
    produce_modern(modern_broker.bootstrap_servers, topic, [b"r-%d" % i for i in range(10)], 2,
                   batch_each=True)
    group = unique_name("tansu-group")
    commit_in_kafka(modern_broker.bootstrap_servers, group, {TopicPartition(topic, 0): 3})
    brokers = ("--bootstrap-server", modern_broker.bootstrap_servers)
    row = listed(*brokers)[group]
    assert (row["where"], row["state"], row["members"], row["lag"]) == ("kafka", "Empty", 0, 2)
    code, out, err = run("group", "describe", "--group", group, "--json", *brokers)
    assert code == 0, err
    found = json.loads(out)
    assert found["coordinator"]["members"] == [] and found["coordinator"]["state"] == "Empty"
    assert [(p["partition"], p["kafka_offset"], p["lag"]) for p in found["partitions"]] == \
        [(0, 3, 2), (1, None, None)]

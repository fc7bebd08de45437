"""The first hour of a new user, on the real cluster: the README's main command and the common
admin commands print no `[error]` line and no traceback when nothing is wrong, and say plainly
what is missing when something is. Each runs as `python -m zkconsumer ...`, so that logging is
set up exactly as for a user."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from support.java import require_java
from support.kafka import committed_in_kafka, produce

from zkconsumer.model import TopicPartition
from zkconsumer.offsets import ZookeeperOffsetStore
from zkconsumer.znodes.consumers import ConsumerRegistration
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration

# The console renderer pads the level: "[error    ]".
ERROR_LINE = re.compile(r"^.*\[\s*error\s*\].*$", re.MULTILINE)


def zkconsumer(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zkconsumer", *args], capture_output=True,
                          text=True, timeout=timeout, check=False, env=dict(os.environ))


def assert_calm(result: subprocess.CompletedProcess) -> None:
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output[-3000:]
    assert ERROR_LINE.findall(output) == [], output[-3000:]


@pytest.fixture
def admin(cluster):
    """`zkconsumer ARGS --zookeeper Z` as a user runs it; returns the finished process."""
    def run(*args: str) -> subprocess.CompletedProcess:
        extra = ["--zookeeper", cluster.zookeeper_connect]
        if cluster.kafka_api_version:
            extra += ["--property",
                      "kafka.api.version=" + ".".join(map(str, cluster.kafka_api_version))]
        return zkconsumer(*args, *extra)
    return run


@pytest.fixture
def group_with_offsets(cluster, zk, topic_factory, unique_name):
    """A stopped group with ZooKeeper offsets on a topic holding data: (group, topic)."""
    topic = topic_factory(partitions=2)
    produce(cluster, topic, [f"m{i}".encode() for i in range(10)], partitions=2)
    group = unique_name("calm")
    ZookeeperOffsetStore(zk, group).commit({TopicPartition(topic, 0): 2,
                                            TopicPartition(topic, 1): 5})
    return group, topic


def _register_member(zk, group: str, subscription: dict[str, int]) -> None:
    """A member znode as a running consumer writes it; it goes with the test's session."""
    registration = ConsumerRegistration.static(subscription, 0)
    zk.create(GroupPaths(group).member(f"{group}_member-1"), registration.encode(),
              ephemeral=True, makepath=True)


def test_the_demo_prints_no_error_and_no_traceback():
    require_java()
    # What scripts/run runs with nothing configured: `zkconsumer demo ARGS`.
    result = zkconsumer("demo", "--messages", "20", "--max-messages", "20", timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(result.stdout.splitlines()) == 20
    assert_calm(result)


def test_the_common_admin_commands_print_no_error_and_no_traceback(admin, group_with_offsets):
    group, topic = group_with_offsets
    steps = [
        (("group", "list"), 0),
        (("group", "describe", "--group", group), 0),
        (("offsets", "export", "--group", group), 0),
        (("offsets", "diff", "--group", group), 3),  # Kafka has nothing yet: they differ
        (("offsets", "migrate", "--group", group, "--to", "kafka", "--dry-run"), 0),
        (("offsets", "reset", "--group", group, "--to-earliest"), 0),
        (("offsets", "migrate", "--group", group, "--to", "kafka"), 0),
        (("offsets", "diff", "--group", group), 0),
        (("group", "describe", "--group", group, "--json"), 0),
    ]
    for args, status in steps:
        result = admin(*args)
        assert result.returncode == status, (args, result.stderr)
        assert_calm(result)
    assert topic in result.stdout


def test_describe_of_a_group_waiting_for_a_missing_topic_is_calm_and_says_so(
        admin, zk, unique_name):
    group, missing = unique_name("waiting"), unique_name("not-created")
    _register_member(zk, group, {missing: 1})  # and nothing else: no offsets, no owners
    for _ in range(3):  # the kafka-python errors came and went from run to run
        result = admin("group", "describe", "--group", group)
        assert result.returncode == 0, result.stderr
        assert_calm(result)
        assert f"note: no topic {missing} in ZooKeeper (/brokers/topics)" in result.stderr
    result = admin("group", "describe", "--group", group, "--json")
    assert result.returncode == 0, result.stderr
    described = json.loads(result.stdout)
    assert (described["missing_topics"], described["partitions"]) == ([missing], [])


def test_describe_shows_a_missing_topic_beside_the_existing_ones(admin, zk, group_with_offsets,
                                                                 unique_name):
    group, topic = group_with_offsets
    missing = unique_name("not-created")
    _register_member(zk, group, {missing: 1})
    result = admin("group", "describe", "--group", group, "--json")
    assert result.returncode == 0, result.stderr
    assert_calm(result)
    described = json.loads(result.stdout)
    assert described["missing_topics"] == [missing]
    assert {r["topic"] for r in described["partitions"]} == {topic}


def test_describe_of_only_a_missing_topic_fails_in_one_line(admin, zk, group_with_offsets,
                                                            unique_name):
    group, _ = group_with_offsets
    missing = unique_name("not-created")
    _register_member(zk, group, {missing: 1})
    result = admin("group", "describe", "--group", group, "--topic", missing)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        (f"error: no topic {missing} in ZooKeeper (/brokers/topics) and no offsets of group "
         f"{group} for it")]


def test_describe_with_a_topic_shows_only_that_topic(admin, zk, topic_factory, group_with_offsets):
    group, topic = group_with_offsets
    other = topic_factory(partitions=1)
    ZookeeperOffsetStore(zk, group).commit({TopicPartition(other, 0): 0})
    result = admin("group", "describe", "--group", group, "--topic", topic, "--json")
    assert result.returncode == 0, result.stderr
    assert {(r["topic"], r["partition"]) for r in json.loads(result.stdout)["partitions"]} == \
        {(topic, 0), (topic, 1)}
    result = admin("group", "describe", "--group", group, "--topic", topic)
    assert other not in result.stdout


def test_every_dry_run_says_that_nothing_was_written(admin, cluster, tmp_path,
                                                    group_with_offsets):
    group, topic = group_with_offsets
    exported = tmp_path / "offsets.txt"
    assert admin("offsets", "export", "--group", group, "--output", str(exported)).returncode == 0
    runs = {
        "migrate": admin("offsets", "migrate", "--group", group, "--to", "kafka", "--dry-run"),
        "import": admin("offsets", "import", "--input", str(exported), "--storage", "kafka",
                        "--dry-run"),
        "reset": admin("offsets", "reset", "--group", group, "--to-earliest",
                       "--storage", "kafka"),
    }
    for command, result in runs.items():
        assert result.returncode == 0, (command, result.stderr)
        assert "dry run: nothing written;" in result.stderr, command
    assert committed_in_kafka(cluster, group, topic, 2) == {0: None, 1: None}

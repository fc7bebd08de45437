"""`zkconsumer inspect` against the real cluster, and its errors."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from zkconsumer.localcluster.processes import free_port

pytestmark = pytest.mark.integration


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zkconsumer", *args], check=False, capture_output=True,
                          text=True, timeout=120)


def test_inspect_lists_brokers_and_topics_as_json(cluster, topic_factory):
    topic = topic_factory(partitions=3)
    result = _cli("inspect", "--zookeeper", cluster.zookeeper_connect, "--json")
    assert result.returncode == 0, result.stderr
    described = json.loads(result.stdout)
    assert {b["address"] for b in described["brokers"]} == set(cluster.bootstrap_servers.split(","))
    topics = {t["topic"]: t for t in described["topics"]}
    assert [p["partition"] for p in topics[topic]["partitions"]] == [0, 1, 2]
    assert all(p["leader"] is not None and p["leader"] >= 0 for p in topics[topic]["partitions"])


def test_inspect_prints_tables(cluster, topic_factory):
    topic = topic_factory(partitions=2)
    result = _cli("inspect", "--zookeeper", cluster.zookeeper_connect)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].split() == ["BROKER", "ADDRESS", "RACK", "VERSION"]
    assert any(line.split()[:2] == [topic, "2"] for line in result.stdout.splitlines())


def test_unreachable_zookeeper_is_one_line_within_the_timeout():
    started = time.monotonic()
    result = _cli("inspect", "--zookeeper", f"127.0.0.1:{free_port()}")
    assert result.returncode == 1
    assert result.stderr.strip().startswith("error: cannot reach ZooKeeper at 127.0.0.1:")
    assert len(result.stderr.strip().splitlines()) == 1
    assert time.monotonic() - started < 30

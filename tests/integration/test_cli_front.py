"""`zkconsumer consume` against a live cluster: an option mistake is reported before the member
connects, so the user sees the usage error first and the group is never touched."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_a_usage_error_comes_before_the_member_joins_a_live_cluster(cluster, zk, topic_factory,
                                                                     unique_name):
    topic = topic_factory(partitions=1)
    group = unique_name("front")
    result = subprocess.run(
        [sys.executable, "-m", "zkconsumer", "consume", "--zookeeper", cluster.zookeeper_connect,
         "--group", group, "--topic", topic, "--whitelist", f"{topic}.*"],
        capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("Usage: zkconsumer consume"), result.stderr
    assert "exactly one of --topic, --whitelist or --blacklist" in result.stderr
    assert "shut down" not in result.stderr
    assert zk.exists(f"/consumers/{group}") is None

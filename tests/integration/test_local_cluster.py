"""The local cluster: processes started and stopped by pid, a second broker, leader movement."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.waiting import wait_until

from zkconsumer.localcluster import create_topic
from zkconsumer.localcluster.processes import is_running
from zkconsumer.zk.registry import read_partition_state

pytestmark = pytest.mark.integration


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zkconsumer", *args], check=False, capture_output=True,
                          text=True, timeout=180)


def test_cluster_commands_start_report_and_stop_every_process(cluster, tmp_path):
    if cluster.local is None:
        pytest.skip("the local process cluster is not in use")
    work_dir = tmp_path / "cli-cluster"
    started = _cli("cluster", "start", "--work-dir", str(work_dir), "--json")
    assert started.returncode == 0, started.stderr
    state = json.loads(started.stdout)
    pids = [state["zookeeper"]["pid"]] + [b["pid"] for b in state["brokers"]]
    assert state["zookeeper"]["running"] and all(b["running"] for b in state["brokers"])

    status = _cli("cluster", "status", "--work-dir", str(work_dir), "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["zookeeper"]["pid"] == pids[0]

    again = _cli("cluster", "start", "--work-dir", str(work_dir))
    assert again.returncode == 1
    assert again.stderr.startswith("error: a local cluster is already running")

    stopped = _cli("cluster", "stop", "--work-dir", str(work_dir))
    assert stopped.returncode == 0, stopped.stderr
    assert not any(is_running(pid, str(work_dir.resolve())) for pid in pids)
    assert not work_dir.exists()


def test_status_of_a_folder_without_a_cluster_is_a_one_line_error(tmp_path):
    result = _cli("cluster", "status", "--work-dir", str(tmp_path / "nothing"))
    assert result.returncode == 1
    assert result.stderr.startswith("error: no local cluster was started in")
    assert "Traceback" not in result.stderr


def test_leadership_moves_when_the_second_broker_stops(cluster, zk, second_broker, unique_name):
    topic = unique_name("moving")
    create_topic(zk, topic, partitions=4, replication_factor=2)
    led_by_second = [p for p in range(4)
                     if read_partition_state(zk, topic, p).leader == second_broker.broker_id]
    assert led_by_second, "the new broker leads none of the partitions"

    cluster.local.stop_broker(second_broker.broker_id, graceful=True)

    def all_led_elsewhere():
        states = [read_partition_state(zk, topic, p) for p in range(4)]
        return all(s.leader not in (-1, second_broker.broker_id) for s in states)

    wait_until(all_led_elsewhere, timeout=60, message="leaders to move off the stopped broker")

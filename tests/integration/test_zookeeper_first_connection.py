"""A worker's first ZooKeeper connection at a busy time: one the server holds (a TCP proxy that
lets nothing through, as a starved server answers nobody) is tried again until the server
answers, and the worker joins its group; one refused fails at once, in one line, as before."""

from __future__ import annotations

import threading
import time

import pytest
from click.testing import CliRunner

from tests.support.log_capture import captured_logs
from tests.support.waiting import wait_until
from zkconsumer import ConsumerConnector
from zkconsumer.cli import cli
from zkconsumer.localcluster.processes import free_port
from zkconsumer.testing.tcp_proxy import TcpProxy

pytestmark = pytest.mark.integration

CONNECTION_TIMEOUT_S = 1.5


def test_a_first_connection_held_twice_the_timeout_is_tried_again_and_the_worker_joins(
        cluster, topic_factory, unique_name):
    topic = topic_factory(partitions=2)
    server = cluster.zookeeper_connect.split("/")[0].split(",")[0]
    host, _, port = server.rpartition(":")
    started: list = []
    with TcpProxy(int(port), host) as proxy, captured_logs() as logs:
        proxy.blackhole()
        began = time.monotonic()

        def start() -> None:
            try:
                started.append(ConsumerConnector({
                    "zookeeper.connect": proxy.address, "group.id": unique_name("slow-start"),
                    "consumer.id": "patient",
                    "zookeeper.connection.timeout.ms": str(int(CONNECTION_TIMEOUT_S * 1000)),
                    "zookeeper.startup.deadline.ms": "30000"}))
            except BaseException as exc:  # noqa: BLE001 - what the test looks at
                started.append(exc)

        threading.Thread(target=start, daemon=True).start()
        retried = lambda: [e for e in logs if e["event"].startswith("ZooKeeper slow")]  # noqa: E731
        wait_until(lambda: retried() and time.monotonic() - began >= 2 * CONNECTION_TIMEOUT_S,
                   timeout=30, interval=0.05, message="a first try that timed out")
        assert not started, "the start ended while the server was held"
        proxy.restore()
        (connector,) = wait_until(lambda: started, timeout=30, message="the connector")
        assert isinstance(connector, ConsumerConnector), connector
        try:
            connector.create_message_streams({topic: 1})
            assert connector.wait_until_stable(timeout=30)
            assert len(connector.owned_partitions()) == 2
        finally:
            connector.shutdown()
    assert retried()[0]["tries"] == 1 and retried()[0]["retry_in_ms"] > 0


def test_a_refused_first_connection_still_fails_at_once_in_one_line(topic_factory):
    topic = topic_factory(partitions=1)
    began = time.monotonic()
    result = CliRunner().invoke(cli, [
        "consume", "--zookeeper", f"127.0.0.1:{free_port()}", "--group", "refused",
        "--topic", topic, "--property",
        f"zookeeper.connection.timeout.ms={int(CONNECTION_TIMEOUT_S * 1000)}"])
    elapsed = time.monotonic() - began
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code != 0
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: cannot reach ZooKeeper") and "within 1.5s" in lines[0]
    assert "tries" not in lines[0]  # one try, not the start-up deadline's retries
    # One connection timeout, as before: a retry would have added another.
    assert elapsed < 2 * CONNECTION_TIMEOUT_S + 1.0, elapsed

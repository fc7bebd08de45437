"""Before a kafka-python client is opened, one connection of the wire client's tells an
unreachable broker, a broker that answers in a form no Kafka version explains, and a 0.9 broker
(which leaves ApiVersions unanswered) apart within seconds, where kafka-python waited out its
30 s bootstrap and said "Unable to bootstrap" for all three."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest
from support.kafka import end_offsets, produce

from zkconsumer.fetch import LogOffsets, LogOffsetsError
from zkconsumer.localcluster.processes import free_port
from zkconsumer.model import TopicPartition

pytestmark = pytest.mark.integration

# The wait for a 0.9 broker's silence (5 s), and time to spare on shared machines.
FAST_S = 12.0


def _latest(bootstrap_servers: str, partitions: list[TopicPartition]):
    offsets = LogOffsets(bootstrap_servers, None)  # no kafka.api.version
    try:
        return offsets.latest(partitions)
    finally:
        offsets.close()


def test_a_0_9_broker_without_kafka_api_version_is_recognised_not_called_unreachable(
        cluster, topic_factory):
    if cluster.kafka_api_version != (0, 9):
        pytest.skip("needs the 0.9.0.1 session broker")
    topic = topic_factory(partitions=2)
    produce(cluster, topic, [b"a", b"b", b"c"], partitions=2)
    started = time.monotonic()
    found = _latest(cluster.bootstrap_servers, [TopicPartition(topic, p) for p in (0, 1)])
    assert time.monotonic() - started < FAST_S
    ends = end_offsets(cluster, topic, 2)
    assert found == {TopicPartition(topic, p): ends[p] for p in (0, 1)}


def test_a_member_reaches_a_0_9_broker_through_bootstrap_server_without_kafka_api_version(
        cluster, topic_factory, unique_name):
    if cluster.kafka_api_version != (0, 9):
        pytest.skip("needs the 0.9.0.1 session broker")
    topic = topic_factory(partitions=2)
    values = [f"v-{i}".encode() for i in range(10)]
    produce(cluster, topic, values, partitions=2)
    result = subprocess.run(
        [sys.executable, "-m", "zkconsumer", "consume", "--zookeeper", cluster.zookeeper_connect,
         "--bootstrap-server", cluster.bootstrap_servers, "--group", unique_name("g"),
         "--topic", topic, "--from-beginning", "--max-messages", str(len(values)),
         "--format", "value"],
        capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr[-2000:]
    assert sorted(result.stdout.split()) == sorted(v.decode() for v in values)
    assert "Unable to bootstrap" not in result.stderr


def test_an_unreachable_broker_is_named_at_once():
    nobody = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(LogOffsetsError, match=f"cannot reach Kafka at {nobody}: cannot connect"):
        _latest(nobody, [TopicPartition("t", 0)])
    assert time.monotonic() - started < FAST_S


def test_a_broker_answering_in_a_form_no_version_explains_is_not_called_unreachable():
    listener = socket.create_server(("127.0.0.1", 0))

    def answer_nonsense() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(1024)
            # the right correlation id (0), then a body ApiVersions v0 cannot have
            connection.sendall(b"\x00\x00\x00\x07" + b"\x00\x00\x00\x00" + b"\x00\x00\xff")
            connection.recv(1024)  # until the client closes

    server = threading.Thread(target=answer_nonsense, daemon=True)
    server.start()
    address = f"127.0.0.1:{listener.getsockname()[1]}"
    try:
        with pytest.raises(LogOffsetsError) as failure:
            _latest(address, [TopicPartition("t", 0)])
    finally:
        listener.close()
    line = str(failure.value)
    assert f"broker {address} answered ApiVersions in a form that does not parse" in line
    assert "cannot reach" not in line
    server.join(timeout=10)

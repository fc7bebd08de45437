"""The local cluster's servers start even when another process takes their port first."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from support.java import require_java

from zkconsumer.localcluster import cluster as cluster_module
from zkconsumer.localcluster.cluster import LocalCluster
from zkconsumer.localcluster.processes import free_port


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port another process listens on, as when an outgoing connection or another test's
    server takes the port between its choice and the server binding it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", free_port()))
        sock.listen()
        yield sock.getsockname()[1]


def _first_taken_then_free(taken: int):
    ports = iter([taken])
    return lambda: next(ports, None) or free_port()


def test_zookeeper_and_a_broker_move_to_another_port_when_theirs_was_taken(tmp_path, taken_port,
                                                                           monkeypatch):
    require_java()
    cluster = LocalCluster(tmp_path / "cluster")
    try:
        monkeypatch.setattr(cluster_module, "free_port", _first_taken_then_free(taken_port))
        zookeeper = cluster.start_zookeeper()
        assert zookeeper.port != taken_port
        monkeypatch.setattr(cluster_module, "free_port", _first_taken_then_free(taken_port))
        broker = cluster.add_broker()
        assert broker.port != taken_port
        assert cluster.is_running()
    finally:
        cluster.stop()

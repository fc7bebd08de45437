"""A shutdown from another thread while `create_message_streams` is still starting, because
ZooKeeper went away after the connector connected: the shutdown returns within its timeout, the
starting call raises at once, and nothing is left registered in the group."""

from __future__ import annotations

import threading
import time

import pytest
from kazoo.exceptions import NoNodeError

from zkconsumer import ConsumerConnector
from zkconsumer.errors import ZkConsumerError
from zkconsumer.testing.tcp_proxy import TcpProxy
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration

SHUTDOWN_S = 3.0
# Long enough for the starting call to be well inside its retries, short of their end (~15 s).
BLOCKED_S = 2.0


@pytest.fixture
def zookeeper_proxy(cluster):
    server = cluster.zookeeper_connect.split("/")[0].split(",")[0]
    host, _, port = server.rpartition(":")
    with TcpProxy(int(port), host) as proxy:
        yield proxy


# Where the start waits: registering the member (brokers given, so neither they nor the topics
# are read from ZooKeeper), or reading the broker registry before anything is opened.
WAITING_IN = {"registration": True, "broker registry": False}


@pytest.mark.parametrize("waiting_in", sorted(WAITING_IN))
def test_a_shutdown_while_starting_without_zookeeper_ends_the_start_and_registers_nothing(
        cluster, zk, topic_factory, unique_name, zookeeper_proxy, waiting_in):
    topic = topic_factory(partitions=2)
    group = unique_name("starting")
    config = {"zookeeper.connect": zookeeper_proxy.address, "group.id": group,
              "consumer.id": "starting", "zookeeper.session.timeout.ms": "4000"}
    if WAITING_IN[waiting_in]:
        config["bootstrap.servers"] = cluster.bootstrap_servers
    connector = ConsumerConnector(config)
    zookeeper_proxy.cut()
    outcome: list = []
    done = threading.Event()

    def start() -> None:
        try:
            outcome.append(connector.create_message_streams({topic: 1}))
        except BaseException as exc:  # noqa: BLE001 - what the test looks at
            outcome.append(exc)
        finally:
            done.set()

    threading.Thread(target=start, daemon=True).start()
    assert not done.wait(BLOCKED_S), f"the start did not wait for ZooKeeper: {outcome}"
    began = time.monotonic()
    connector.shutdown(timeout=SHUTDOWN_S)
    took = time.monotonic() - began
    assert took < SHUTDOWN_S + 0.5, f"the shutdown took {took:.1f}s"
    assert done.wait(2.0), "the starting call went on after the shutdown"
    (error,) = outcome
    assert isinstance(error, ZkConsumerError), repr(error)
    assert "shut down while it was starting" in str(error)
    zookeeper_proxy.restore()
    try:
        registered = zk.get_children(GroupPaths(group).ids)
    except NoNodeError:
        registered = []
    assert registered == []

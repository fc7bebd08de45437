"""Reads of a level of znodes as multi-reads on a server that serves them (Debian's ZooKeeper
3.8), one request per znode on one that does not (the bundle's 3.4.6): the same answers either
way, a fraction of the server's packets, and a server that refuses one costs a reconnection of
the same session, not a failed read."""

from __future__ import annotations

import math

import pytest
from kazoo.exceptions import ConnectionLoss, NoAuthError
from kazoo.security import make_digest_acl
from support.waiting import wait_until

from zkconsumer.localcluster import LocalCluster
from zkconsumer.zk import multi_read
from zkconsumer.zk.four_letters import ask, parse_mntr
from zkconsumer.zk.session import zookeeper_session
from zkconsumer.zk.znode_reader import KazooReader

pytestmark = pytest.mark.integration

ZNODES = 300


@pytest.fixture(scope="module")
def debian_zookeeper(work_root):
    cluster = LocalCluster.start(work_root / "multi-read-zookeeper", brokers=0,
                                 debian_zookeeper=True)
    yield cluster
    cluster.stop(remove_data=True)


def packets_received(port: int) -> int:
    return int(parse_mntr(ask(("127.0.0.1", port), b"mntr", 5.0))["zk_packets_received"])


def level(zk, root: str) -> list[str]:
    zk.ensure_path(root)
    for index in range(ZNODES):
        zk.create_async(f"{root}/n{index:04d}", f'{{"n":{index}}}'.encode(), ephemeral=bool(index % 2))
    zk.sync(root)
    zk.set(f"{root}/n0000", b"changed")
    # one missing znode among them, and one read that only its own ACL's holder may do
    zk.create(f"{root}/locked", b"x", acl=[make_digest_acl("someone", "secret", all=True)])
    return [f"{root}/n{index:04d}" for index in range(ZNODES)] + [f"{root}/gone"]


def one_by_one(zk, paths: list[str]) -> dict[str, tuple[bytes, int, int]]:
    found = {}
    for path in paths:
        if zk.exists(path):
            data, stat = zk.get(path)
            found[path] = (data, stat.ephemeralOwner, stat.version)
    return found


def test_a_level_is_read_in_a_few_requests_with_the_same_answers(debian_zookeeper, unique_name):
    root = f"/{unique_name('multi')}"
    with zookeeper_session(debian_zookeeper.zookeeper_connect) as zk:
        paths = level(zk, root)
        assert multi_read.served(zk)
        before = packets_received(debian_zookeeper.zookeeper.port)
        nodes = KazooReader(zk).data(paths)
        sent = packets_received(debian_zookeeper.zookeeper.port) - before
        assert sent <= ZNODES // multi_read.BATCH + 2, sent
        assert {path: (node.data, node.session, node.version) for path, node in nodes.items()} \
            == one_by_one(zk, paths)
        assert nodes[f"{root}/n0001"].session == zk.client_id[0]
        assert nodes[f"{root}/n0000"].version == 1
        children = KazooReader(zk).children([root, f"{root}/n0001", "/nowhere"])
        assert sorted(children[root]) == sorted(zk.get_children(root))
        assert children[f"{root}/n0001"] == [] and "/nowhere" not in children
        with pytest.raises(NoAuthError):
            KazooReader(zk).data([f"{root}/n0001", f"{root}/locked"])


def test_a_server_that_does_not_serve_it_is_read_one_znode_per_request(cluster, zk, unique_name):
    root = f"/{unique_name('single')}"
    paths = level(zk, root)
    if multi_read.served(zk):
        pytest.skip("the cluster under test's ZooKeeper serves multi-reads")
    port = int(cluster.zookeeper_connect.rsplit(":", 1)[1])
    before = packets_received(port)
    nodes = KazooReader(zk).data(paths)
    assert packets_received(port) - before >= ZNODES
    assert {path: (node.data, node.session, node.version) for path, node in nodes.items()} \
        == one_by_one(zk, paths)


def test_a_server_that_refuses_one_is_not_sent_another_and_the_session_lives_on(cluster,
                                                                                 unique_name):
    with zookeeper_session(cluster.zookeeper_connect) as zk:
        paths = level(zk, f"/{unique_name('refused')}")
        if multi_read.served(zk):
            pytest.skip("the cluster under test's ZooKeeper serves multi-reads")
        session = zk.client_id
        states: list[str] = []
        zk.add_listener(states.append)
        known = multi_read._known(zk)  # as if the server had said 3.6 or later
        known.peer, known.answer, known.until = multi_read._peer(zk), True, math.inf
        with pytest.raises(ConnectionLoss):  # retried by its caller, as any lost connection
            KazooReader(zk).data(paths)
        wait_until(lambda: states[-2:] == ["SUSPENDED", "CONNECTED"], timeout=30,
                   message="the session connected again")
        assert not multi_read.served(zk)
        assert len(KazooReader(zk).data(paths)) == ZNODES
        assert zk.client_id == session

"""A ZooKeeper chroot of a test's own on the shared cluster: a group there can be given a
broker registry or znodes that the rest of the session must not see."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from kazoo.client import KazooClient

from zkconsumer.zk.session import connect


@dataclass
class Chroot:
    connect_string: str  # the cluster's, with the chroot: for the processes under test
    zk: KazooClient  # a client inside it


@contextlib.contextmanager
def private_chroot(cluster, zk: KazooClient, prefix: str) -> Iterator[Chroot]:
    root = f"/{prefix}-{uuid.uuid4().hex[:8]}"
    zk.ensure_path(root)
    inside = connect(cluster.zookeeper_connect + root)
    try:
        yield Chroot(cluster.zookeeper_connect + root, inside)
    finally:
        inside.stop()
        inside.close()
        zk.delete(root, recursive=True)

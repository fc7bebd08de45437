"""A cluster of three brokers replicating every topic three times, the offsets topic too, as
production clusters run: the one the leader and broker faults need (a single broker has no
follower to take over). Always local processes: the tests stop and kill its brokers."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from support.clusters import ClusterUnderTest
from zkconsumer.localcluster import LocalCluster

BROKERS = 3
REPLICATION_FACTOR = 3


@contextlib.contextmanager
def replicated_cluster(work_dir: Path) -> Iterator[ClusterUnderTest]:
    local = LocalCluster.start(work_dir, brokers=BROKERS, replication_factor=REPLICATION_FACTOR)
    try:
        yield ClusterUnderTest(local.zookeeper_connect, local.bootstrap_servers, (0, 9),
                               kind="local-replicated", local=local)
    finally:
        local.stop(remove_data=True)

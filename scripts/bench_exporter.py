"""The lag exporter at a cluster's scale: --groups groups of --group-partitions partitions each
(offsets in ZooKeeper, half of the groups with a registered member owning every partition),
served over HTTP after the first scan.

Measured: loading /consumers into the watch cache and the first scan (together: the time to
the first full scan), a scrape of /metrics (its size, median and worst of --scrapes), a Burrow
status request, the exporter's page (`/`, its first page of groups, and the worst group's
page, alone and while a scan runs), the process's RSS after the first scan and at its peak, and the ZooKeeper
requests of the load and of one steady-state scan, counted two ways: by type, as the
exporter's own client submits them, and as the server's packet counter (`srvr`) moves, which
also counts the brokers' requests and the sessions' pings. As the peer: what a scrape costs
when every group is read from ZooKeeper again at each one, as kafka_exporter's ZooKeeper mode
does (the same reads `group list` makes, plus the log ends).

The exporter runs inside the bench process, which also holds the bench's own ZooKeeper session
and its lists of groups and topics: the RSS before the exporter started is printed beside.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from kafka import KafkaAdminClient, KafkaProducer, OffsetAndMetadata
from kafka import TopicPartition as KafkaTopicPartition
from kafka.errors import KafkaError
from kazoo.client import KazooClient

from zkconsumer.exporter.group_story import worst_first
from zkconsumer.exporter.kafka_reads import ClusterReads
from zkconsumer.exporter.service import ExporterSettings, LagExporter
from zkconsumer.exporter.zk_groups import GroupsCache
from zkconsumer.fetch import KafkaAccess, LogOffsets
from zkconsumer.lag.status import WindowRules
from zkconsumer.localcluster import LocalCluster, create_topic
from zkconsumer.localcluster.topics import wait_for_leaders
from zkconsumer.metrics import MetricsServer
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import KafkaReadError
from zkconsumer.topology import open_topic_source
from zkconsumer.zk import four_letters
from zkconsumer.zk.group_state import list_groups, read_group_state
from zkconsumer.zk.session import zookeeper_session
from zkconsumer.znodes.consumers import ConsumerRegistration, encode_offset, encode_owner
from zkconsumer.znodes.paths import CONSUMERS, GroupPaths

GROUPS_PER_TOPIC = 10
API_VERSION = (0, 9)
# Asynchronous creates in flight at once while the groups are written.
_CREATES_IN_FLIGHT = 2000
_TOPICS_PER_PRODUCER = 20


def exporter(cluster: LocalCluster, args) -> None:
    prefix = f"bench-exporter-{time.time_ns()}"
    started = time.perf_counter()
    with zookeeper_session(cluster.zookeeper_connect) as zk:
        topics = _make_topics(zk, prefix, max(1, args.groups // GROUPS_PER_TOPIC),
                              args.group_partitions)
        _produce(cluster, topics, args.group_partitions)
        groups = _make_groups(zk, prefix, topics, args.groups, args.group_partitions)
        print(f"{len(groups):,} groups and {len(topics)} topics written in "
              f"{time.perf_counter() - started:.0f} s (setting up, not the exporter's figure)")
        _measure(cluster, f"{prefix}-g.*", groups, topics, args,
                 ExporterSettings(30, WindowRules(10, 300)), peer_prefix=prefix)
        if args.kafka_groups:
            _kafka_coordinated(cluster, prefix, topics, args)


def _measure(cluster: LocalCluster, group_regex: str, groups: list[str], topics: list[str],
             args, settings: ExporterSettings, peer_prefix: str | None) -> None:
    """The exporter in a ZooKeeper session of its own, so that its requests are its alone;
    `peer_prefix`: also time re-reading every group of that prefix from ZooKeeper."""
    rss_before = _memory()["VmRSS"]
    access = KafkaAccess(cluster.bootstrap_servers, API_VERSION)
    with zookeeper_session(cluster.zookeeper_connect) as zk:
        requests = _RequestCounter(zk)
        server_packets = _ServerPackets(cluster.zookeeper_connect)
        reads = ClusterReads(access, open_topic_source(zk, None, API_VERSION, {}), {})
        _wait_for_coordinators(reads, groups, topics[0])
        cache = GroupsCache(zk, group_regex)
        service = LagExporter(cache, reads, settings)
        try:
            with requests.counting() as load_requests, server_packets.counting() as load_packets:
                started = time.perf_counter()
                cache.start(300)
                loaded = time.perf_counter() - started
                started = time.perf_counter()
                assert service.scan_once(), "the first scan failed"
                first_scan = time.perf_counter() - started
            memory = _memory()
            with requests.counting() as scan_requests, server_packets.counting() as scan_packets:
                started = time.perf_counter()
                assert service.scan_once(), "a steady-state scan failed"
                steady_scan = time.perf_counter() - started
            server = MetricsServer("127.0.0.1", 0, service.registry, service.health,
                                   service.route, text=service.metrics_text)
            try:
                scrapes, size = _timed_gets(server.port, "/metrics", args.scrapes)
                burrow, _ = _timed_gets(server.port, f"/v3/kafka/local/consumer/"
                                        f"{min(service.reports())}/status", args.scrapes)
                worst = worst_first(service.reports())[0].group
                pages = {path: _timed_gets(server.port, path, args.scrapes)
                         for path in ("/", f"/group/{quote(worst, safe='')}")}
                scanning = _while_scanning(service, server.port, "/")
            finally:
                server.stop()
        finally:
            reads.close()
            cache.close()
        rescans = (_rescans(zk, access, peer_prefix, max(3, args.scrapes // 5))
                   if peer_prefix else [])
    series = sum(not line.startswith(b"#") for line in service.metrics_text().splitlines())
    scrape = statistics.median(scrapes)
    print(f"{len(groups):,} groups x {args.group_partitions} partitions, "
          f"{len(service.reports()):,} seen by the exporter ({series:,} series, "
          f"{size / 1024:,.0f} kB a scrape):")
    print(f"  first full scan {loaded + first_scan:.1f} s (target: under 60 s): /consumers "
          f"loaded into the cache in {loaded:.1f} s, then the scan {first_scan:.1f} s; "
          f"a steady-state scan {steady_scan:.1f} s")
    print(f"  scrape of /metrics: median {scrape * 1000:.0f} ms, worst {max(scrapes) * 1000:.0f} "
          f"ms over {len(scrapes)} (target: under 1 s)")
    print(f"  Burrow status of one group: median {statistics.median(burrow) * 1000:.1f} ms, "
          f"worst {max(burrow) * 1000:.1f} ms")
    for path, (times, page_size) in pages.items():
        print(f"  page {path[:40]}: median {statistics.median(times) * 1000:.1f} ms, worst "
              f"{max(times) * 1000:.1f} ms over {len(times)}, {page_size / 1024:,.0f} kB "
              f"(a /metrics scrape takes {scrape / statistics.median(times):.1f}x as long)")
    if scanning:
        print(f"  page / while a scan runs: median {statistics.median(scanning) * 1000:.1f} ms, "
              f"worst {max(scanning) * 1000:.1f} ms over {len(scanning)} (target: well under "
              "1 s)")
    print(f"  RSS after the first scan {memory['VmRSS'] / 1024:.0f} MB, peak "
          f"{memory['VmHWM'] / 1024:.0f} MB (the bench process before the exporter started: "
          f"{rss_before / 1024:.0f} MB)")
    print(f"  ZooKeeper requests of the load and first scan: {_requests(load_requests)}; "
          f"server packets received {load_packets[0]:,}")
    print(f"  ZooKeeper requests of a steady-state scan: {_requests(scan_requests)}; "
          f"server packets received {scan_packets[0]:,} (every client's, the brokers' and "
          "the sessions' pings too)")
    if rescans:
        rescan = statistics.median(rescans)
        print(f"  peer, every group re-read from ZooKeeper per scrape (kafka_exporter's "
              f"ZooKeeper mode): median {rescan * 1000:.0f} ms -> the cached scrape is "
              f"{rescan / scrape:.1f}x faster")


def _kafka_coordinated(cluster: LocalCluster, prefix: str, topics: list[str], args) -> None:
    """--kafka-groups groups on Kafka's group coordinator, with offsets committed in Kafka for
    --group-partitions partitions each and a live kafka-python member each (a 0.9 coordinator
    lists a group only while it has members), the members in a process of their own
    (bench_kafka_members.py); measured as the ZooKeeper groups are, where the exporter watches
    the coordinator's groups (`ExporterSettings.kafka_groups`)."""
    if "kafka_groups" not in {field.name for field in dataclasses.fields(ExporterSettings)}:
        print("(no row for Kafka-coordinated groups: this exporter does not watch Kafka's "
              "group coordinator)")
        return
    started = time.perf_counter()
    groups = [f"{prefix}-k{number:04d}" for number in range(args.kafka_groups)]
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                             api_version=API_VERSION)
    try:
        for number, group in enumerate(groups):
            topic = topics[number % len(topics)]
            _commit(admin, group, {
                KafkaTopicPartition(topic, partition): OffsetAndMetadata(number % 7, "", -1)
                for partition in range(args.group_partitions)})
    finally:
        admin.close()
    with _members(cluster, [(group, topics[number % len(topics)])
                            for number, group in enumerate(groups)]):
        print(f"{len(groups):,} Kafka-coordinated groups, each with a live member, set up in "
              f"{time.perf_counter() - started:.0f} s")
        settings = ExporterSettings(30, WindowRules(10, 300),
                                    **{"kafka_groups": True, "group_regex": f"{prefix}-k.*"})
        _measure(cluster, f"{prefix}-k.*", groups, topics, args, settings, peer_prefix=None)


@contextmanager
def _members(cluster: LocalCluster, members: list[tuple[str, str]]) -> Iterator[None]:
    """A member of each (group, topic) in a process of its own, there until the block ends."""
    process = subprocess.Popen([sys.executable, str(Path(__file__).with_name(
        "bench_kafka_members.py"))], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(json.dumps({"bootstrap": cluster.bootstrap_servers,
                                        "members": members}) + "\n")
        process.stdin.flush()
        answer = process.stdout.readline()
        if not answer.startswith("ready"):
            raise RuntimeError(f"the members did not start: {answer!r}")
        yield
    finally:
        process.stdin.close()
        process.wait(timeout=120)


def _commit(admin: KafkaAdminClient, group: str, offsets: dict) -> None:
    """A new cluster creates its offsets topic at the first coordinator lookup and answers
    "not available" until it is there."""
    deadline = time.monotonic() + 60
    while True:
        try:
            admin.alter_group_offsets(group, offsets)
            return
        except KafkaError as exc:
            if not exc.retriable or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _make_topics(zk: KazooClient, prefix: str, count: int, partitions: int) -> list[str]:
    """All written at once, then their leaders waited for: the controller elects them while
    the next topics are written."""
    topics = [f"{prefix}-{n}" for n in range(count)]
    for topic in topics:
        create_topic(zk, topic, partitions, wait=False)
    for topic in topics:  # set-up, not timed: a busy machine's controller may take minutes
        wait_for_leaders(zk, topic, partitions, timeout=600)
    return topics


def _produce(cluster: LocalCluster, topics: list[str], partitions: int) -> None:
    """A producer per few topics: meeting a topic it does not know, kafka-python waits for the
    metadata of every topic it knows, which over hundreds of topics takes minutes."""
    for first in range(0, len(topics), _TOPICS_PER_PRODUCER):
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                                 api_version=API_VERSION, linger_ms=20)
        for topic in topics[first:first + _TOPICS_PER_PRODUCER]:
            for partition in range(partitions):
                for _ in range(10):
                    producer.send(topic, b"x" * 100, partition=partition)
        producer.flush(timeout=120)
        producer.close()


def _make_groups(zk: KazooClient, prefix: str, topics: list[str], count: int,
                 partitions: int) -> list[str]:
    """Groups as the Scala consumer leaves them: an offset znode per partition; every other
    group with a registered member owning all its partitions (ephemeral, of the bench's
    session). Written a level of the tree at a time, each level's creates in flight together,
    since one synchronous create after another would take minutes at thousands of groups."""
    groups = [f"{prefix}-g{number:04d}" for number in range(count)]
    levels: list[list[tuple[str, bytes, bool]]] = [[] for _ in range(4)]
    for number, group in enumerate(groups):
        paths = GroupPaths(group)
        topic = topics[number % len(topics)]
        levels[0].append((paths.root, b"", False))
        levels[1].append((paths.offsets, b"", False))
        levels[2].append((paths.offsets_topic(topic), b"", False))
        levels[3].extend((paths.offset(topic, p), encode_offset(number % 7), False)
                         for p in range(partitions))
        if number % 2 == 0:
            member = f"{group}_bench-1-{number:08x}"
            levels[1] += [(paths.ids, b"", False), (paths.owners, b"", False)]
            levels[2] += [(paths.member(member),
                           ConsumerRegistration.static({topic: 1}, 0).encode(), True),
                          (paths.owners_topic(topic), b"", False)]
            levels[3].extend((paths.owner(topic, p), encode_owner(f"{member}-0"), True)
                             for p in range(partitions))
    zk.ensure_path(CONSUMERS)
    for level in levels:
        for start in range(0, len(level), _CREATES_IN_FLIGHT):
            creating = [zk.create_async(path, data, ephemeral=ephemeral)
                        for path, data, ephemeral in level[start:start + _CREATES_IN_FLIGHT]]
            for created in creating:
                created.get(timeout=60)
    return groups


def _wait_for_coordinators(reads: ClusterReads, groups: list[str], topic: str) -> None:
    """A new cluster creates its offsets topic at the first coordinator lookup and answers
    "not available" until it is there; the scan is timed once Kafka can answer."""
    deadline = time.monotonic() + 60
    while True:
        try:
            reads.kafka_offsets({group: [TopicPartition(topic, 0)] for group in groups[:50]})
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


def _while_scanning(service: LagExporter, port: int, path: str) -> list[float]:
    """The times of GETs of `path` made one after another while one scan runs."""
    scanning = threading.Thread(target=service.scan_once)
    scanning.start()
    times: list[float] = []
    while scanning.is_alive():
        times.extend(_timed_gets(port, path, 1)[0])
    scanning.join()
    return times


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


class _RequestCounter:
    """The requests a kazoo client submits, by type: every request, synchronous or not, goes
    through its `_call` (the sessions' pings do not: the connection sends those itself)."""

    def __init__(self, zk: KazooClient) -> None:
        self._counts: Counter[str] | None = None
        submit = zk._call

        def counted(request, async_object):
            if self._counts is not None:
                self._counts[type(request).__name__] += 1
            return submit(request, async_object)

        zk._call = counted  # type: ignore[method-assign]

    @contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        self._counts = counts = Counter()
        try:
            yield counts
        finally:
            self._counts = None


class _ServerPackets:
    """ZooKeeper's own count of the packets it received (`srvr`'s "Received"), before and
    after. Whatever one reading adds to the count itself is taken off: `counting` reads it
    twice at the start, and the difference is one reading's share."""

    def __init__(self, connect: str) -> None:
        host, _, port = connect.split(",")[0].split("/")[0].rpartition(":")
        self._address = (host, int(port))

    @contextmanager
    def counting(self) -> Iterator[list[int]]:
        first = self._received()
        before = self._received()
        moved: list[int] = [0]
        try:
            yield moved
        finally:
            moved[0] = self._received() - before - (before - first)

    def _received(self) -> int:
        answer = four_letters.ask(self._address, b"srvr", 10)
        for line in answer.splitlines():
            if line.startswith("Received:"):
                return int(line.split(":")[1])
        raise RuntimeError(f"no packet count in ZooKeeper's srvr answer: {answer[:200]!r}")


def _requests(counts: Counter[str]) -> str:
    kinds = ", ".join(f"{_short(kind)} {count:,}" for kind, count in counts.most_common())
    return f"{sum(counts.values()):,} ({kinds or 'none'})"


def _short(request_type: str) -> str:
    return request_type.removesuffix("Request") or request_type


def _memory() -> dict[str, int]:
    """VmRSS and VmHWM (the peak) of this process, in kB."""
    with open("/proc/self/status") as status:
        return {key: int(value.split()[0]) for key, _, value in
                (line.partition(":") for line in status) if key in ("VmRSS", "VmHWM")}


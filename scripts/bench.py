"""zkconsumer side by side with the reference consumer and the Python peers, in one run.

Starts a throw-away local cluster, writes --records records of 100 bytes into --partitions
partitions with the reference producer, then measures, on that same data:

1. throughput of one worker from the beginning, every record's value read: zkconsumer per-record
   (also with its metrics served and scraped every second, compared with them off, and in a
   group on Kafka's group coordinator, compared with ZooKeeper's at the fastest of
   --coordination-rounds runs) and batch iteration (the same), raw kafka-python (manual
   assignment, per-record loop), the reference Scala consumer (kafka-consumer-perf-test
   --zookeeper), and pykafka's BalancedConsumer and confluent-kafka when a --peers-python has
   them; each in its own process, with its peak RSS;
2. SASL: one member through a SASL front (a SCRAM-SHA-512 login on every connection) against
   the same member through the same front as a plain relay (see `sasl`);
3. offset commit of 1,000 changed partitions to ZooKeeper: zkconsumer's batched transactions
   against one write per znode in sequence;
4. rebalance latency in a group of --members members on a --rebalance-partitions topic, for
   zkconsumer members and for reference consumers, over alternating leave and join events
   (see `rebalance`), p50 and p99;
5. the lag exporter over --groups groups of --group-partitions partitions: the time to the
   first full scan, a scrape's time and size, a Burrow request, RSS and ZooKeeper requests,
   against re-reading every group from ZooKeeper per scrape; with --kafka-groups N, the same
   over N Kafka-coordinated groups where the exporter watches them (bench_exporter.py);
6. decoding alone, in this process and with no cluster (`--only decode` takes under a
   minute): the readers of fetched records on the same --records records of 100 bytes (see
   `decode`).

    scripts/bench [--records 1000000] [--partitions 8]
                  [--only throughput,sasl,commit,rebalance,exporter,decode]
                  [--coordination-rounds 3] [--members 10] [--rebalance-partitions 120]
                  [--events 20] [--reference-events 20] [--process-events 0]
                  [--groups 500] [--group-partitions 10] [--scrapes 20] [--kafka-groups 0]
"""

from __future__ import annotations

import argparse
import json
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from itertools import chain
from pathlib import Path

from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords as AiokafkaMemoryRecords
from bench_exporter import exporter
from bench_peers import API_VERSION, PEERS, SAME_VENV_PEERS, TOPIC, measure
from kafka.record.memory_records import MemoryRecords as KafkaPythonMemoryRecords

from zkconsumer.localcluster import LocalCluster, create_topic
from zkconsumer.localcluster.bundle import ensure_bundle
from zkconsumer.localcluster.processes import bundle_environment, free_port
from zkconsumer.logs import configure_logging
from zkconsumer.model import Message
from zkconsumer.records import columns
from zkconsumer.records.decoding import decode_records
from zkconsumer.testing.reference import produce_test_data
from zkconsumer.zk.session import zookeeper_session

CLUSTER_SCENARIOS = ("throughput", "sasl", "commit", "rebalance", "exporter")
SCENARIOS = (*CLUSTER_SCENARIOS, "decode")


# -- contenders, each run in a fresh process by `--contender NAME` --------------------------

def _zkconsumer(batches: bool, metrics: bool = False, arrow: bool = False,
                fronted: dict[str, str] | None = None, kafka_coordinated: bool = False):
    """`metrics`: served on a port and scraped every second meanwhile, a scrape more often
    than Prometheus usually asks. `arrow`: batches as Arrow record batches, the values' lengths
    summed over the column. `fronted`: Kafka reached through the front at the bootstrap
    address (see `sasl`), with these properties. `kafka_coordinated`: the group on Kafka's
    group coordinator (`group.coordination=kafka`), reached through the bootstrap address alone,
    with no ZooKeeper."""
    def consume(zookeeper, bootstrap, records, _partitions) -> tuple[int, int, float]:
        from zkconsumer import ConsumerConnector

        if arrow:
            # pyarrow's one-time start-up (it imports pandas on first use, about 0.3 s), paid
            # when a program that works on Arrow starts, not per record
            from zkconsumer.arrow_records import record_batch
            record_batch([])

        group = f"bench-{'batch' if batches else 'record'}-{time.time_ns()}"
        port = free_port() if metrics else 0  # 0: no metrics server
        through_front = {} if fronted is None else {"bootstrap.servers": bootstrap, **fronted}
        coordination = (kafka_coordination(bootstrap) if kafka_coordinated
                        else {"zookeeper.connect": zookeeper})
        connector = ConsumerConnector({**coordination, "group.id": group,
                                       "auto.offset.reset": "smallest",
                                       "auto.commit.enable": "false",
                                       "metrics.port": str(port), **through_front})
        (stream,) = connector.create_message_streams({TOPIC: 1})[TOPIC]
        ready_at = time.perf_counter()
        stop_scraping = threading.Event()
        if metrics:
            threading.Thread(target=_scrape, args=(port, stop_scraping), daemon=True).start()
        count = size = 0
        try:
            if arrow:
                import pyarrow.compute as pc

                for table in stream.arrow_batches():
                    size += pc.sum(pc.binary_length(table.column("value"))).as_py() or 0
                    count += table.num_rows
                    if count >= records:
                        break
            elif batches:
                for batch in stream.batches():
                    for message in batch:
                        size += len(message.value)
                    count += len(batch)
                    if count >= records:
                        break
            else:
                for message in stream:
                    size += len(message.value)
                    count += 1
                    if count >= records:
                        break
        finally:
            stop_scraping.set()
            connector.shutdown(commit=False)
        return count, size, ready_at
    return consume


def _scrape(port: int, stop: threading.Event) -> None:
    while not stop.wait(1.0):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            response.read()


# The group timing of every Kafka-coordinated member here, whichever its client: on a 0.9
# coordinator a member learns that the group rebalances from the answer to its next heartbeat,
# so the interval bounds how soon it rejoins.
SESSION_TIMEOUT_MS, HEARTBEAT_INTERVAL_MS = 10_000, 300


def kafka_coordination(bootstrap: str) -> dict[str, str]:
    """A member's settings for a group on Kafka's group coordinator of the local cluster (a
    0.9 broker, whose version is given rather than probed, as for the other Kafka clients
    here), with the same session and heartbeat for every one."""
    return {"group.coordination": "kafka", "bootstrap.servers": bootstrap,
            "kafka.api.version": ".".join(map(str, API_VERSION)),
            "session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS)}


# Each Kafka-coordinated contender runs right after its ZooKeeper-coordinated twin, so that the
# pair meets the same state of this shared machine.
CONTENDERS = {
    "zkconsumer (per record)": _zkconsumer(batches=False),
    "zkconsumer (per record, Kafka-coordinated)": _zkconsumer(batches=False,
                                                              kafka_coordinated=True),
    "zkconsumer (per record, metrics on)": _zkconsumer(batches=False, metrics=True),
    "zkconsumer (batches)": _zkconsumer(batches=True),
    "zkconsumer (batches, Kafka-coordinated)": _zkconsumer(batches=True, kafka_coordinated=True),
    "zkconsumer (arrow batches)": _zkconsumer(batches=True, arrow=True),
}
# Per way of consuming: the ZooKeeper-coordinated member and its Kafka-coordinated twin.
COORDINATION_TWINS = {way: (f"zkconsumer ({way})", f"zkconsumer ({way}, Kafka-coordinated)")
                      for way in ("per record", "batches")}
# The SASL part's login; the front holds the only copy of the password besides this.
SASL_USER, SASL_PASSWORD, SASL_MECHANISM = "bench", "bench-Pa55word", "SCRAM-SHA-512"
SASL_PROPERTIES = {"kafka.security.protocol": "SASL_PLAINTEXT",
                   "kafka.sasl.mechanism": SASL_MECHANISM,
                   "kafka.sasl.plain.username": SASL_USER,
                   "kafka.sasl.plain.password": SASL_PASSWORD}
SASL_CONTENDERS = {
    f"{way}, {login}": _zkconsumer(batches=way == "batches", fronted=properties)
    for way in ("per record", "batches")
    for login, properties in (("plain relay", {}), (SASL_MECHANISM, SASL_PROPERTIES))}
SASL_TARGET = 0.8  # of the same member's throughput without SASL (issue 23)


# -- the scenarios ----------------------------------------------------------------------------

def throughput(cluster: LocalCluster, args, work: Path) -> None:
    """Each contender in a fresh process, in turn; the peers run by scripts/bench_peers.py in
    the venv that has them (pykafka pins an old kazoo, so it gets a venv of its own)."""
    runs = [(name, [sys.executable, __file__, "--contender", name]) for name in CONTENDERS]
    for name in PEERS:
        python = sys.executable if name in SAME_VENV_PEERS else args.peers_python
        if python is None:
            print(f"  ({name}: no peers venv given, skipped)")
            continue
        runs.append((name, [python, str(Path(__file__).with_name("bench_peers.py")), name]))
    _start_group_coordinator(cluster.bootstrap_servers)
    results = {}
    for name, command in runs:
        result = _run_contender(name, command, cluster.zookeeper_connect,
                                cluster.bootstrap_servers, args)
        if result is not None:
            results[name] = result
    # Each twin's run above is its first; its further runs come in turn with the other twins'.
    twin_names = [name for pair in COORDINATION_TWINS.values() for name in pair]
    twins = _fastest_of(args.coordination_rounds - 1, twin_names, cluster.zookeeper_connect,
                        lambda _name: cluster.bootstrap_servers, args,
                        {name: results[name] for name in twin_names if name in results})
    results.update(reference_throughput(cluster, args, work))
    base = results["zkconsumer (per record)"]
    batches = results["zkconsumer (batches)"]
    print(f"{'contender':<44} {'records/s':>11} {'zkc/record is':>14} {'zkc/batches is':>15} "
          f"{'peak RSS MB':>12}")
    for name, result in results.items():
        rate = result["records"] / result["seconds"]
        rss = f"{result['peak_rss_mb']:.0f}" if result.get("peak_rss_mb") else "-"
        print(f"{name:<44} {rate:>11,.0f} {_rate(base) / rate:>13.2f}x "
              f"{_rate(batches) / rate:>14.2f}x {rss:>12}")
    metered = results.get("zkconsumer (per record, metrics on)")
    if metered:
        print(f"per record with metrics served and scraped every second: "
              f"{_rate(metered) / _rate(base):.2f}x the throughput with them off")
    _compare_coordination(twins, args.coordination_rounds)
    reference = results.get("reference Scala consumer (its own timing)")
    if reference:
        _print_after_start_up(results, _rate(reference))


def _compare_coordination(twins: dict[str, dict], rounds: int) -> None:
    """Each Kafka-coordinated member against its ZooKeeper-coordinated twin, each at its
    fastest: one run against one is a coin toss on a shared machine."""
    print("Kafka-coordinated against ZooKeeper-coordinated, each the fastest of "
          f"{rounds} interleaved runs:")
    for way, (on_zookeeper, on_kafka) in COORDINATION_TWINS.items():
        if on_zookeeper in twins and on_kafka in twins:
            zookeeper, kafka = twins[on_zookeeper], twins[on_kafka]
            print(f"{way}, Kafka-coordinated: "
                  f"{_consuming_rate(kafka) / _consuming_rate(zookeeper):.2f}x the "
                  "ZooKeeper-coordinated member's records/s from the streams being ready, "
                  f"{_rate(kafka) / _rate(zookeeper):.2f}x as a whole process")


def _fastest_of(rounds: int, names, zookeeper: str, bootstrap_for, args,
                results: dict[str, dict] | None = None) -> dict[str, dict]:
    """Each contender named run `rounds` times, in turn, in a process of its own, through
    `bootstrap_for(name)`; each one's run with the fastest consuming (streams ready to last
    record) is kept, `results` being runs already made. Interleaved: on shared machines one
    run differs from the next by a third, and the first reads of the data also warm the
    broker's cache."""
    fastest = dict(results or {})
    for name in [*names] * rounds:
        result = _run_contender(name, [sys.executable, __file__, "--contender", name],
                                zookeeper, bootstrap_for(name), args)
        if result is not None and (name not in fastest or _consuming_rate(result)
                                   > _consuming_rate(fastest[name])):
            fastest[name] = result
    return fastest


def _start_group_coordinator(bootstrap: str) -> None:
    """A 0.9 broker creates its offsets topic, and only then coordinates groups, at the first
    group's request: a throw-away member joins first, so that no contender pays for it."""
    from zkconsumer import ConsumerConnector

    member = ConsumerConnector({**kafka_coordination(bootstrap),
                                "group.id": f"bench-warm-up-{time.time_ns()}"})
    try:
        member.create_message_streams({TOPIC: 1})
        if not member.wait_until_stable(timeout=60):
            raise RuntimeError("Kafka's group coordinator gave no assignment within 60 s")
    finally:
        member.shutdown(commit=False)


def _run_contender(name: str, command: list[str], zookeeper: str, bootstrap: str, args
                   ) -> dict | None:
    output = subprocess.run(
        [*command, "--zookeeper", zookeeper, "--bootstrap", bootstrap, "--records",
         str(args.records), "--partitions", str(args.partitions)],
        capture_output=True, text=True, timeout=1800, check=False)
    if output.returncode != 0:
        print(f"  ({name} not measured: {output.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(output.stdout.strip().splitlines()[-1])


def sasl(cluster: LocalCluster, args, _work: Path) -> None:
    """What a SASL login costs a member: the same member on the same data through the test
    suite's SASL front (tests/support/sasl_front.py: a SCRAM login checked on every
    connection, then a relay to the broker), against it through the same front as a plain
    relay, so that the relay's own cost, which a real SASL listener does not have, is on both
    sides. Each in a process of its own, timed from the streams being ready; the fetcher's
    logins (metadata, fetch and offset connections) fall within that time."""
    # The front is test support, not part of the package.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from support.sasl_front import KAFKA_0_9_VERSIONS, SaslFront

    fronts = {users is None: SaslFront(cluster.bootstrap_servers, users,
                                       broker_versions=KAFKA_0_9_VERSIONS)
              for users in (None, {SASL_USER: SASL_PASSWORD})}
    try:
        results = _fastest_of(3, SASL_CONTENDERS, cluster.zookeeper_connect,
                              lambda name: fronts["plain relay" in name].bootstrap_servers, args)
    finally:
        for front in fronts.values():
            front.stop()
    logins = fronts[False].logins
    print(f"logins checked by the front: {sum(login.accepted for login in logins)} accepted, "
          f"{sum(not login.accepted for login in logins)} refused")
    print(f"{'one member through the front':<40} {'records/s':>11} {'SASL is':>9} "
          f"{'target':>7}")
    for way in ("per record", "batches"):
        plain, secured = (results.get(f"{way}, {login}")
                          for login in ("plain relay", SASL_MECHANISM))
        for login, result in (("plain relay", plain), (SASL_MECHANISM, secured)):
            if result is None:
                continue
            rate = _consuming_rate(result)
            ratio = (f"{rate / _consuming_rate(plain):.2f}x"
                     if login != "plain relay" and plain else "")
            target = f"{SASL_TARGET:.1f}x" if ratio else ""
            print(f"{way + ', ' + login:<40} {rate:>11,.0f} {ratio:>9} {target:>7}")


def _consuming_rate(result: dict) -> float:
    return result["records"] / result["consuming_seconds"]


# What issue 15 asks of each way of consuming, against the reference's own timing.
_TARGETS = {"zkconsumer (per record)": 0.7, "zkconsumer (batches)": 1.0,
            "zkconsumer (arrow batches)": 1.5}


def _print_after_start_up(results: dict, reference_rate: float) -> None:
    """zkconsumer timed as the reference times itself: from the streams being ready (connected,
    group joined) to the last record."""
    print("after start-up, as the reference times itself (streams ready to last record):")
    print(f"{'contender':<44} {'records/s':>11} {'vs reference':>13} {'target':>7}")
    for name, result in results.items():
        if "consuming_seconds" not in result:
            continue
        rate = result["records"] / result["consuming_seconds"]
        target = f"{_TARGETS[name]:.1f}x" if name in _TARGETS else ""
        print(f"{name:<44} {rate:>11,.0f} {rate / reference_rate:>12.2f}x {target:>7}")


def _rate(result: dict) -> float:
    return result["records"] / result["seconds"]


def reference_throughput(cluster: LocalCluster, args, work: Path) -> dict[str, dict]:
    tool = ensure_bundle() / "bin" / "kafka-consumer-perf-test.sh"
    started = time.perf_counter()
    result = subprocess.run(
        [str(tool), "--zookeeper", cluster.zookeeper_connect, "--topic", TOPIC,
         "--messages", str(args.records), "--threads", "1",
         "--group", f"bench-ref-{time.time_ns()}"],
        env=bundle_environment(heap="-Xmx512M", log_dir=work), capture_output=True, text=True,
        timeout=1800, check=False)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        print(f"  (reference consumer failed: {result.stderr.strip()[-300:]})")
        return {}
    # Timed as a whole process like the others, and by the tool itself (without the JVM's
    # start-up and ZooKeeper connection): its last line ends with records per second.
    own_rate = float(result.stdout.strip().splitlines()[-1].split(",")[-1])
    return {"reference Scala consumer (whole process)":
            {"records": args.records, "seconds": seconds, "peak_rss_mb": None},
            "reference Scala consumer (its own timing)":
            {"records": own_rate, "seconds": 1.0, "peak_rss_mb": None}}


def commit(cluster: LocalCluster, _args, _work: Path) -> None:
    from zkconsumer.model import TopicPartition
    from zkconsumer.offsets import ZookeeperOffsetStore
    from zkconsumer.znodes.paths import GroupPaths

    with zookeeper_session(cluster.zookeeper_connect) as zk:
        group = f"bench-commit-{time.time_ns()}"
        store = ZookeeperOffsetStore(zk, group)
        partitions = [TopicPartition(f"t{p // 100}", p % 100) for p in range(1000)]
        store.commit({tp: 1 for tp in partitions})
        paths = GroupPaths(group)
        batched, sequential = [], []
        for round_number in range(2, 7):
            started = time.perf_counter()
            store.commit({tp: round_number for tp in partitions})
            batched.append(time.perf_counter() - started)
            started = time.perf_counter()
            for tp in partitions:
                zk.set(paths.offset(tp.topic, tp.partition), str(round_number).encode())
            sequential.append(time.perf_counter() - started)
    b, s = statistics.median(batched), statistics.median(sequential)
    print(f"commit 1,000 changed offsets: batched {b * 1000:.0f} ms, one write per znode "
          f"{s * 1000:.0f} ms -> {s / b:.1f}x faster (median of 5)")


def rebalance(cluster: LocalCluster, args, work: Path) -> None:
    """The same group shape and the same events for zkconsumer members and reference consumers.

    A join is timed from the joiner's registration znode being created (its ctime, on the
    ZooKeeper server's clock, which is this machine's), so neither side is charged for starting
    a process; a leave from the moment the member is asked to stop. Settled means every
    partition is owned by a live member, every live member owns some, and (for zkconsumer,
    which can tell) every member is fetching again.
    """
    from zkconsumer import ConsumerConnector
    from zkconsumer.testing.consume_process import ConsumeProcess
    from zkconsumer.testing.reference import ReferenceConsumer

    topic = f"bench-rebalance-{time.time_ns()}"
    settings = {"rebalance.backoff.ms": "500", "rebalance.max.retries": "10"}
    with zookeeper_session(cluster.zookeeper_connect) as zk:
        create_topic(zk, topic, args.rebalance_partitions)

        def start_ours(group: str):
            member = ConsumerConnector({"zookeeper.connect": cluster.zookeeper_connect,
                                        "group.id": group, **settings})
            member.create_message_streams({topic: 1})
            return member

        def start_reference(group: str):
            return ReferenceConsumer(work / "reference", cluster.zookeeper_connect, group,
                                     topic=topic, properties=settings)

        started_processes = []

        def start_process(group: str):
            worker = ConsumeProcess(cluster.zookeeper_connect, group, topic, work,
                                    f"member-{len(started_processes)}",
                                    *(f"--property={key}={value}"
                                      for key, value in settings.items()))
            started_processes.append(worker)
            return worker

        ours, doubles = measure_rebalances(
            zk, f"bench-rebalance-{time.time_ns()}", args, start_ours,
            stop=lambda m: m.shutdown(),
            stable=lambda m: m.wait_until_stable(timeout=0) and m.fetching_owned_partitions(),
            owned=lambda m: set(m.owned_partitions()), events=args.events, poll_s=0.002)
        reference, _ = measure_rebalances(
            zk, f"bench-ref-rebalance-{time.time_ns()}", args, start_reference,
            stop=lambda m: m.stop(), stable=lambda _m: True, owned=lambda _m: set(),
            events=args.reference_events, poll_s=0.02) if args.reference_events else ([], 0)
        try:
            # Members each in a process of their own, as deployed: settled is judged from the
            # owner znodes alone, as for the reference consumers.
            processes, _ = measure_rebalances(
                zk, f"bench-process-rebalance-{time.time_ns()}", args, start_process,
                stop=lambda w: w.terminate(), stable=lambda _w: True, owned=lambda _w: set(),
                events=args.process_events, poll_s=0.02) if args.process_events else ([], 0)
        finally:
            for worker in started_processes:
                worker.stop()
    print(f"{args.members} members x {args.rebalance_partitions} partitions, leave and join "
          "events alternating")
    print(f"{'contender':<44}{'events':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name, times in (("zkconsumer", ours), ("zkconsumer, a process per member", processes),
                        ("reference Scala consumer", reference)):
        if not times:
            continue
        times = sorted(times)
        p50 = times[len(times) // 2]
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        print(f"{name:<44}{len(times):>7} {p50 * 1000:>8.0f} {p99 * 1000:>8.0f} "
              f"{times[-1] * 1000:>8.0f}")
    if reference:
        print(f"zkconsumer p50 is {statistics.median(reference) / statistics.median(ours):.1f}x "
              "the reference's speed")
    print(f"partitions held by two zkconsumer members at once, checked every few ms throughout: "
          f"{doubles}")


def measure_rebalances(zk, group: str, args, start, stop, stable, owned, events: int,
                       poll_s: float) -> tuple[list[float], int]:
    """Times per event, and how many times a partition was seen held by two members at once
    (what each member itself believes it owns, which is what it delivers from).

    Every contender is timed to the start of the read of the owner znodes that found the group
    settled (all members stable, where they can tell, before and after it): that read, a
    thousand znodes at the largest size, is the harness's, not the rebalance's."""
    from zkconsumer.assignment import consumer_of_thread
    from zkconsumer.zk.group_state import read_members, read_owners
    from zkconsumer.znodes.paths import GroupPaths

    paths = GroupPaths(group)

    def owners_settled(members: list) -> bool:
        owners = read_owners(zk, group)
        live = set(read_members(zk, group))
        owning = {consumer_of_thread(t) for t in owners.values()}
        return (len(owners) == args.rebalance_partitions and owning <= live
                and len(live) == len(members) and owning == live
                and all(stable(m) for m in members))

    doubles = 0

    def wait_settled(members: list) -> float:
        nonlocal doubles
        while True:
            # What members can tell in-process is checked first: reading every owner znode on
            # each check would load ZooKeeper and slow the very rebalance measured.
            if all(stable(m) for m in members):
                read_at = time.time()
                if owners_settled(members):
                    return read_at
            held = Counter(chain.from_iterable(owned(m) for m in members))
            doubles += sum(count * (count - 1) // 2 for count in held.values() if count > 1)
            time.sleep(poll_s)

    members = []
    for _ in range(args.members):
        members.append(start(group))
    wait_settled(members)
    times = []
    try:
        for event in range(events):
            if event % 2 == 0:
                leaving = members.pop()
                asked = time.time()
                stop(leaving)
                times.append(wait_settled(members) - asked)
            else:
                known = set(read_members(zk, group))
                members.append(start(group))
                while not (joined := set(read_members(zk, group)) - known):
                    time.sleep(0.002)
                (consumer_id,) = joined
                registered = zk.exists(paths.member(consumer_id)).ctime / 1000.0
                times.append(wait_settled(members) - registered)
    finally:
        for member in members:
            stop(member)
    return times, doubles


def decode(args) -> None:
    """Records/s (of CPU time) of each reader of fetched data, every record made into a
    `Message`, CRCs checked (as each consumer does by default), best of 3 passes.

    The same --records records of 100 bytes in format v1 (one message per entry, as a 0.10
    producer writes them uncompressed) and in format v2 (batches of 16 KiB, a producer's
    default batch.size), cut into fetch responses of 1 MiB (the default fetch size).
    """
    oldest = _fetch_responses(_legacy_messages(args.records, 0))
    legacy = _fetch_responses(_legacy_messages(args.records, 1))
    batches = _fetch_responses(_v2_batches(args.records))
    readers = {
        "kafka-python v2 (MemoryRecords)": (_peer_reader(KafkaPythonMemoryRecords), batches),
        "aiokafka v1 (MemoryRecords, C)": (_peer_reader(AiokafkaMemoryRecords), legacy),
        "aiokafka v2 (MemoryRecords, C)": (_peer_reader(AiokafkaMemoryRecords), batches),
    }
    for form, versions in (("v0", oldest), ("v1", legacy), ("v2", batches)):
        readers[f"zkconsumer {form}, aiokafka path (tuples)"] = (_without_compiled, versions)
        if columns.compiled():
            readers[f"zkconsumer {form}, compiled (tuples)"] = (_decode_records, versions)
            readers[f"zkconsumer {form}, compiled (arrow)"] = (_decode_arrow, versions)
    rates = {}
    for name, (read, responses) in readers.items():
        seconds = min(_timed(read, responses, args.records) for _ in range(3))
        rates[name] = args.records / seconds
    base = rates["kafka-python v2 (MemoryRecords)"]
    print(f"{'reader':<40} {'records/s':>11} {'vs kafka-python v2':>19}")
    for name, rate in rates.items():
        print(f"{name:<40} {rate:>11,.0f} {rate / base:>18.2f}x")


_DECODE_VALUE = b"x" * 100
_DECODE_TIMESTAMP = 1_700_000_000_000


def _legacy_messages(records: int, magic: int) -> list[bytes]:
    entries = []
    for offset in range(records):
        builder = LegacyRecordBatchBuilder(magic, 0, 1 << 10)
        builder.append(offset, _DECODE_TIMESTAMP if magic else None, None, _DECODE_VALUE)
        entries.append(bytes(builder.build()))
    return entries


def _v2_batches(records: int) -> list[bytes]:
    batches = []
    offset = 0
    while offset < records:
        base_offset = offset
        builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 16 << 10)
        while offset < records and builder.append(offset - base_offset, _DECODE_TIMESTAMP, None,
                                                  _DECODE_VALUE, []) is not None:
            offset += 1
        batch = builder.build()
        struct.pack_into(">q", batch, 0, base_offset)  # the builder writes base offset 0
        batches.append(bytes(batch))
    return batches


def _fetch_responses(entries: list[bytes], fetch_bytes: int = 1 << 20) -> list[bytes]:
    responses, response, size = [], [], 0
    for entry in entries:
        if size + len(entry) > fetch_bytes:
            responses.append(b"".join(response))
            response, size = [], 0
        response.append(entry)
        size += len(entry)
    return [*responses, b"".join(response)]


def _timed(read, responses: list[bytes], records: int) -> float:
    """CPU seconds of this process: decoding uses one core, and other load on the machine
    then does not count."""
    started = time.process_time()
    count = sum(len(read(response)) for response in responses)
    seconds = time.process_time() - started
    assert count == records, f"read {count} of {records} records"
    return seconds


def _peer_reader(memory_records):
    """A peer's reader of fetched data, as its consumer uses it, making our `Message`s."""
    def read(response: bytes) -> list[Message]:
        messages = []
        records = memory_records(response)
        while (batch := records.next_batch()) is not None:
            if not batch.validate_crc():
                raise ValueError("CRC check failed")
            messages.extend(Message(TOPIC, 0, record.offset, record.key, record.value,
                                    record.timestamp) for record in batch)
        return messages
    return read


def _decode_records(response: bytes) -> list[Message]:
    return list(decode_records(response, TOPIC, 0, 0).messages)


def _without_compiled(response: bytes) -> list[Message]:
    """What a zkconsumer built without a C compiler does: aiokafka's reader."""
    compiled, columns._columns = columns._columns, None
    try:
        return _decode_records(response)
    finally:
        columns._columns = compiled


def _decode_arrow(response: bytes):
    return decode_records(response, TOPIC, 0, 0).messages.record_batch()


def produce(cluster: LocalCluster, records: int, partitions: int, work: Path) -> None:
    with zookeeper_session(cluster.zookeeper_connect) as zk:
        create_topic(zk, TOPIC, partitions)
    produce_test_data(cluster.bootstrap_servers, TOPIC, records, work_dir=work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--only", default=",".join(SCENARIOS))
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--rebalance-partitions", type=int, default=120)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--reference-events", type=int, default=20)
    parser.add_argument("--process-events", type=int, default=0,
                        help="also time zkconsumer members each in a process of their own")
    parser.add_argument("--coordination-rounds", type=int, default=3,
                        help="runs of each ZooKeeper-coordinated member and its "
                             "Kafka-coordinated twin, interleaved, compared at their fastest")
    parser.add_argument("--groups", type=int, default=500)
    parser.add_argument("--group-partitions", type=int, default=10)
    parser.add_argument("--scrapes", type=int, default=20)
    parser.add_argument("--kafka-groups", type=int, default=0,
                        help="also this many Kafka-coordinated groups, where the exporter "
                             "watches them")
    parser.add_argument("--peers-python", help="a Python with pykafka and confluent-kafka "
                        "(scripts/bench makes one)")
    parser.add_argument("--contender", help=argparse.SUPPRESS)
    parser.add_argument("--zookeeper", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    args = parser.parse_args()
    configure_logging("console", "warning")  # the members' own logs would drown the figures
    if args.contender:
        contender = {**CONTENDERS, **SASL_CONTENDERS}[args.contender]
        print(json.dumps(measure(contender, args.zookeeper, args.bootstrap, args.records,
                                 args.partitions)))
        return
    chosen = [s for s in args.only.split(",") if s]
    unknown = set(chosen) - set(SCENARIOS)
    if unknown:
        parser.error(f"--only: unknown part {', '.join(sorted(unknown))}; choose among "
                     f"{', '.join(SCENARIOS)}")
    if set(chosen) & set(CLUSTER_SCENARIOS):
        run_on_a_cluster(chosen, args)
    if "decode" in chosen:
        # Last: its million records in this process would be the starting peak RSS of every
        # contender process started after it (Linux keeps a forked child's high-water mark)
        print(f"== decode: {args.records:,} records of 100 bytes, in this process, CPU time, "
              "best of 3")
        decode(args)


def run_on_a_cluster(chosen: list[str], args) -> None:
    with tempfile.TemporaryDirectory(prefix="zkconsumer-bench-") as scratch:
        work = Path(scratch)
        cluster = LocalCluster.start(work / "cluster", brokers=1)
        try:
            if "throughput" in chosen or "sasl" in chosen:
                produce(cluster, args.records, args.partitions, work)
            if "throughput" in chosen:
                print(f"== throughput: {args.records:,} records of 100 bytes, "
                      f"{args.partitions} partitions, from the beginning, whole process")
                throughput(cluster, args, work)
            if "sasl" in chosen:
                print(f"== SASL: {args.records:,} records, one member through a front, "
                      f"with a {SASL_MECHANISM} login and without, streams ready to last record")
                sasl(cluster, args, work)
            if "commit" in chosen:
                print("== offset commit")
                commit(cluster, args, work)
            if "rebalance" in chosen:
                print("== rebalance latency")
                rebalance(cluster, args, work)
            if "exporter" in chosen:
                print("== lag exporter")
                exporter(cluster, args)
        finally:
            cluster.stop(remove_data=True)


if __name__ == "__main__":
    main()

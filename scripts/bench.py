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
   zkconsumer members and for reference consumers on ZooKeeper, and for zkconsumer members and
   kafka-python consumers on Kafka's group coordinator, over alternating leave and join events
   (see `rebalance`), p50 and p99;
5. the lag exporter over --groups groups of --group-partitions partitions: the time to the
   first full scan, a scrape's time and size, a Burrow request, RSS and ZooKeeper requests,
   against re-reading every group from ZooKeeper per scrape; with --kafka-groups N, the same
   over N Kafka-coordinated groups where the exporter watches them (bench_exporter.py);
6. a fleet (`--only fleet`, not in the default run): --fleet-members members of one group on a
   --fleet-partitions topic, --members-per-process to a process, started together and then
   restarted in --rolling-steps steps, with ZooKeeper's own counters per phase (bench_fleet.py);
7. decoding alone, in this process and with no cluster (`--only decode` takes under a
   minute): the readers of fetched records on the same --records records of 100 bytes (see
   `decode`), and a 5,000-partition topic's metadata answer, against kafka-python's;
8. handing out alone, in this process and with no cluster (`--only handout`): a stream's
   per-record and batch iteration over decoded records, its checks before each hand-out
   included, against iterating the same records directly (see `handout`);
9. start-up (scripts/bench_start.py): `zkconsumer --help` against kafka-python's import, a
   worker until it is registered in ZooKeeper, and one worker and a fleet of --start-fleet
   workers on Kafka's group coordinator until their group is Stable and assigned, against
   kafka-python's KafkaConsumers;
10. Kafka-stored offsets (`--only kafka-offsets`, not in the default run): the exporter's scan
   of the committed offsets of --kafka-offset-groups groups of --group-partitions partitions,
   and a commit with offsets.storage=kafka, against kafka-python doing the same
   (bench_kafka_offsets.py).

--baseline-tree PATH also measures another checkout's zkconsumer in the start-up and
Kafka-stored offsets parts, in the same run.

    scripts/bench [--records 1000000] [--partitions 8]
                  [--only throughput,sasl,commit,rebalance,exporter,fleet,start,decode,handout,
                          kafka-offsets]
                  [--coordination-rounds 3] [--members 10] [--rebalance-partitions 120]
                  [--events 20] [--reference-events 20] [--process-events 0]
                  [--kafka-events EVENTS] [--groups 500] [--group-partitions 10]
                  [--scrapes 20] [--kafka-groups 0] [--kafka-offset-groups 5000]
                  [--fleet-members 200]
                  [--fleet-partitions 5000] [--members-per-process 20] [--rolling-steps 5]
                  [--fleet-code DIR] [--fleet-property KEY=VALUE] [--fleet-reference 0]
                  [--fleet-nice N] [--fleet-settled-s 5] [--fleet-server-first]
                  [--zookeeper-server bundle|debian]
                  [--start-runs 5] [--start-fleet 30] [--start-fleet-partitions 300]
                  [--start-fleet-rounds 3] [--baseline-tree PATH] [--peers-python PYTHON]
"""

from __future__ import annotations

import argparse
import io
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
from collections.abc import Callable, Collection
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords as AiokafkaMemoryRecords
from bench_exporter import exporter
from bench_fleet import fleet, may_run_first, reference_fleet, run_first
from bench_kafka_offsets import measure as kafka_offsets
from bench_peers import API_VERSION, PEERS, SAME_VENV_PEERS, TOPIC, measure
from bench_start import add_arguments as add_start_arguments
from bench_start import start
from kafka import KafkaConsumer
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.protocol.metadata import MetadataResponse as KafkaPythonMetadata
from kafka.record.memory_records import MemoryRecords as KafkaPythonMemoryRecords

from zkconsumer.kafka.protocol.codec import decode_metadata
from zkconsumer.localcluster import LocalCluster, create_topic
from zkconsumer.localcluster.bundle import ensure_bundle
from zkconsumer.localcluster.processes import bundle_environment, free_port
from zkconsumer.logs import configure_logging
from zkconsumer.model import Message
from zkconsumer.records import columns
from zkconsumer.records.decoding import decode_records
from zkconsumer.testing.reference import produce_test_data
from zkconsumer.zk.session import zookeeper_session

CLUSTER_SCENARIOS = ("throughput", "sasl", "commit", "rebalance", "exporter", "fleet", "start",
                     "kafka-offsets")
SCENARIOS = (*CLUSTER_SCENARIOS, "decode", "handout")
# Run only when asked for (--only fleet): hundreds of members take the machine for minutes.
ON_REQUEST = ("fleet", "kafka-offsets")


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
    here), with the same session and heartbeat as kafka-python's members in `rebalance`."""
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
    """The same group shape and the same events for each kind of member: on ZooKeeper,
    zkconsumer members, reference consumers and (with --process-events) zkconsumer members each
    in a process of their own; on Kafka's group coordinator, zkconsumer members and kafka-python
    consumers (see `kafka_coordinated_rebalances`).

    On ZooKeeper, a join is timed from the joiner's registration znode being created (its ctime,
    on the ZooKeeper server's clock, which is this machine's), so neither side is charged for
    starting a process; a leave from the moment the member is asked to stop. Settled means every
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

        def on_zookeeper(name: str, start, stop, **judged) -> ZookeeperGroup:
            return ZookeeperGroup(zk=zk, group=f"{name}-{time.time_ns()}",
                                  partitions=args.rebalance_partitions, start=start, stop=stop,
                                  **judged)

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
            on_zookeeper("bench-rebalance", start_ours, stop=lambda m: m.shutdown(),
                         stable=_zkconsumer_settled, owned=_zkconsumer_owned, poll_s=0.002),
            args.members, args.events)
        reference, _ = measure_rebalances(
            on_zookeeper("bench-ref-rebalance", start_reference, stop=lambda m: m.stop(),
                         poll_s=0.02),
            args.members, args.reference_events) if args.reference_events else ([], 0)
        try:
            # Members each in a process of their own, as deployed: settled is judged from the
            # owner znodes alone, as for the reference consumers.
            processes, _ = measure_rebalances(
                on_zookeeper("bench-process-rebalance", start_process,
                             stop=lambda w: w.terminate(), poll_s=0.02),
                args.members, args.process_events) if args.process_events else ([], 0)
        finally:
            for worker in started_processes:
                worker.stop()
    on_kafka = kafka_coordinated_rebalances(cluster, topic, args) if args.kafka_events else {}
    print(f"{args.members} members x {args.rebalance_partitions} partitions, leave and join "
          "events alternating")
    print(f"{'contender':<48}{'events':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    rows = {"zkconsumer": ours, "zkconsumer, a process per member": processes,
            "reference Scala consumer": reference,
            **{name: times for name, (times, _) in on_kafka.items()}}
    for name, times in rows.items():
        if not times:
            continue
        times = sorted(times)
        p50 = times[len(times) // 2]
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        print(f"{name:<48}{len(times):>7} {p50 * 1000:>8.0f} {p99 * 1000:>8.0f} "
              f"{times[-1] * 1000:>8.0f}")
    if reference:
        print(f"zkconsumer p50 is {statistics.median(reference) / statistics.median(ours):.1f}x "
              "the reference's speed")
    if on_kafka:
        ours_on_kafka, kafka_python = (on_kafka[name][0] for name in KAFKA_REBALANCING)
        print(f"Kafka-coordinated: session.timeout.ms {SESSION_TIMEOUT_MS}, heartbeat.interval.ms "
              f"{HEARTBEAT_INTERVAL_MS}, a join timed from the member's creation")
        print("Kafka-coordinated zkconsumer p50 is "
              f"{statistics.median(kafka_python) / statistics.median(ours_on_kafka):.1f}x "
              "kafka-python's speed")
    held_twice = {"zkconsumer": doubles,
                  **{KAFKA_REBALANCING[name]: count for name, (_, count) in on_kafka.items()}}
    for who, count in held_twice.items():
        print(f"partitions held by two {who} members at once, checked every few ms "
              f"throughout: {count}")


def _zkconsumer_settled(member) -> bool:
    """Done rebalancing, as a zkconsumer member can tell: stable, and fetching what it owns."""
    return member.wait_until_stable(timeout=0) and member.fetching_owned_partitions()


def _zkconsumer_owned(member) -> set:
    return set(member.owned_partitions())


# The rows on Kafka's group coordinator, and who their members are in the count of partitions
# held twice.
KAFKA_REBALANCING = {"zkconsumer, Kafka-coordinated": "Kafka-coordinated zkconsumer",
                     "kafka-python KafkaConsumer (Kafka-coordinated)": "kafka-python"}


def kafka_coordinated_rebalances(cluster: LocalCluster, topic: str, args
                                 ) -> dict[str, tuple[list[float], int]]:
    """The same events for groups on Kafka's group coordinator: zkconsumer members
    (`group.coordination=kafka`) and kafka-python consumers with the range assignor, all in
    this process, with the same session and heartbeat (see `kafka_coordination`).

    No owner znodes exist for these groups, so settled is judged from what the members
    themselves say (see `RebalancingGroup.settled_at`), and a join is timed from the moment the
    member is created; a leave, again, from the moment it is asked to stop."""
    from zkconsumer import ConsumerConnector

    def start_ours(group: str):
        member = ConsumerConnector({**kafka_coordination(cluster.bootstrap_servers),
                                    "group.id": group})
        member.create_message_streams({topic: 1})
        return member

    def start_kafka_python(group: str) -> KafkaPythonMember:
        return KafkaPythonMember(cluster.bootstrap_servers, group, topic)

    ours, kafka_python = KAFKA_REBALANCING
    groups = {
        ours: RebalancingGroup(group=f"bench-kafka-rebalance-{time.time_ns()}",
                               partitions=args.rebalance_partitions, start=start_ours,
                               stop=lambda m: m.shutdown(), stable=_zkconsumer_settled,
                               owned=_zkconsumer_owned, poll_s=0.002),
        kafka_python: RebalancingGroup(group=f"bench-kafka-python-rebalance-{time.time_ns()}",
                                       partitions=args.rebalance_partitions,
                                       start=start_kafka_python, stop=lambda m: m.stop(),
                                       owned=lambda m: m.owned, poll_s=0.002),
    }
    return {name: measure_rebalances(group, args.members, args.kafka_events)
            for name, group in groups.items()}


class KafkaPythonMember(ConsumerRebalanceListener):
    """A kafka-python consumer of one topic with the range assignor, run as an application runs
    one: polling on a thread of its own, the only thread that touches it. It owns what the
    group last assigned it, and nothing from a revocation until the next assignment (kafka-python
    revokes everything before it rejoins)."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.owned: frozenset = frozenset()
        self._consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, api_version=API_VERSION,
            session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            partition_assignment_strategy=[RangePartitionAssignor])
        self._consumer.subscribe([topic], listener=self)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._poll, name=f"kafka-python-{group}",
                                        daemon=True)
        self._thread.start()

    def on_partitions_revoked(self, revoked) -> None:
        self.owned = frozenset()

    def on_partitions_assigned(self, assigned) -> None:
        self.owned = frozenset(assigned)

    def stop(self) -> None:
        """Returns once the consumer has closed: committed and sent its LeaveGroup."""
        self._stopping.set()
        self._thread.join(timeout=60)

    def _poll(self) -> None:
        try:
            while not self._stopping.is_set():
                self._consumer.poll(timeout_ms=100)
        finally:
            self._consumer.close()


@dataclass(kw_only=True)
class RebalancingGroup:
    """One kind of member's group in the rebalance scenario: how a member starts (`start`,
    given the group id) and stops (`stop`, returning once it has left), what each believes it
    owns, which is what it delivers from, and, where it can tell, whether it is done
    rebalancing (`stable`). `poll_s`: how often the harness looks (checks that read ZooKeeper
    load the server whose work is timed, and are made less often).

    Judged from the members alone, for groups that leave nothing in ZooKeeper to read (those on
    Kafka's coordinator); `ZookeeperGroup` reads the group's znodes."""

    group: str
    partitions: int
    start: Callable[[str], Any]
    stop: Callable[[Any], None]
    owned: Callable[[Any], Collection]
    poll_s: float
    stable: Callable[[Any], bool] = lambda _member: True  # members that cannot tell

    def join(self) -> tuple[Any, float]:
        """A new member, and the moment (wall clock) its join is timed from: its creation."""
        created = time.time()
        return self.start(self.group), created

    def settled_at(self, members: list) -> float | None:
        """When the check that found the group settled began, or None while it is not: every
        partition owned by exactly one member, every member owning some (when there are
        partitions enough to go round), and every member stable."""
        checked_at = time.time()
        held = Counter(chain.from_iterable(self.owned(m) for m in members))
        settled = (len(held) == self.partitions and all(n == 1 for n in held.values())
                   and (self.partitions < len(members) or all(self.owned(m) for m in members))
                   and all(self.stable(m) for m in members))
        return checked_at if settled else None


@dataclass(kw_only=True)
class ZookeeperGroup(RebalancingGroup):
    """A group on ZooKeeper, judged from its znodes: the members' registrations and the
    partitions' owner znodes, the same for every kind of member, whether or not it can tell
    anything itself."""

    zk: Any
    owned: Callable[[Any], Collection] = lambda _member: ()  # members in other processes

    def join(self) -> tuple[Any, float]:
        """A new member, and the moment its registration znode was created."""
        from zkconsumer.zk.group_state import read_members
        from zkconsumer.znodes.paths import GroupPaths

        known = set(read_members(self.zk, self.group))
        member = self.start(self.group)
        while not (joined := set(read_members(self.zk, self.group)) - known):
            time.sleep(0.002)
        (consumer_id,) = joined
        registration = self.zk.exists(GroupPaths(self.group).member(consumer_id))
        return member, registration.ctime / 1000.0

    def settled_at(self, members: list) -> float | None:
        """The start of the read of the owner znodes that found the group settled: every
        partition owned, by live members only, each of which owns some, and every member stable
        before and after the read. That read, a thousand znodes at the largest size, is the
        harness's, not the rebalance's."""
        from zkconsumer.assignment import consumer_of_thread
        from zkconsumer.zk.group_state import read_members, read_owners

        # What members can tell in-process is checked first: reading every owner znode on
        # each check would load ZooKeeper and slow the very rebalance measured.
        if not all(self.stable(m) for m in members):
            return None
        read_at = time.time()
        owners = read_owners(self.zk, self.group)
        live = set(read_members(self.zk, self.group))
        owning = {consumer_of_thread(t) for t in owners.values()}
        settled = (len(owners) == self.partitions and owning <= live
                   and len(live) == len(members) and owning == live
                   and all(self.stable(m) for m in members))
        return read_at if settled else None


def measure_rebalances(group: RebalancingGroup, size: int, events: int
                       ) -> tuple[list[float], int]:
    """Times per event in a group of `size` members, `events` alternating leaves and joins,
    each timed to the moment `group.settled_at` gives; and how many times a partition was seen
    held by two members at once (what each member itself believes it owns, which is what it
    delivers from)."""
    doubles = 0

    def wait_settled(members: list) -> float:
        nonlocal doubles
        while (settled_at := group.settled_at(members)) is None:
            held = Counter(chain.from_iterable(group.owned(m) for m in members))
            doubles += sum(count * (count - 1) // 2 for count in held.values() if count > 1)
            time.sleep(group.poll_s)
        return settled_at

    members: list = []
    times = []
    try:
        for _ in range(size):
            members.append(group.join()[0])
        wait_settled(members)
        for event in range(events):
            if event % 2 == 0:
                leaving = members.pop()
                asked = time.time()
                group.stop(leaving)
                times.append(wait_settled(members) - asked)
            else:
                member, joining_since = group.join()
                members.append(member)
                times.append(wait_settled(members) - joining_since)
    finally:
        for member in members:
            group.stop(member)
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
    _decode_metadata()


METADATA_PARTITIONS = 5000


def _decode_metadata() -> None:
    """A metadata answer (v0, as Kafka 0.9 gives it) naming one topic of METADATA_PARTITIONS
    partitions on three replicas: what each member's fetcher decodes when it starts, and at
    fleet size the most of its CPU in a rolling restart. CPU time, best of 7 passes of 10."""
    def text(value: str) -> bytes:
        return struct.pack(">h", len(value)) + value.encode()

    body = struct.pack(">i", 3) + b"".join(
        struct.pack(">i", node) + text(f"broker-{node}") + struct.pack(">i", 9092)
        for node in range(3))
    body += struct.pack(">i", 1) + struct.pack(">h", 0) + text(TOPIC) + \
        struct.pack(">i", METADATA_PARTITIONS)
    replicas = struct.pack(">iiii", 3, 0, 1, 2)
    body += b"".join(struct.pack(">hii", 0, partition, partition % 3) + replicas + replicas
                     for partition in range(METADATA_PARTITIONS))
    with_header = struct.pack(">i", 7) + body  # the correlation id our decoder skips

    seconds = {
        "kafka-python (MetadataResponse v0)": min(_timed(
            lambda answer: KafkaPythonMetadata[0].decode(io.BytesIO(answer)).topics[0].partitions,
            [body] * 10, 10 * METADATA_PARTITIONS) for _ in range(7)) / 10,
        "zkconsumer (decode_metadata v0)": min(_timed(
            lambda answer: decode_metadata(answer, 0).leaders,
            [with_header] * 10, 10 * METADATA_PARTITIONS) for _ in range(7)) / 10}
    base = seconds["kafka-python (MetadataResponse v0)"]
    print(f"\n{f'metadata of {METADATA_PARTITIONS:,} partitions':<40} {'ms':>11} "
          f"{'vs kafka-python':>19}")
    for name, spent in seconds.items():
        print(f"{name:<40} {spent * 1000:>11.1f} {base / spent:>18.2f}x")


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


def handout(args) -> None:
    """Records/s (of CPU time) of a stream handing out records already decoded and queued:
    what the member adds between the fetch and the application (the checks before each
    hand-out: the partition's claim, the delivery gate and its lease), per record and per
    batch (every record of a batch iterated), best of 5 passes; against the same records
    iterated straight from the decoded chunks, which is all the work a hand-out must do."""
    from zkconsumer.member.claims import Claim, DeliveryGate
    from zkconsumer.member.streams import Chunk, KafkaStream
    from zkconsumer.model import TopicPartition

    partition = TopicPartition(TOPIC, 0)
    chunks = [decode_records(response, TOPIC, 0, 0).messages
              for response in _fetch_responses(_v2_batches(args.records))]

    def direct(_batches: bool) -> int:
        count = 0
        for chunk in chunks:
            for _message in chunk.messages():
                count += 1
        return count

    def streamed(batches: bool) -> int:
        claim = Claim(partition, "bench-0")
        stream = KafkaStream("bench", len(chunks) + 1, 0, {partition: claim}, DeliveryGate())
        for chunk in chunks:
            stream.offer(Chunk(partition, chunk, claim), lambda: True)
        count = 0
        if batches:
            for batch in stream.batches():
                for _message in batch:
                    count += 1
                if count >= args.records:
                    break
        else:
            for _message in stream:
                count += 1
                if count >= args.records:
                    break
        return count

    print(f"{'hand-out':<34} {'records/s':>12} {'vs direct':>10}")
    for batches in (False, True):
        rates = {}
        for name, run in (("direct", direct), ("stream", streamed)):
            seconds = []
            for _ in range(5):
                started = time.process_time()
                count = run(batches)
                seconds.append(time.process_time() - started)
                assert count == args.records, f"{name}: {count} of {args.records} records"
            rates[name] = args.records / min(seconds)
        kind = "batches" if batches else "per record"
        for name, rate in rates.items():
            print(f"{f'{name} ({kind})':<34} {rate:>12,.0f} {rate / rates['direct']:>9.3f}x")


def produce(cluster: LocalCluster, records: int, partitions: int, work: Path) -> None:
    with zookeeper_session(cluster.zookeeper_connect) as zk:
        create_topic(zk, TOPIC, partitions)
    produce_test_data(cluster.bootstrap_servers, TOPIC, records, work_dir=work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--only", default=",".join(s for s in SCENARIOS if s not in ON_REQUEST))
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--rebalance-partitions", type=int, default=120)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--reference-events", type=int, default=20)
    parser.add_argument("--process-events", type=int, default=0,
                        help="also time zkconsumer members each in a process of their own")
    parser.add_argument("--coordination-rounds", type=int, default=3,
                        help="runs of each ZooKeeper-coordinated member and its "
                             "Kafka-coordinated twin, interleaved, compared at their fastest")
    parser.add_argument("--kafka-events", type=int,
                        help="events for the groups on Kafka's coordinator (default: --events)")
    parser.add_argument("--groups", type=int, default=500)
    parser.add_argument("--group-partitions", type=int, default=10)
    parser.add_argument("--scrapes", type=int, default=20)
    parser.add_argument("--kafka-groups", type=int, default=0,
                        help="also this many Kafka-coordinated groups, where the exporter "
                             "watches them")
    parser.add_argument("--kafka-offset-groups", type=int, default=5000,
                        help="groups whose Kafka-stored offsets the kafka-offsets part reads")
    parser.add_argument("--fleet-members", type=int, default=200)
    parser.add_argument("--fleet-partitions", type=int, default=5000)
    parser.add_argument("--members-per-process", type=int, default=20,
                        help="fleet members run in one process (1: a process each)")
    parser.add_argument("--rolling-steps", type=int, default=5)
    parser.add_argument("--fleet-code", help="a checkout whose zkconsumer the fleet's members "
                        "run (default: this one), to measure before and after a change")
    parser.add_argument("--fleet-settled-s", type=float, default=5.0, metavar="S",
                        help="how long the settled fleet is measured after its start")
    parser.add_argument("--fleet-reference", type=int, default=0,
                        help="also start this many reference Scala consumers of a group "
                             "together (a JVM each; the start phase only)")
    parser.add_argument("--fleet-property", action="append", default=[], metavar="KEY=VALUE",
                        help="a consumer setting of every fleet member (repeatable)")
    parser.add_argument("--fleet-server-first", action="store_true",
                        help="run ZooKeeper's threads before every normal process's (real-time "
                             "round-robin, the lowest priority) during the fleet part: the "
                             "server as on a machine of its own; with TMPDIR on memory, its log "
                             "too")
    parser.add_argument("--fleet-nice", type=int, default=0, metavar="N",
                        help="run the fleet's processes at this niceness, so that the servers "
                             "they share the machine with are not starved by members that "
                             "would run on machines of their own (0: as the servers)")
    parser.add_argument("--zookeeper-server", choices=("bundle", "debian"), default="bundle",
                        help="the cluster's ZooKeeper: the Kafka bundle's 3.4.6, or Debian's "
                             "3.8 (which serves multi-reads)")
    parser.add_argument("--peers-python", help="a Python with pykafka and confluent-kafka "
                        "(scripts/bench makes one)")
    add_start_arguments(parser)
    parser.add_argument("--contender", help=argparse.SUPPRESS)
    parser.add_argument("--zookeeper", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.kafka_events is None:
        args.kafka_events = args.events
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
    if args.fleet_server_first and ("fleet" not in chosen or not may_run_first()):
        parser.error("--fleet-server-first: only with --only fleet, and the right to set "
                     "real-time scheduling (root, or CAP_SYS_NICE)")
    if set(chosen) & set(CLUSTER_SCENARIOS):
        run_on_a_cluster(chosen, args)
    if "decode" in chosen:
        # Last: its million records in this process would be the starting peak RSS of every
        # contender process started after it (Linux keeps a forked child's high-water mark)
        print(f"== decode: {args.records:,} records of 100 bytes, in this process, CPU time, "
              "best of 3")
        decode(args)
    if "handout" in chosen:
        print(f"== handout: {args.records:,} decoded records handed out by a stream, CPU time, "
              "best of 5")
        handout(args)


def run_on_a_cluster(chosen: list[str], args) -> None:
    with tempfile.TemporaryDirectory(prefix="zkconsumer-bench-") as scratch:
        work = Path(scratch)
        cluster = LocalCluster.start(work / "cluster", brokers=1,
                                     debian_zookeeper=args.zookeeper_server == "debian")
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
            if "fleet" in chosen:
                print("== a fleet on one ensemble: start together, rolling restart")
                try:
                    if args.fleet_server_first:
                        run_first(cluster.zookeeper.pid)
                    if args.fleet_members:
                        fleet(cluster, args, work)
                    if args.fleet_reference:
                        reference_fleet(cluster, args, work)
                finally:
                    if args.fleet_server_first:  # the parts that follow share the machine
                        run_first(cluster.zookeeper.pid, first=False)
            if "start" in chosen:
                print("== start-up, each start a process of its own")
                start(cluster, args)
            if "kafka-offsets" in chosen:
                print("== Kafka-stored offsets: the exporter's scan, and a commit")
                kafka_offsets(cluster.bootstrap_servers, cluster.zookeeper_connect,
                              args.kafka_offset_groups, args.group_partitions, 1000,
                              args.baseline_tree)
        finally:
            cluster.stop(remove_data=True)


if __name__ == "__main__":
    main()

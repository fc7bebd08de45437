"""zkconsumer side by side with the reference consumer and the Python peers, in one run.

Starts a throw-away local cluster, writes --records records of 100 bytes into --partitions
partitions with the reference producer, then measures, on that same data:

1. throughput of one worker from the beginning: zkconsumer per-record and batch iteration, raw
   kafka-python (manual assignment, per-record loop), the reference Scala consumer
   (kafka-consumer-perf-test --zookeeper), and pykafka / confluent-kafka when installed; each
   in its own process, with its peak RSS;
2. offset commit of 1,000 changed partitions to ZooKeeper: zkconsumer's batched transactions
   against one write per znode in sequence;
3. rebalance latency in a group of --members members on a --rebalance-partitions topic: time
   from a member joining or leaving until every partition is owned by a registered member and
   every member is stable again, p50 and p99 over --events events; and the same join event for
   a reference consumer, which is timed from its registration appearing.

    scripts/bench [--records 1000000] [--partitions 8] [--only throughput,commit,rebalance]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from zkconsumer.localcluster import LocalCluster, create_topic
from zkconsumer.localcluster.bundle import ensure_bundle
from zkconsumer.localcluster.processes import bundle_environment
from zkconsumer.localcluster.reference import produce_test_data
from zkconsumer.logs import configure_logging
from zkconsumer.zk.session import zookeeper_session

TOPIC = "bench"
API_VERSION = (0, 9)
SCENARIOS = ("throughput", "commit", "rebalance")


# -- contenders, each run in a fresh process by `--contender NAME` --------------------------

def run_contender(name: str, zookeeper: str, bootstrap: str, records: int, partitions: int
                  ) -> dict:
    started = time.perf_counter()
    count = CONTENDERS[name](zookeeper, bootstrap, records, partitions)
    seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"records": count, "seconds": seconds, "peak_rss_mb": peak_kb / 1024}


def _zkconsumer(batches: bool):
    def consume(zookeeper, _bootstrap, records, _partitions) -> int:
        from zkconsumer import ConsumerConnector

        group = f"bench-{'batch' if batches else 'record'}-{time.time_ns()}"
        connector = ConsumerConnector({"zookeeper.connect": zookeeper, "group.id": group,
                                       "auto.offset.reset": "smallest",
                                       "auto.commit.enable": "false"})
        (stream,) = connector.create_message_streams({TOPIC: 1})[TOPIC]
        count = 0
        try:
            if batches:
                for batch in stream.batches():
                    count += len(batch)
                    if count >= records:
                        break
            else:
                for _message in stream:
                    count += 1
                    if count >= records:
                        break
        finally:
            connector.shutdown(commit=False)
        return count
    return consume


def _kafka_python(_zookeeper, bootstrap, records, partitions) -> int:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=API_VERSION,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    consumer.assign([TopicPartition(TOPIC, p) for p in range(partitions)])
    count = 0
    try:
        while count < records:
            for batch in consumer.poll(timeout_ms=1000).values():
                for _record in batch:
                    count += 1
    finally:
        consumer.close()
    return count


def _pykafka(zookeeper, bootstrap, records, _partitions) -> int:
    from pykafka import KafkaClient

    client = KafkaClient(hosts=bootstrap)
    consumer = client.topics[TOPIC.encode()].get_balanced_consumer(
        consumer_group=f"bench-pykafka-{time.time_ns()}".encode(), zookeeper_connect=zookeeper,
        auto_offset_reset=-2, auto_commit_enable=False)
    count = 0
    try:
        for _message in consumer:
            count += 1
            if count >= records:
                break
    finally:
        consumer.stop()
    return count


def _confluent(_zookeeper, bootstrap, records, partitions) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-confluent",
                         "enable.auto.commit": False, "api.version.request": False,
                         "broker.version.fallback": "0.9.0"})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
    count = 0
    try:
        while count < records:
            message = consumer.poll(1.0)
            if message is not None and not message.error():
                count += 1
    finally:
        consumer.close()
    return count


CONTENDERS = {
    "zkconsumer (per record)": _zkconsumer(batches=False),
    "zkconsumer (batches)": _zkconsumer(batches=True),
    "kafka-python (per record)": _kafka_python,
    "pykafka BalancedConsumer": _pykafka,
    "confluent-kafka (per record)": _confluent,
}
OPTIONAL = {"pykafka BalancedConsumer": "pykafka", "confluent-kafka (per record)": "confluent_kafka"}


# -- the scenarios ----------------------------------------------------------------------------

def throughput(cluster: LocalCluster, args, work: Path) -> None:
    results = {}
    for name in CONTENDERS:
        module = OPTIONAL.get(name)
        if module and importlib.util.find_spec(module) is None:
            print(f"  ({name}: not installed, skipped)")
            continue
        output = subprocess.run(
            [sys.executable, __file__, "--contender", name, "--zookeeper",
             cluster.zookeeper_connect, "--bootstrap", cluster.bootstrap_servers,
             "--records", str(args.records), "--partitions", str(args.partitions)],
            capture_output=True, text=True, timeout=1800, check=False)
        if output.returncode != 0:
            print(f"  ({name} failed: {output.stderr.strip().splitlines()[-1:]})")
            continue
        results[name] = json.loads(output.stdout.strip().splitlines()[-1])
    reference = reference_throughput(cluster, args, work)
    if reference:
        results["reference Scala consumer"] = reference
    base = results.get("zkconsumer (per record)")
    print(f"{'contender':<32} {'records/s':>12} {'vs zkconsumer/record':>21} {'peak RSS MB':>12}")
    for name, result in results.items():
        rate = result["records"] / result["seconds"]
        ratio = rate / (base["records"] / base["seconds"]) if base else float("nan")
        rss = f"{result['peak_rss_mb']:.0f}" if result.get("peak_rss_mb") else "-"
        print(f"{name:<32} {rate:>12,.0f} {ratio:>20.2f}x {rss:>12}")


def reference_throughput(cluster: LocalCluster, args, work: Path) -> dict | None:
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
        return None
    # The tool prints its own figure; we time the whole process like the others.
    return {"records": args.records, "seconds": seconds, "peak_rss_mb": None}


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
    from zkconsumer import ConsumerConnector
    from zkconsumer.assignment import consumer_of_thread
    from zkconsumer.localcluster.reference import ReferenceConsumer
    from zkconsumer.zk.group_state import read_members, read_owners

    topic = f"bench-rebalance-{time.time_ns()}"
    with zookeeper_session(cluster.zookeeper_connect) as zk:
        create_topic(zk, topic, args.rebalance_partitions)

        def settled(group: str, members: list) -> bool:
            owners = read_owners(zk, group)
            live = set(read_members(zk, group))
            return (len(owners) == args.rebalance_partitions
                    and all(consumer_of_thread(t) in live for t in owners.values())
                    and all(m.wait_until_stable(timeout=0) for m in members))

        def start(group: str) -> ConsumerConnector:
            member = ConsumerConnector({"zookeeper.connect": cluster.zookeeper_connect,
                                        "group.id": group, "rebalance.backoff.ms": "500"})
            member.create_message_streams({topic: 1})
            return member

        def timed(group: str, members: list, event) -> float:
            started = time.perf_counter()
            event()
            while not settled(group, members):
                time.sleep(0.005)
            return time.perf_counter() - started

        group = f"bench-rebalance-{time.time_ns()}"
        members = [start(group) for _ in range(args.members)]
        while not settled(group, members):
            time.sleep(0.05)
        times = []
        try:
            for event in range(args.events):
                if event % 2 == 0:
                    leaving = members.pop()
                    times.append(timed(group, members, leaving.shutdown))
                else:
                    times.append(timed(group, members, lambda: members.append(start(group))))
        finally:
            for member in members:
                member.shutdown()
        times.sort()
        p50 = times[len(times) // 2]
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        print(f"rebalance, {args.members} members x {args.rebalance_partitions} partitions, "
              f"{len(times)} join/leave events: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
              f"max {times[-1] * 1000:.0f} ms")

        ref_group = f"bench-ref-rebalance-{time.time_ns()}"
        references = [ReferenceConsumer(work / "reference", cluster.zookeeper_connect, ref_group,
                                        topic=topic) for _ in range(2)]
        try:
            while len(read_owners(zk, ref_group)) < args.rebalance_partitions:
                time.sleep(0.05)
            joiner_known = set(read_members(zk, ref_group))
            references.append(ReferenceConsumer(work / "reference", cluster.zookeeper_connect,
                                                ref_group, topic=topic))
            while set(read_members(zk, ref_group)) == joiner_known:
                time.sleep(0.002)
            started = time.perf_counter()   # from the joiner's registration appearing
            while not settled(ref_group, []) or len(
                    {consumer_of_thread(t) for t in read_owners(zk, ref_group).values()}) < 3:
                time.sleep(0.005)
            print(f"reference consumer joining a group of 2 on the same topic: "
                  f"{(time.perf_counter() - started) * 1000:.0f} ms from its registration")
        finally:
            for reference in references:
                reference.stop()


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
    parser.add_argument("--contender", help=argparse.SUPPRESS)
    parser.add_argument("--zookeeper", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    args = parser.parse_args()
    configure_logging("console", "warning")  # the members' own logs would drown the figures
    if args.contender:
        print(json.dumps(run_contender(args.contender, args.zookeeper, args.bootstrap,
                                       args.records, args.partitions)))
        return
    chosen = [s for s in args.only.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="zkconsumer-bench-") as scratch:
        work = Path(scratch)
        cluster = LocalCluster.start(work / "cluster", brokers=1)
        try:
            if "throughput" in chosen:
                produce(cluster, args.records, args.partitions, work)
                print(f"== throughput: {args.records:,} records of 100 bytes, "
                      f"{args.partitions} partitions, from the beginning, whole process")
                throughput(cluster, args, work)
            if "commit" in chosen:
                print("== offset commit")
                commit(cluster, args, work)
            if "rebalance" in chosen:
                print("== rebalance latency")
                rebalance(cluster, args, work)
        finally:
            cluster.stop(remove_data=True)


if __name__ == "__main__":
    main()

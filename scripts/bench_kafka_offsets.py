"""Kafka-stored offsets, read and written: the lag exporter's scan of many groups' committed
offsets (what `ClusterReads.kafka_offsets` asks, through `GroupOffsetsReader`) and a commit
with offsets.storage=kafka (`KafkaOffsetStore`), each against kafka-python doing the same
(its admin client's `list_group_offsets`, one call per group as it asks a 0.9 coordinator, and
an unsubscribed consumer's `commit`).

    .venv/bin/python scripts/bench_kafka_offsets.py [--groups 5000] [--group-partitions 10]
        [--commit-partitions 1000] [--baseline-tree PATH]

`scripts/bench --only kafka-offsets` runs it on the bench's cluster. --baseline-tree also
measures the zkconsumer of another checkout (the main branch, say), in the same run. Each
contender runs in a process of its own, one after the other; the scan is timed with a fresh
reader (finding every coordinator) and then again with the same reader (the exporter's steady
state); the commit as the median of 5, after one untimed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
API_VERSION = (0, 9)


def _zkconsumer(bootstrap: str, topic: str, groups: list[str], partitions: int,
                commit_partitions: int) -> dict[str, float]:
    from zkconsumer.fetch import KafkaAccess
    from zkconsumer.model import TopicPartition
    from zkconsumer.offsets import GroupOffsetsReader, KafkaOffsetStore

    tps = [TopicPartition(topic, p) for p in range(partitions)]
    wanted = dict.fromkeys(groups, tps)
    reader = GroupOffsetsReader(KafkaAccess(bootstrap, API_VERSION), {}, 30000)
    try:
        started = time.perf_counter()
        answer = reader.read(wanted)
        first = time.perf_counter() - started
        assert len(answer.found) == len(groups) and not answer.failed, answer.failed
        started = time.perf_counter()
        reader.read(wanted)
        steady = time.perf_counter() - started
    finally:
        reader.close()
    store = KafkaOffsetStore(f"{groups[0]}-commit", bootstrap, api_version=API_VERSION,
                             request_timeout_ms=30000)
    commit_tps = [TopicPartition(f"{topic}-c{p // partitions}", p % partitions)
                  for p in range(commit_partitions)]
    try:
        commits = []
        for round_number in range(6):
            started = time.perf_counter()
            store.commit(dict.fromkeys(commit_tps, round_number + 1))
            commits.append(time.perf_counter() - started)
    finally:
        store.close()
    return {"first_scan": first, "steady_scan": steady, "commit": statistics.median(commits[1:])}


def _kafka_python(bootstrap: str, topic: str, groups: list[str], partitions: int,
                  commit_partitions: int) -> dict[str, float]:
    from kafka import KafkaAdminClient, KafkaConsumer, OffsetAndMetadata
    from kafka import TopicPartition as KafkaTopicPartition

    tps = [KafkaTopicPartition(topic, p) for p in range(partitions)]
    scans = []
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, api_version=API_VERSION)
    try:
        for _ in range(2):
            started = time.perf_counter()
            for group in groups:
                admin.list_group_offsets({group: [(tp.topic, tp.partition) for tp in tps]})
            scans.append(time.perf_counter() - started)
    finally:
        admin.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=API_VERSION,
                             group_id=f"{groups[0]}-commit-kp", enable_auto_commit=False)
    commit_tps = [KafkaTopicPartition(f"{topic}-c{p // partitions}", p % partitions)
                  for p in range(commit_partitions)]
    try:
        commits = []
        for round_number in range(6):
            started = time.perf_counter()
            consumer.commit({tp: OffsetAndMetadata(round_number + 1, "", -1)
                             for tp in commit_tps})
            commits.append(time.perf_counter() - started)
    finally:
        consumer.close(autocommit=False)
    return {"first_scan": scans[0], "steady_scan": scans[1],
            "commit": statistics.median(commits[1:])}


CONTENDERS = {"zkconsumer": _zkconsumer, "kafka-python": _kafka_python}


def _contender(name: str, tree: str | None, setup: dict) -> dict[str, float]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = tree
    done = subprocess.run([sys.executable, str(HERE), "--contender", name],
                          input=json.dumps(setup), capture_output=True, text=True, env=env,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def _set_up(bootstrap: str, zookeeper_connect: str, groups: int, partitions: int,
            commit_partitions: int) -> dict:
    """A topic of `partitions`, and `groups` groups with an offset committed in Kafka for each
    of its partitions (written through the cluster client, not timed); the commit's topics."""
    from zkconsumer.fetch import KafkaAccess
    from zkconsumer.localcluster import create_topic
    from zkconsumer.model import TopicPartition
    from zkconsumer.offsets import GroupOffsetsReader
    from zkconsumer.zk.session import zookeeper_session

    prefix = f"bench-kafka-offsets-{time.time_ns()}"
    topic = f"{prefix}-t"
    with zookeeper_session(zookeeper_connect) as zk:
        create_topic(zk, topic, partitions)
        for number in range((commit_partitions + partitions - 1) // partitions):
            create_topic(zk, f"{topic}-c{number}", partitions)
    names = [f"{prefix}-g{number:05d}" for number in range(groups)]
    writer = GroupOffsetsReader(KafkaAccess(bootstrap, API_VERSION), {}, 30000)
    deadline = time.monotonic() + 120
    try:
        for number, group in enumerate(names):
            offsets = {TopicPartition(topic, p): number % 7 + 1 for p in range(partitions)}
            while True:  # a new cluster answers "not available" until its offsets topic is up
                try:
                    writer.commit(group, offsets)
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
    finally:
        writer.close()
    return {"bootstrap": bootstrap, "topic": topic, "groups": names, "partitions": partitions,
            "commit_partitions": commit_partitions}


def measure(bootstrap: str, zookeeper_connect: str, groups: int, partitions: int,
            commit_partitions: int, baseline_tree: str | None) -> None:
    started = time.perf_counter()
    setup = _set_up(bootstrap, zookeeper_connect, groups, partitions, commit_partitions)
    print(f"{groups:,} groups with {partitions} Kafka-stored offsets each set up in "
          f"{time.perf_counter() - started:.0f} s (not a figure)")
    load = os.getloadavg()
    rows = [("zkconsumer", None)]
    if baseline_tree:
        rows.append((f"zkconsumer ({baseline_tree})", baseline_tree))
    rows.append(("kafka-python", None))
    results = {}
    for name, tree in rows:
        results[name] = _contender("kafka-python" if name == "kafka-python" else "zkconsumer",
                                   tree, setup)
    peer = results["kafka-python"]
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} before the runs")
    for what, label in (("first_scan", f"scan of {groups:,} groups' offsets, fresh reader"),
                        ("steady_scan", f"scan of {groups:,} groups' offsets, again"),
                        ("commit", f"commit of {commit_partitions:,} offsets, median of 5")):
        print(f"{label}:")
        for name, figures in results.items():
            ratio = "" if name == "kafka-python" else f"  ({figures[what] / peer[what]:.2f}x " \
                                                      "kafka-python's time)"
            print(f"    {name:<40} {figures[what] * 1000:9.0f} ms{ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=5000)
    parser.add_argument("--group-partitions", type=int, default=10)
    parser.add_argument("--commit-partitions", type=int, default=1000)
    parser.add_argument("--baseline-tree", help="also measure this checkout's zkconsumer")
    parser.add_argument("--contender", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.contender:
        setup = json.loads(sys.stdin.read())
        print(json.dumps(CONTENDERS[args.contender](
            setup["bootstrap"], setup["topic"], setup["groups"], setup["partitions"],
            setup["commit_partitions"])))
        return
    from zkconsumer.localcluster import LocalCluster

    with tempfile.TemporaryDirectory(prefix="zkconsumer-bench-") as scratch:
        cluster = LocalCluster.start(Path(scratch) / "cluster", brokers=1)
        try:
            measure(cluster.bootstrap_servers, cluster.zookeeper_connect, args.groups,
                    args.group_partitions, args.commit_partitions, args.baseline_tree)
        finally:
            cluster.stop(remove_data=True)


if __name__ == "__main__":
    main()

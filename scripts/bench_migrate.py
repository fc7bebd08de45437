"""Benchmark: migrate 100 groups x 100 partitions (10,000 offsets) from ZooKeeper to Kafka.

Runs on a throw-away local cluster (or ZKCONSUMER_ZOOKEEPER_CONNECT, if set, which must point at
a disposable cluster). The target is under 10 s for the whole `offsets migrate --all --to kafka`
(read both storages, plan, write, read back, verify). The named peer, timed on the same data in
the same run, is the reference ExportZkOffsets, which only *reads* the ZooKeeper side.

    .venv/bin/python scripts/bench_migrate.py [--groups 100] [--partitions 100]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from click.testing import CliRunner

from zkconsumer.cli import cli
from zkconsumer.localcluster import LocalCluster, create_topic
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import ZookeeperOffsetStore
from zkconsumer.testing.reference import run_tool
from zkconsumer.zk.session import zookeeper_session

TARGET_S = 10.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zkconsumer-bench-") as work:
        external = os.environ.get("ZKCONSUMER_ZOOKEEPER_CONNECT")
        local = None if external else LocalCluster.start(Path(work) / "cluster", brokers=1)
        try:
            run(external or local.zookeeper_connect, args.groups, args.partitions, Path(work))
        finally:
            if local is not None:
                local.stop(remove_data=True)


def run(zookeeper: str, groups: int, partitions: int, work: Path) -> None:
    topic = f"bench-migrate-{int(time.time())}"
    names = [f"{topic}-g{i:03d}" for i in range(groups)]
    with zookeeper_session(zookeeper) as zk:
        create_topic(zk, topic, partitions)
        for n, group in enumerate(names):
            ZookeeperOffsetStore(zk, group).commit(
                {TopicPartition(topic, p): 1000 + n + p for p in range(partitions)})
    total = groups * partitions
    print(f"{total} offsets in {groups} groups x {partitions} partitions")

    started = time.perf_counter()
    result = run_tool("kafka.tools.ExportZkOffsets",
                      ["--zkconnect", zookeeper, "--output-file", str(work / "export.txt"),
                       *[arg for g in names for arg in ("--group", g)]],
                      work_dir=work / "tools", timeout=600)
    reference_s = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"reference ExportZkOffsets failed: {result.stderr[-500:]}")

    args = ["offsets", "migrate", "--to", "kafka", "--zookeeper", zookeeper, "--json",
            *[arg for g in names for arg in ("--group", g)]]
    started = time.perf_counter()
    outcome = CliRunner().invoke(cli, args)
    ours_s = time.perf_counter() - started
    if outcome.exit_code != 0:
        raise SystemExit(f"migrate failed: {outcome.stderr[-500:]}")

    started = time.perf_counter()
    again = CliRunner().invoke(cli, args)
    rerun_s = time.perf_counter() - started

    print(f"reference ExportZkOffsets (read ZooKeeper only): {reference_s:6.2f} s")
    print(f"zkconsumer offsets migrate --to kafka (read both, write, verify): {ours_s:6.2f} s "
          f"({ours_s / reference_s:.2f}x the reference export; {total / ours_s:,.0f} offsets/s)")
    print(f"second run (a no-op):                             {rerun_s:6.2f} s "
          f"(exit {again.exit_code})")
    print(f"target: under {TARGET_S:.0f} s -> {'met' if ours_s < TARGET_S else 'MISSED'}")


if __name__ == "__main__":
    main()

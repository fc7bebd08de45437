"""Benchmark: read 1,000,000 records of 100 bytes through the `zkconsumer` Spark data source,
next to a single-process kafka-python read of the same offsets, in the same invocation.

Runs on a throw-away local cluster; the data is written with the reference
kafka-producer-perf-test. Spark runs local[N] (N = --cores, default 2).

    .venv/bin/python scripts/bench_spark_read.py [--records 1000000] [--partitions 4]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from zkconsumer.localcluster import LocalCluster, create_topic
from zkconsumer.localcluster.reference import produce_test_data
from zkconsumer.zk.session import zookeeper_session

API_VERSION = (0, 9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zkconsumer-bench-") as work:
        local = LocalCluster.start(Path(work) / "cluster", brokers=1)
        try:
            run(local, args, Path(work))
        finally:
            local.stop(remove_data=True)


def run(local: LocalCluster, args, work: Path) -> None:
    topic = "bench-spark"
    with zookeeper_session(local.zookeeper_connect) as zk:
        create_topic(zk, topic, args.partitions)
    produce(local, topic, args.records, work)

    started = time.perf_counter()
    count, size = direct_read(local.bootstrap_servers, topic, args.partitions)
    direct_s = time.perf_counter() - started

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from zkconsumer.spark import register

    spark = (SparkSession.builder.master(f"local[{args.cores}]").appName("bench")
             .config("spark.ui.enabled", "false")
             .config("spark.local.dir", str(work / "spark"))
             .config("spark.sql.warehouse.dir", str(work / "warehouse")).getOrCreate())
    try:
        register(spark)
        per_task = max(1, args.records // (args.cores * 4))
        frame = (spark.read.format("zkconsumer")
                 .option("zookeeper.connect", local.zookeeper_connect)
                 .option("group.id", "bench").option("topics", topic)
                 .option("auto.offset.reset", "smallest")
                 .option("maxRecordsPerPartition", str(per_task)).load())
        started = time.perf_counter()
        row = frame.selectExpr("count(*) AS n", "sum(length(value)) AS bytes").collect()[0]
        spark_s = time.perf_counter() - started
    finally:
        spark.stop()

    if (row.n, row.bytes) != (count, size):
        raise SystemExit(f"mismatch: spark read {row.n} records / {row.bytes} bytes, "
                         f"kafka-python {count} / {size}")
    print(f"{count:,} records of {size // max(count, 1)} bytes in {args.partitions} partitions")
    print(f"kafka-python, one process:          {direct_s:6.2f} s  {count / direct_s:>12,.0f} rows/s")
    print(f"zkconsumer data source, local[{args.cores}]:  {spark_s:6.2f} s  "
          f"{count / spark_s:>12,.0f} rows/s  ({direct_s / spark_s:.2f}x kafka-python)")


def produce(local: LocalCluster, topic: str, records: int, work: Path) -> None:
    produce_test_data(local.bootstrap_servers, topic, records, work_dir=work)


def direct_read(bootstrap: str, topic: str, partitions: int) -> tuple[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=API_VERSION,
                             enable_auto_commit=False, max_poll_records=10_000)
    tps = [KafkaTopicPartition(topic, p) for p in range(partitions)]
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        count = size = 0
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            for records in consumer.poll(timeout_ms=1000).values():
                count += len(records)
                size += sum(len(r.value) for r in records)
        return count, size
    finally:
        consumer.close()


if __name__ == "__main__":
    main()

"""Benchmark: read 1,000,000 records of 100 bytes through the `zkconsumer` Spark data source
at local[2], against one zkconsumer process reading the same records, in the same invocation.

Three readers, each from the earliest offset of the same topic, each timed from the moment it
can read until its last record is counted:

- kafka-python, one process (manual assignment, every partition, polled to the end offsets);
- zkconsumer, one process: a ZooKeeper group member of a fresh group via `ConsumerConnector`,
  one stream, read with `stream.arrow_batches()` (its fastest path);
- the `zkconsumer` Spark data source at local[N] (N = --cores, default 2): count(*) and
  sum(length(value)), twice in one Spark session: the first read as a job run once sees it
  (Spark starts its Python workers), the second with the workers running.

A last row runs the same query over a data source that yields ready-made Arrow batches of
the same shape (no Kafka): Spark's own cost, the most any source could gain.

The count and value bytes of every reader must match. Target: the Spark read at local[2] is at
least 1.5x as fast as one zkconsumer process; the Spark row prints both ratios.

Runs on a throw-away local cluster; the data is written with the reference
kafka-producer-perf-test.

    .venv/bin/python scripts/bench_spark_read.py [--records 1000000] [--partitions 4] [--cores 2]
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
from zkconsumer.logs import configure_logging
from zkconsumer.testing.reference import produce_test_data
from zkconsumer.zk.session import zookeeper_session

API_VERSION = (0, 9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    configure_logging("console", "warning")  # the member's own logs would drown the figures
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
    # Read until as many records as kafka-python found up to the end offsets; a shortfall
    # shows as a mismatch (or a ConsumerTimeout) rather than a hang.
    own_count, own_size, own_s = zkconsumer_read(local.zookeeper_connect, topic, count)

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
        spark_s = []   # the first read starts Spark's Python workers; the second finds them
        for _ in range(2):
            started = time.perf_counter()
            row = frame.selectExpr("count(*) AS n", "sum(length(value)) AS bytes").collect()[0]
            spark_s.append(time.perf_counter() - started)
        floor_s = spark_floor(spark, count, size // max(count, 1), args.cores * 4)
    finally:
        spark.stop()

    read = {"kafka-python": (count, size), "zkconsumer": (own_count, own_size),
            "spark": (row.n, row.bytes)}
    if len(set(read.values())) != 1:
        raise SystemExit("mismatch (records, value bytes): " + ", ".join(
            f"{name} {n} / {b}" for name, (n, b) in read.items()))
    print(f"{count:,} records of {size // max(count, 1)} bytes in {args.partitions} partitions")
    print(_row("kafka-python, one process:", direct_s, count))
    print(_row("zkconsumer, one process:", own_s, count))
    for when, seconds in zip(("first", "second"), spark_s, strict=True):
        print(_row(f"zkconsumer data source, local[{args.cores}], {when} read:", seconds, count)
              + f"  ({own_s / seconds:.2f}x one zkconsumer process, "
              f"{direct_s / seconds:.2f}x kafka-python)")
    print(_row(f"Spark's floor, local[{args.cores}], no Kafka:", floor_s, count)
          + f"  ({own_s / floor_s:.2f}x one zkconsumer process)")


def spark_floor(spark, rows: int, value_size: int, tasks: int) -> float:
    """The same query over a Python data source that yields ready-made Arrow batches of the
    zkconsumer source's schema, in as many tasks: what Spark itself costs, Python workers
    running, with no Kafka read at all (the second of two reads)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class Share(InputPartition):
        def __init__(self, rows: int) -> None:
            self.rows = rows

    class ReadyMade(DataSourceReader):
        def partitions(self):
            return [Share(rows // tasks + (1 if i < rows % tasks else 0)) for i in range(tasks)]

        def read(self, partition):
            import pyarrow as pa

            from zkconsumer.spark.reading import arrow_schema

            n = partition.rows
            yield pa.RecordBatch.from_arrays([
                pa.nulls(n, pa.binary()), pa.array([b"x" * value_size] * n, pa.binary()),
                pa.repeat(pa.scalar("bench", pa.string()), n),
                pa.repeat(pa.scalar(0, pa.int32()), n),
                pa.array(range(n), pa.int64()), pa.nulls(n, pa.timestamp("us", tz="UTC")),
            ], schema=arrow_schema(False))

    class Floor(DataSource):
        @classmethod
        def name(cls) -> str:
            return "zkconsumer-bench-floor"

        def schema(self) -> str:
            from zkconsumer.spark.reading import schema_ddl

            return schema_ddl(False)

        def reader(self, schema):
            return ReadyMade()

    spark.dataSource.register(Floor)
    frame = spark.read.format("zkconsumer-bench-floor").load()
    seconds = []
    for _ in range(2):
        started = time.perf_counter()
        frame.selectExpr("count(*) AS n", "sum(length(value)) AS bytes").collect()
        seconds.append(time.perf_counter() - started)
    return seconds[-1]


def _row(label: str, seconds: float, count: int) -> str:
    return f"{label:<50}{seconds:6.2f} s  {count / seconds:>12,.0f} rows/s"


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


def zkconsumer_read(zookeeper: str, topic: str, records: int) -> tuple[int, int, float]:
    """One group member of a fresh group from the earliest offset, one stream, read as Arrow
    batches (as scripts/bench.py's "zkconsumer (arrow batches)" contender) until `records`
    records; timed from the streams' creation to the last record counted."""
    import pyarrow.compute as pc

    from zkconsumer import ConsumerConnector

    connector = ConsumerConnector({"zookeeper.connect": zookeeper,
                                   "group.id": f"bench-spark-read-{time.time_ns()}",
                                   "auto.offset.reset": "smallest",
                                   "auto.commit.enable": "false",
                                   "consumer.timeout.ms": "60000"})
    try:
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        started = time.perf_counter()
        count = size = 0
        for table in stream.arrow_batches():
            size += pc.sum(pc.binary_length(table.column("value"))).as_py() or 0
            count += table.num_rows
            if count >= records:
                break
        return count, size, time.perf_counter() - started
    finally:
        connector.shutdown(commit=False)


if __name__ == "__main__":
    main()

"""Example PySpark job: read what a legacy group has not consumed yet, write it as Parquet,
then move the group forward, so the next run picks up where this one stopped.

    .venv/bin/python scripts/spark_example.py --zookeeper zk1:2181 --group nightly-export \\
        --topic events --output /data/events/ [--property offsets.storage=kafka ...]

If the job fails before the commit, nothing moves and the next run reads the same data again.
"""

from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import SparkSession

from zkconsumer.spark import GroupRead


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zookeeper", required=True, help="zookeeper.connect")
    parser.add_argument("--group", required=True, help="group.id")
    parser.add_argument("--topic", required=True, help="topics, comma-separated")
    parser.add_argument("--output", required=True, help="where to write the Parquet files")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="more source options, e.g. offsets.storage=kafka")
    args = parser.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.appName(f"zkconsumer-export-{args.group}").getOrCreate()
    options = {"zookeeper.connect": args.zookeeper, "group.id": args.group,
               "topics": args.topic, "decodeUtf8": "true",
               **dict(item.split("=", 1) for item in args.property)}
    try:
        read = GroupRead.plan(spark, options)
        print(f"reading {read.record_count()} records: {read.starting_offsets} -> "
              f"{read.ending_offsets}")
        read.load().write.mode("append").partitionBy("topic").parquet(args.output)
        written = read.commit()
        print(f"committed {len(written)} partition offset(s) for group {args.group}")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()

"""`GroupRead`: a batch read of a group (in ZooKeeper, or on Kafka's group coordinator with
`group.coordination=kafka`) that can be committed back once its output is safely written.

    read = GroupRead.plan(spark, {"zookeeper.connect": "zk:2181", "group.id": "g",
                                  "topics": "events"})
    read.load().write.parquet("out/")      # exactly the planned offsets, however long it takes
    read.commit()                          # the group moves to where the read ended

The commit refuses (and writes nothing) while live members own any of the partitions (on
Kafka's group coordinator: while the group has any members), when the group's offsets moved
since the plan was made, or when one would go back (`commit_guard`): each way someone else is
consuming, and committing would skip or re-read their messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from zkconsumer.admin.offset_files import offsets_to_json
from zkconsumer.model import TopicPartition
from zkconsumer.spark.options import SourceOptions
from zkconsumer.spark.planning import GroupClients, ReadPlan, plan_read
from zkconsumer.spark.source import register

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class GroupRead:
    def __init__(self, spark: SparkSession, options: Mapping[str, str], read_plan: ReadPlan
                 ) -> None:
        self._spark = spark
        self._options = dict(options)
        self._parsed = SourceOptions.parse(self._options)
        self.read_plan = read_plan

    @classmethod
    def plan(cls, spark: SparkSession, options: Mapping[str, str]) -> GroupRead:
        """Fix the offsets to read now: from the group's committed ones to the log ends (or
        as `startingOffsets`/`endingOffsets` say)."""
        return cls(spark, options, plan_read(SourceOptions.parse(dict(options))))

    @property
    def starting_offsets(self) -> str:
        return offsets_to_json(self.read_plan.starts)

    @property
    def ending_offsets(self) -> str:
        return offsets_to_json(self.read_plan.ends)

    def record_count(self) -> int:
        return sum(self.read_plan.ends[tp] - self.read_plan.starts[tp] for tp in self.read_plan.ends)

    def load(self) -> DataFrame:
        """The planned offsets, pinned, so the DataFrame reads the same data however often
        it is evaluated."""
        register(self._spark)
        return (self._spark.read.format("zkconsumer").options(**self._options)
                .option("startingOffsets", self.starting_offsets)
                .option("endingOffsets", self.ending_offsets).load())

    def commit(self) -> dict[TopicPartition, int]:
        """Move the group to the read's end offsets; returns what was written."""
        with GroupClients(self._parsed) as clients:
            return clients.commit(self.read_plan.ends, planned=self.read_plan.committed)

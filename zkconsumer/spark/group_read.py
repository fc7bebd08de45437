"""`GroupRead`: a batch read of a legacy group that can be committed back once its output is
safely written.

    read = GroupRead.plan(spark, {"zookeeper.connect": "zk:2181", "group.id": "g",
                                  "topics": "events"})
    read.load().write.parquet("out/")      # exactly the planned offsets, however long it takes
    read.commit()                          # the group moves to where the read ended

The commit refuses (and writes nothing) while live members own any of the partitions, or when
the group's offsets moved since the plan was made: either way someone else is consuming, and
committing would skip or re-read their messages.
"""

from __future__ import annotations

from collections.abc import Mapping

from zkconsumer.admin.offset_files import offsets_to_json
from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import TopicPartition
from zkconsumer.spark.options import SourceOptions
from zkconsumer.spark.planning import GroupClients, ReadPlan, plan_read
from zkconsumer.spark.source import register
from zkconsumer.zk.group_state import read_owners


class CommitRefusedError(ZkConsumerError):
    """Committing the read back would race another consumer of the group."""


class GroupRead:
    def __init__(self, spark, options: Mapping[str, str], read_plan: ReadPlan) -> None:
        self._spark = spark
        self._options = dict(options)
        self._parsed = SourceOptions.parse(self._options)
        self.read_plan = read_plan

    @classmethod
    def plan(cls, spark, options: Mapping[str, str]) -> GroupRead:
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

    def load(self):
        """The planned offsets, pinned, so the DataFrame reads the same data however often
        it is evaluated."""
        register(self._spark)
        return (self._spark.read.format("zkconsumer").options(**self._options)
                .option("startingOffsets", self.starting_offsets)
                .option("endingOffsets", self.ending_offsets).load())

    def commit(self) -> dict[TopicPartition, int]:
        """Move the group to the read's end offsets; returns what was written."""
        partitions = sorted(self.read_plan.ends)
        with GroupClients(self._parsed) as clients:
            owners = read_owners(clients.zk, self.read_plan.group)
            owned = {tp: owner for tp, owner in owners.items() if tp in self.read_plan.ends}
            if owned:
                tp, owner = next(iter(owned.items()))
                raise CommitRefusedError(
                    f"group {self.read_plan.group} has live members owning {len(owned)} of these "
                    f"partitions (e.g. {tp} by {owner}); nothing committed")
            now = clients.committed(partitions)
            moved = {tp for tp in partitions if now.get(tp) != self.read_plan.committed.get(tp)}
            if moved:
                tp = min(moved)
                raise CommitRefusedError(
                    f"the offsets of group {self.read_plan.group} moved since this read was "
                    f"planned (e.g. {tp}: {self.read_plan.committed.get(tp)} then, "
                    f"{now.get(tp)} now); nothing committed")
            return clients.commit(self.read_plan.ends)

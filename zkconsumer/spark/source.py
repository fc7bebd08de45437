"""The `zkconsumer` Spark data source: batch and streaming reads of a group's topics, for a
legacy group in ZooKeeper or one on Kafka's group coordinator.

    from zkconsumer.spark import register
    register(spark)
    df = (spark.read.format("zkconsumer").option("zookeeper.connect", "zk:2181")
          .option("group.id", "g").option("topics", "a,b").load())

Options are checked and the read is planned on the driver when the DataFrame is created, so bad
options fail before any Spark job starts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from zkconsumer.admin.offset_files import offsets_from_json, offsets_to_json
from zkconsumer.model import TopicPartition
from zkconsumer.spark.options import SourceOptions
from zkconsumer.spark.planning import GroupClients, plan_read, selected_partitions
from zkconsumer.spark.ranges import OffsetRange, cap_total, split_ranges
from zkconsumer.spark.reading import read_range, schema_ddl

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class RangePartition(InputPartition):
    def __init__(self, offsets: OffsetRange) -> None:
        super().__init__(offsets)
        self.offsets = offsets


class ZkConsumerDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "zkconsumer"

    def __init__(self, options) -> None:
        super().__init__(options)
        self.parsed = SourceOptions.parse(dict(options))

    def schema(self) -> str:
        # Spark asks for the schema when the DataFrame is created: the moment to find an
        # unreachable ZooKeeper (or brokers) or an unknown topic, before anything is planned
        # or run.
        selected_partitions(self.parsed)
        return schema_ddl(self.parsed.decode_utf8)

    def reader(self, schema) -> DataSourceReader:
        return GroupBatchReader(self.parsed)

    def streamReader(self, schema) -> DataSourceStreamReader:
        return GroupStreamReader(self.parsed)


class GroupBatchReader(DataSourceReader):
    """Reads from the plan's starts to its ends; made (and the plan fixed) on the driver."""

    def __init__(self, options: SourceOptions) -> None:
        self._decode = options.decode_utf8
        self._fail_on_data_loss = options.fail_on_data_loss
        self._max_records = options.max_records_per_partition
        self._plan = plan_read(options)

    def partitions(self) -> list[InputPartition]:
        ranges = split_ranges(self._plan.starts, self._plan.ends, self._max_records)
        # Spark wants at least one partition, even for no data
        return [RangePartition(r) for r in ranges] or [InputPartition(None)]

    def read(self, partition: InputPartition):
        if not isinstance(partition, RangePartition):   # the one for no data
            return iter(())
        return read_range(self._plan, partition.offsets, self._decode, self._fail_on_data_loss)


class GroupStreamReader(DataSourceStreamReader):
    """Continues the group: starts at its committed offsets and commits each completed
    micro-batch's end offsets back to the group, in the group's `offsets.storage` (in Kafka,
    for a group on Kafka's group coordinator). As with a consumer, delivery is at-least-once:
    a batch whose output was written but not yet committed is read again after a crash
    without a checkpoint.

    The query fails (`CommitRefusedError`, naming a partition or the coordinator's members)
    rather than commit over a live member's partitions, into a group with members on Kafka's
    group coordinator, or move an offset of the group back: a stream that shares its group
    with other consumers cannot go on without losing or rewinding someone's records."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._clients: GroupClients | None = None
        self._plan = self._group().plan()

    def __getstate__(self) -> dict:
        # Spark ships the reader to executors for `read`; the connections stay on the driver.
        return {**self.__dict__, "_clients": None}

    def initialOffset(self) -> dict:
        return _to_offset_dict(self._plan.starts)

    def getDefaultReadLimit(self):
        limit = self._options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def latestOffset(self, start: dict, limit) -> dict:
        starts = _from_offset_dict(start)
        clients = self._group()
        try:
            # Spark runs micro-batches one at a time, so `start` (the previous batch's end) has
            # been processed: commit it to the group here. Spark's own `commit()` hook is not
            # used: it only comes when the next batch is planned, which would leave the last
            # batch uncommitted until more data arrives.
            clients.commit(starts)
            # Partitions under way go on from `start`: an explicit start option that retention
            # has deleted since the query began must not fail it.
            fresh = clients.plan(strict=False)
        except BaseException:
            self.stop()  # the next trigger connects anew
            raise
        # New partitions (a topic created for a whitelist) start where the plan says.
        starts = {tp: starts.get(tp, fresh.starts[tp]) for tp in fresh.ends}
        ends = {tp: max(starts[tp], fresh.ends[tp]) for tp in starts}
        if isinstance(limit, ReadMaxRows):
            ends = cap_total(starts, ends, limit.max_rows)
        return _to_offset_dict(ends)

    def stop(self) -> None:
        if self._clients is not None:
            clients, self._clients = self._clients, None
            clients.close()

    def _group(self) -> GroupClients:
        """The query's connections, kept across triggers."""
        if self._clients is None:
            self._clients = GroupClients(self._options)
        return self._clients

    def partitions(self, start: dict, end: dict) -> list[RangePartition]:
        starts, ends = _from_offset_dict(start), _from_offset_dict(end)
        starts = {tp: starts.get(tp, ends[tp]) for tp in ends}
        ranges = split_ranges(starts, ends, self._options.max_records_per_partition)
        return [RangePartition(r) for r in ranges]

    def read(self, partition: InputPartition):
        assert isinstance(partition, RangePartition)  # as `partitions()` made it
        return read_range(self._plan, partition.offsets, self._options.decode_utf8,
                          self._options.fail_on_data_loss)


def _to_offset_dict(offsets: Mapping[TopicPartition, int]) -> dict:
    return json.loads(offsets_to_json(offsets))


def _from_offset_dict(document: dict) -> dict[TopicPartition, int]:
    return offsets_from_json(json.dumps(document), "offset", "Spark checkpoint")


def register(spark: SparkSession) -> None:
    """Make `spark.read.format("zkconsumer")` (and `readStream`) available in this session."""
    spark.dataSource.register(ZkConsumerDataSource)

"""The `zkconsumer` Spark data source (needs the `spark` extra: pyspark 4.2+, pyarrow)."""

from zkconsumer.spark.commit_guard import CommitRefusedError
from zkconsumer.spark.group_read import GroupRead
from zkconsumer.spark.source import ZkConsumerDataSource, register

__all__ = ["CommitRefusedError", "GroupRead", "ZkConsumerDataSource", "register"]

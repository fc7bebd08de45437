"""Offsets in ZooKeeper, at /consumers/<group>/offsets/<topic>/<partition>, as the reference
keeps them, so reference consumers and tools (ConsumerOffsetChecker, ExportZkOffsets) read ours.

A group with thousands of partitions commits every auto-commit interval, so reads are
pipelined (all requests sent before any answer is awaited) and writes go in multi-op
transactions instead of one synchronous round trip per znode.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import structlog
from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from zkconsumer.model import TopicPartition
from zkconsumer.znodes.consumers import NO_OFFSET, decode_offset, encode_offset
from zkconsumer.znodes.paths import GroupPaths

log = structlog.get_logger(__name__)

# A transaction travels as one request, which ZooKeeper rejects beyond jute.maxbuffer (1 MB by
# default). 200 ops with the longest legal names (249-character topic and group) stay near
# 110 KB, far below it, while 1,000 partitions still need only 5 requests.
DEFAULT_BATCH_SIZE = 200


class ZookeeperOffsetStore:
    """The group's offset znodes; the caller owns (and closes) the ZooKeeper client."""

    name = "zookeeper"

    def __init__(self, zk: KazooClient, group: str, *,
                 batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self._zk = zk
        self._paths = GroupPaths(group)
        self._batch_size = batch_size
        # Offset znodes believed to exist, to choose set_data or create inside a transaction.
        # Only a hint: a wrong guess fails that transaction, which is then redone znode by znode.
        self._existing: set[str] = set()

    def fetch(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Raises ZnodeDataError naming the znode if one holds something other than an offset;
        the znode is left as it is, for an operator to inspect."""
        paths = {tp: self._paths.offset(tp.topic, tp.partition) for tp in partitions}
        requests = {tp: self._zk.get_async(path) for tp, path in paths.items()}
        offsets = {}
        for tp, path in paths.items():
            try:
                data, _stat = requests[tp].get()
            except NoNodeError:
                self._existing.discard(path)
                continue
            self._existing.add(path)
            offset = decode_offset(path, data)
            if offset != NO_OFFSET:
                offsets[tp] = offset
        return offsets

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        paths = {tp: self._paths.offset(tp.topic, tp.partition) for tp in offsets}
        writes = [(paths[tp], encode_offset(offset)) for tp, offset in offsets.items()]
        self._learn_existing({tp.topic for tp, path in paths.items()
                              if path not in self._existing})
        batches = [writes[start:start + self._batch_size]
                   for start in range(0, len(writes), self._batch_size)]
        started = [(batch, self._transaction(batch).commit_async()) for batch in batches]
        for batch, request in started:
            results = request.get()
            if any(isinstance(result, Exception) for result in results):
                # Someone created or deleted an offset znode since we looked (an admin tool,
                # another member); the transaction applied nothing, so write one by one.
                log.warning("offset transaction conflicted, writing znodes one by one",
                         group=self._paths.group, znodes=len(batch),
                         errors=sorted({type(r).__name__ for r in results
                                        if isinstance(r, Exception)}))
                for path, data in batch:
                    self._write_one(path, data)
            else:
                self._existing.update(path for path, _data in batch)

    def close(self) -> None:
        """Nothing to release: the ZooKeeper session belongs to the caller."""

    def _learn_existing(self, topics: set[str]) -> None:
        """One pipelined read per topic instead of one per partition; creates missing topic
        directories, since a transaction can only create znodes whose parent exists."""
        requests = [(directory, self._zk.get_children_async(directory))
                    for directory in map(self._paths.offsets_topic, sorted(topics))]
        for directory, request in requests:
            try:
                children = request.get()
            except NoNodeError:
                self._zk.ensure_path(directory)
                children = []
            self._existing.update(f"{directory}/{child}" for child in children)

    def _transaction(self, batch: list[tuple[str, bytes]]):
        transaction = self._zk.transaction()
        for path, data in batch:
            if path in self._existing:
                transaction.set_data(path, data)
            else:
                transaction.create(path, data)
        return transaction

    def _write_one(self, path: str, data: bytes) -> None:
        try:
            self._zk.set(path, data)
        except NoNodeError:
            try:
                self._zk.create(path, data, makepath=True)
            except NodeExistsError:
                self._zk.set(path, data)
        self._existing.add(path)

"""Offsets in ZooKeeper, at /consumers/<group>/offsets/<topic>/<partition>, as the reference
keeps them, so reference consumers and tools (ConsumerOffsetChecker, ExportZkOffsets) read ours.

A group with thousands of partitions commits every auto-commit interval, so reads are
pipelined (all requests sent before any answer is awaited) and writes go in multi-op
transactions instead of one synchronous round trip per znode.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, cast

from kazoo.exceptions import NodeExistsError, NoNodeError, RolledBackError, RuntimeInconsistency

from zkconsumer.logs import get_logger
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.store import OwnerCheck
from zkconsumer.zk.group_walk import committed_offsets
from zkconsumer.zk.session import current_session
from zkconsumer.zk.znode_reader import KazooReader
from zkconsumer.znodes.consumers import encode_offset
from zkconsumer.znodes.paths import GroupPaths

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = get_logger(__name__)

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
        committed = {self._paths.offset(tp.topic, tp.partition): tp for tp in partitions}
        nodes = KazooReader(self._zk).data(committed)
        self._existing.difference_update(committed.keys() - nodes.keys())
        self._existing.update(nodes)
        return {tp: zookeeper.offset
                for tp, zookeeper in committed_offsets(nodes, committed).items()}

    def commit(self, offsets: Mapping[TopicPartition, int], *,
               refresh: Mapping[TopicPartition, int] | None = None, retry: bool = True,
               owners: Mapping[TopicPartition, OwnerCheck] | None = None) -> None:
        """ZooKeeper keeps offsets for good, so `refresh` needs no write, and a ZooKeeper
        write is never worth retrying later rather than now. With `owners`, each offset is
        written in one transaction with a check of its owner znode, so a member whose session
        expired (or that lost the partition by any other way) cannot write over the new
        owner's offset; such partitions are skipped with a warning."""
        owners = owners or {}
        if owners:
            offsets = self._in_owning_session(offsets, owners)
        writes = [(tp, self._paths.offset(tp.topic, tp.partition), encode_offset(offset))
                  for tp, offset in offsets.items()]
        self._learn_existing({tp.topic for tp, path, _data in writes
                              if path not in self._existing})
        batches = [writes[start:start + self._batch_size]
                   for start in range(0, len(writes), self._batch_size)]
        started = [(batch, self._transaction(batch, owners).commit_async()) for batch in batches]
        for batch, request in started:
            results = request.get()
            if any(isinstance(result, Exception) for result in results):
                # Someone created or deleted an offset znode since we looked (an admin tool,
                # another member), or an owner check failed; the transaction applied nothing,
                # so write one by one.
                log.warning("offset transaction conflicted, writing znodes one by one",
                            group=self._paths.group, znodes=len(batch),
                            errors=sorted({type(r).__name__ for r in results
                                           if isinstance(r, Exception)}))
                for tp, path, data in batch:
                    self._write_one(tp, path, data, owners.get(tp))
            else:
                self._existing.update(path for _tp, path, _data in batch)

    def _in_owning_session(self, offsets: Mapping[TopicPartition, int],
                           owners: Mapping[TopicPartition, OwnerCheck]
                           ) -> dict[TopicPartition, int]:
        session = current_session(self._zk)
        stale = [tp for tp in offsets if tp in owners and owners[tp].session != session]
        if stale:
            # The committer left out partitions of earlier sessions; this is the session
            # ending between that and the write.
            log.warning("offsets not committed: the ZooKeeper session changed before the write",
                        group=self._paths.group, partitions=[str(tp) for tp in stale[:8]])
        return {tp: offset for tp, offset in offsets.items() if tp not in stale}

    def close(self) -> None:
        """Nothing to release: the ZooKeeper session belongs to the caller."""

    def _learn_existing(self, topics: set[str]) -> None:
        """One pipelined read per topic instead of one per partition; creates missing topic
        directories, since a transaction can only create znodes whose parent exists."""
        directories = [self._paths.offsets_topic(topic) for topic in sorted(topics)]
        listed = KazooReader(self._zk).children(directories)
        for directory in directories:
            if directory not in listed:
                self._zk.ensure_path(directory)
            self._existing.update(f"{directory}/{child}" for child in listed.get(directory, ()))

    def _transaction(self, batch: list[tuple[TopicPartition, str, bytes]],
                     owners: Mapping[TopicPartition, OwnerCheck]):
        transaction = self._zk.transaction()
        for tp, path, data in batch:
            owner = owners.get(tp)
            if owner is not None:
                transaction.check(owner.path, owner.version)
            if path in self._existing:
                transaction.set_data(path, data)
            else:
                transaction.create(path, data)
        return transaction

    def _write_one(self, tp: TopicPartition, path: str, data: bytes,
                   owner: OwnerCheck | None) -> None:
        """Whether the znode exists is only guessed; a wrong guess is corrected once."""
        for _attempt in range(2):
            results = self._transaction([(tp, path, data)], {tp: owner} if owner else {}) \
                .commit()
            failure = next((r for r in results if isinstance(r, Exception)
                            and not isinstance(r, (RolledBackError, RuntimeInconsistency))),
                           None)
            if failure is None:
                self._existing.add(path)
                return
            if owner is not None and failure is results[0]:
                log.warning("offset not committed: this member no longer owns the partition",
                            group=self._paths.group, partition=str(tp))
                return
            if isinstance(failure, NoNodeError):
                if path not in self._existing:  # its topic directory went away
                    self._zk.ensure_path(path.rsplit("/", 1)[0])
                self._existing.discard(path)
            elif isinstance(failure, NodeExistsError):
                self._existing.add(path)
            else:
                raise failure
        raise cast(Exception, failure)  # both attempts failed: the loop set it

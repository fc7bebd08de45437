"""Carrying a group's committed offsets from one storage to another without moving any back.

A member that `group cutover` moves off Kafka's group coordinator writes what Kafka holds for
its partitions into the ZooKeeper offset znodes, where the group's next members resume. The
target may be ahead already (a member of the new coordination committed there, or an earlier
carry did): such a partition is left as it is, since writing the older offset would deliver
again what was consumed.
"""

from __future__ import annotations

from collections.abc import Iterable

from zkconsumer.model import TopicPartition, ahead_of
from zkconsumer.offsets.store import OffsetStore

__all__ = ["ahead_of", "carry_forward"]


def carry_forward(source: OffsetStore, target: OffsetStore,
                  partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    """Writes into `target` each of `partitions`' offsets in `source` that is ahead of the
    target's; returns what was written. A store that fails raises its OffsetStoreError, with
    nothing written when it is the reading."""
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    written = ahead_of(source.fetch(wanted), target.fetch(wanted))
    if written:
        target.commit(written)
    return written

"""Which consumed positions still need committing.

Messages are delivered on consumer threads while commits run on the committer thread, so one
lock guards both maps. Positions are "last delivered offset + 1", the offset the group must
resume from, which is what the reference commits.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from zkconsumer.model import TopicPartition


class OffsetTracker:
    """Committed offsets and consumed positions per partition, without any I/O.

    Only positions ahead of the committed offset are pending: rewriting an unchanged offset is
    wasted ZooKeeper/Kafka traffic on every auto-commit tick, and writing one behind it would
    rewind the group and re-deliver messages.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._committed: dict[TopicPartition, int] = {}
        self._positions: dict[TopicPartition, int] = {}

    def record_delivered(self, tp: TopicPartition, offset: int) -> None:
        self.record_position(tp, offset + 1)

    def record_position(self, tp: TopicPartition, position: int) -> None:
        """The offset the group would resume from: after a consumed message, or where a reset
        by `auto.offset.reset` put a partition that had no committed offset (committing that
        keeps the next owner from resetting again, past what was produced in between). Never
        moves a position back: a late record from a stale fetch must not rewind it."""
        with self._lock:
            if position > self._positions.get(tp, -1):
                self._positions[tp] = position

    def set_committed(self, committed: Mapping[TopicPartition, int]) -> None:
        """What the store holds at claim time; a partition absent here has no committed offset."""
        with self._lock:
            self._committed.update(committed)

    def pending(self) -> dict[TopicPartition, int]:
        with self._lock:
            return {tp: position for tp, position in self._positions.items()
                    if position > self._committed.get(tp, -1)}

    def committed(self) -> dict[TopicPartition, int]:
        with self._lock:
            return dict(self._committed)

    def mark_committed(self, committed: Mapping[TopicPartition, int]) -> None:
        """Keeps the higher offset, so a commit that raced a newer one cannot lower the mark."""
        with self._lock:
            for tp, offset in committed.items():
                if offset > self._committed.get(tp, -1):
                    self._committed[tp] = offset

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """On release: the next owner commits these now, and our stale position must not."""
        with self._lock:
            for tp in partitions:
                self._committed.pop(tp, None)
                self._positions.pop(tp, None)

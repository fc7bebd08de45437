"""Committing consumed positions: only changed offsets, only for partitions still owned.

Streams record positions lock-free on the consuming threads (a dict store per message); they are
gathered here under one lock, so auto commit, rebalances and `commit_offsets()` never interleave.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable

import structlog

from zkconsumer.member.streams import KafkaStream
from zkconsumer.model import TopicPartition

log = structlog.get_logger(__name__)


class OffsetCommitter:
    def __init__(self, store, tracker, streams: Callable[[], Iterable[KafkaStream]],
                 owned: Callable[[], Collection[TopicPartition]]) -> None:
        self._store = store
        self._tracker = tracker
        self._streams = streams
        self._owned = owned
        self._lock = threading.Lock()

    def commit(self, only: Collection[TopicPartition] | None = None) -> dict[TopicPartition, int]:
        """Write positions of owned partitions that moved since the last commit; returns what
        was written. A partition no longer owned is skipped: its new owner's offset must win."""
        with self._lock:
            owned = set(self._owned())
            return self._commit_locked(owned if only is None else owned & set(only))

    def commit_releasing(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        """The last commit of partitions being released. Their claims are already withdrawn
        (so nothing more is delivered from them) but their owner znodes are still ours, which
        is why ownership is not checked here."""
        with self._lock:
            return self._commit_locked(set(partitions))

    def _commit_locked(self, partitions: set[TopicPartition]) -> dict[TopicPartition, int]:
        for stream in self._streams():
            for tp, position in dict(stream.positions).items():
                if tp in partitions:
                    self._tracker.record_delivered(tp, position - 1)
        pending = {tp: offset for tp, offset in self._tracker.pending().items()
                   if tp in partitions}
        if pending:
            self._store.commit(pending)
            self._tracker.mark_committed(pending)
            log.debug("committed offsets", partitions=len(pending))
        return pending

    def claimed(self, committed: dict[TopicPartition, int]) -> None:
        with self._lock:
            self._tracker.set_committed(committed)

    def released(self, partitions: Collection[TopicPartition]) -> None:
        """Forget released partitions, here and in the streams, so a stale position is never written."""
        with self._lock:
            self._tracker.forget(partitions)
            for stream in self._streams():
                for tp in partitions:
                    stream.positions.pop(tp, None)

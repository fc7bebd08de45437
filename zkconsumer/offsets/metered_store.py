"""Counting and timing the commits of one offset store, for the member's metrics.

Each real store (ZooKeeper, Kafka) is wrapped on its own, inside a dual store too, so dual
commit reports both storages separately, as the reference's ZooKeeperCommitsPerSec and
KafkaCommitsPerSec did. The offsets package knows nothing of Prometheus: the caller gives a
function to tell.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from zkconsumer.model import TopicPartition
from zkconsumer.offsets.store import OffsetStore, OwnerCheck

# observe(storage name, succeeded, seconds)
CommitObserver = Callable[[str, bool, float], None]


class MeteredOffsetStore:
    """`store`, with each commit that writes something reported to `observe`.

    `writes_refresh` says whether the store writes unchanged offsets again (Kafka, whose
    offsets expire) or ignores them (ZooKeeper): a commit of only those is then no commit.
    """

    def __init__(self, store: OffsetStore, observe: CommitObserver, *,
                 writes_refresh: bool) -> None:
        self.name = store.name
        self._store = store
        self._observe = observe
        self._writes_refresh = writes_refresh

    def fetch(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._store.fetch(partitions)

    def commit(self, offsets: Mapping[TopicPartition, int], *,
               refresh: Mapping[TopicPartition, int] | None = None, retry: bool = True,
               owners: Mapping[TopicPartition, OwnerCheck] | None = None) -> None:
        if not offsets and not (refresh and self._writes_refresh):
            self._store.commit(offsets, refresh=refresh, retry=retry, owners=owners)
            return
        started = time.monotonic()
        try:
            self._store.commit(offsets, refresh=refresh, retry=retry, owners=owners)
        except BaseException:
            self._observe(self.name, False, time.monotonic() - started)
            raise
        self._observe(self.name, True, time.monotonic() - started)

    def close(self) -> None:
        self._store.close()

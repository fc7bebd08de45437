"""`dual.commit.enabled`: commit to Kafka and ZooKeeper, resume from the larger offset.

This is what makes the reference's rolling migration lossless. While members switch from
zookeeper storage to kafka + dual commit (and later to kafka only, or back), some members
read one store and some the other; whichever a member reads, the larger offset is the one
some member really reached.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from zkconsumer.model import TopicPartition, furthest
from zkconsumer.offsets.store import OffsetStore, OwnerCheck


class DualOffsetStore:
    name = "dual"

    def __init__(self, zookeeper: OffsetStore, kafka: OffsetStore) -> None:
        self._zookeeper = zookeeper
        self._kafka = kafka

    def fetch(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        wanted = list(dict.fromkeys(partitions))
        return furthest(self._kafka.fetch(wanted), self._zookeeper.fetch(wanted))

    def commit(self, offsets: Mapping[TopicPartition, int], *,
               refresh: Mapping[TopicPartition, int] | None = None, retry: bool = True,
               owners: Mapping[TopicPartition, OwnerCheck] | None = None) -> None:
        """Kafka first, as the reference does. Kafka is where the group's offsets end up (kafka-
        only members read nothing else), so it must never lag behind: if its commit fails,
        nothing was written and the whole commit is retried later. ZooKeeper is written only
        once Kafka took the offsets, so the ZooKeeper copy never runs ahead of Kafka's and a
        failure between the two writes costs at most re-delivery to zookeeper-storage readers;
        the max-of-both fetch still sees the new offset."""
        self._kafka.commit(offsets, refresh=refresh, retry=retry)
        self._zookeeper.commit(offsets, owners=owners)

    def close(self) -> None:
        try:
            self._kafka.close()
        finally:
            self._zookeeper.close()

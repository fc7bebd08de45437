"""What the consumer needs from an offset storage, whichever `offsets.storage` says.

The connector, the admin CLI and the Spark source all talk to this protocol, so the choice of
ZooKeeper, Kafka or both stays in `open_offset_store` and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple, Protocol

from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import TopicPartition


class OwnerCheck(NamedTuple):
    """What a member's offset commit of one partition is conditional on: its owner znode, with
    the version it has while the member holds it, and the ZooKeeper session that holds it (a
    commit must not reach ZooKeeper in a later session, when the znode may be another's)."""

    path: str
    version: int
    session: int | None


class OffsetStoreError(ZkConsumerError):
    """Offsets could not be read or written; the message names the group and the cause."""


class OffsetStore(Protocol):
    """Committed offsets of one group: the offset of the next message to consume.

    `fetch` returns only partitions that have a committed offset; a stored -1 (the reference's
    "invalid offset") counts as none, so callers need exactly one rule, `auto.offset.reset`,
    for everything else. `commit` writes exactly what it is given (and `refresh`) and nothing more.
    """

    name: str

    def fetch(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...

    def commit(self, offsets: Mapping[TopicPartition, int], *,
               refresh: Mapping[TopicPartition, int] | None = None, retry: bool = True,
               owners: Mapping[TopicPartition, OwnerCheck] | None = None) -> None:
        """`refresh`: offsets already committed and unchanged, which a store whose offsets
        expire (Kafka's `offsets.retention.minutes`) writes again; `retry=False`: one attempt,
        for callers that try again later anyway (auto commit, a rebalance that must not keep
        the group waiting); `owners`: per partition, the owner znode a ZooKeeper write is
        conditional on, so a member that lost a partition cannot overwrite its new owner."""

    def close(self) -> None: ...

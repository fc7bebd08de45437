"""What the consumer needs from an offset storage, whichever `offsets.storage` says.

The connector, the admin CLI and the Spark source all talk to this protocol, so the choice of
ZooKeeper, Kafka or both stays in `open_offset_store` and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import TopicPartition


class OffsetStoreError(ZkConsumerError):
    """Offsets could not be read or written; the message names the group and the cause."""


class OffsetStore(Protocol):
    """Committed offsets of one group: the offset of the next message to consume.

    `fetch` returns only partitions that have a committed offset; a stored -1 (the reference's
    "invalid offset") counts as none, so callers need exactly one rule, `auto.offset.reset`,
    for everything else. `commit` writes exactly what it is given and nothing more.
    """

    name: str

    def fetch(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None: ...

    def close(self) -> None: ...

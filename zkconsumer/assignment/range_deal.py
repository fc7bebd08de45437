"""The deal every `range` strategy shares: things in order, split into consecutive runs, one
run per taker in order, the first `len(things) % len(takers)` takers one more than the rest.

The ZooKeeper consumer deals a topic's partitions to consumer threads (`assignors`), the Java
consumer's leader deals them to members (`group_assignors`), and a member of a group Kafka
coordinates deals the partitions it was given to its own streams (`member/stream_threads.py`):
the same arithmetic, said here once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

Thing = TypeVar("Thing")
Taker = TypeVar("Taker")


def deal_ranges(things: Sequence[Thing], takers: Sequence[Taker]
                ) -> Iterator[tuple[Taker, Sequence[Thing]]]:
    """Each taker, in order, with its run of `things` (possibly empty). At least one taker."""
    share, extra = divmod(len(things), len(takers))
    start = 0
    for index, taker in enumerate(takers):
        end = start + share + (1 if index < extra else 0)
        yield taker, things[start:end]
        start = end

"""Small value types shared by every layer, and the rule every writer of committed offsets
keeps: they never move backwards unless a rewind is asked for."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import NamedTuple


class TopicPartition(NamedTuple):
    """One partition of one topic; orders by topic name, then partition number as an integer."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class Message(NamedTuple):
    """One consumed record; a tuple because millions are made per second on the hot path."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int | None  # epoch millis; None where the broker keeps none (before 0.10)
    # (key, value) pairs in the order written; only format v2 (Kafka 0.11+) carries any
    headers: tuple[tuple[str, bytes | None], ...] = ()


def lease_deadline(proven_at: float, session_s: float, share: float) -> float:
    """The one lease rule of both coordinations: a member's hold on its partitions, proven by
    an answer counted from `proven_at` (monotonic seconds), lasts `share` of its session
    (`session_s`) after it. Each coordination says its share: ZooKeeper's silence share
    (`zk.hearing`), Kafka's session less a margin (`kafka.protocol.group_member`)."""
    return proven_at + share * session_s


def format_address(host: str, port: int) -> str:
    """`host:port`, with an IPv6 address in brackets so that its own colons stay unambiguous."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# -- committed offsets only move forward ------------------------------------------------------

class OffsetMove(str, Enum):
    """How an offset proposed for a partition stands against the one committed there. A
    committed offset names the next message to deliver: moving it back delivers again what was
    consumed, so every writer that is not asked to rewind keeps to FORWARD and SAME."""

    FORWARD = "forward"    # further than the committed offset, or the first one
    SAME = "same"          # already there
    BACKWARD = "backward"  # would deliver again what was consumed


def offset_move(committed: int | None, proposed: int) -> OffsetMove:
    """The one comparison behind the rule (`committed` None: nothing committed yet)."""
    if committed is None or proposed > committed:
        return OffsetMove.FORWARD
    return OffsetMove.SAME if proposed == committed else OffsetMove.BACKWARD


def never_backwards(committed: int | None, proposed: int) -> int:
    """`proposed`, unless it would move `committed` back: then `committed`."""
    if committed is not None and offset_move(committed, proposed) is OffsetMove.BACKWARD:
        return committed
    return proposed


def ahead_of(proposed: Mapping[TopicPartition, int], committed: Mapping[TopicPartition, int]
             ) -> dict[TopicPartition, int]:
    """The `proposed` offsets that move `committed` forward (or that it lacks)."""
    return {tp: offset for tp, offset in proposed.items()
            if offset_move(committed.get(tp), offset) is OffsetMove.FORWARD}


def furthest(*stores: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Per partition, the furthest offset any of `stores` holds: what some reader really
    reached, so resuming there loses nothing and moves nothing back."""
    merged: dict[TopicPartition, int] = {}
    for offsets in stores:
        merged.update(ahead_of(offsets, merged))
    return merged

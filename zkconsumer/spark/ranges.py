"""Offset ranges: how a read is cut into Spark partitions and micro-batches (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from zkconsumer.model import TopicPartition


class OffsetRange(NamedTuple):
    """Offsets [start, end) of one Kafka partition, read by one Spark task."""

    topic: str
    partition: int
    start: int
    end: int


def split_ranges(starts: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int],
                 max_records: int) -> list[OffsetRange]:
    """One range per partition, cut into pieces of at most `max_records` offsets so that a
    large backlog is read by many executors at once. Empty ranges are dropped."""
    ranges = []
    for tp in sorted(starts):
        start, end = starts[tp], ends[tp]
        for piece in range(start, end, max_records):
            ranges.append(OffsetRange(tp.topic, tp.partition, piece, min(piece + max_records, end)))
    return ranges


def cap_total(starts: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int],
              max_total: int) -> dict[TopicPartition, int]:
    """Ends that admit at most `max_total` records in all, shared in proportion to each
    partition's backlog, so no partition starves while another is drained."""
    backlog = {tp: max(0, ends[tp] - starts[tp]) for tp in starts}
    total = sum(backlog.values())
    if total <= max_total:
        return {tp: starts[tp] + backlog[tp] for tp in starts}
    shares = {tp: backlog[tp] * max_total // total for tp in starts}
    leftover = max_total - sum(shares.values())
    for tp in sorted(starts, key=lambda tp: (-(backlog[tp] - shares[tp]), tp)):
        if leftover == 0:
            break
        if shares[tp] < backlog[tp]:
            shares[tp] += 1
            leftover -= 1
    return {tp: starts[tp] + shares[tp] for tp in starts}

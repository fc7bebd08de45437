"""Operations that read committed offsets and write none: export, the ZooKeeper-Kafka
comparison, and Spark's starting offsets."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from zkconsumer.admin.context import AdminContext, storages_named
from zkconsumer.admin.group_view import offsets_differ
from zkconsumer.errors import OffsetsDifferError
from zkconsumer.kafka.protocol.codec import EARLIEST, LATEST
from zkconsumer.model import TopicPartition, furthest
from zkconsumer.zk.group_state import list_groups


def export_offsets(ctx: AdminContext, storage: str, groups: list[str] | None,
                   topics: Iterable[str] = ()) -> dict[str, dict[TopicPartition, int]]:
    """The committed offsets of these groups (None: every group under /consumers) in one
    storage; a group with none is left out, as an offsets file has no way to say so."""
    chosen = list_groups(ctx.zk) if groups is None else groups
    extra = tuple(topics)
    found = ctx.for_each_group(chosen, lambda name: ctx.read_offsets(storage, name, extra),
                               "reading offsets")
    return {name: offsets for name, offsets in found.items() if offsets}


@dataclass(frozen=True)
class OffsetsDiff:
    group: str
    compared: int         # ZooKeeper's offsets, each compared with Kafka's
    differing: list[dict]  # `offsets_differ`

    def raise_if_differ(self) -> None:
        if self.differing:
            raise OffsetsDifferError(f"{len(self.differing)} partition(s) of {self.group} "
                                     "differ between ZooKeeper and Kafka")


def diff_offsets(ctx: AdminContext, group: str, topics: Iterable[str] = ()) -> OffsetsDiff:
    """Kafka is asked about every topic ZooKeeper has an offset for, so an offset only
    ZooKeeper holds shows as a difference rather than going unseen."""
    extra = set(topics)
    zookeeper = ctx.read_offsets("zookeeper", group, extra)
    kafka = ctx.read_offsets("kafka", group, extra | {tp.topic for tp in zookeeper})
    return OffsetsDiff(group, len(zookeeper), offsets_differ(zookeeper, kafka))


def spark_starting_offsets(ctx: AdminContext, group: str, topics: Iterable[str], storage: str,
                           reset: str) -> dict[TopicPartition, int]:
    """Where Spark's Kafka source should start for every partition of the group's topics (or
    `topics`): the larger offset of the storages read, as a member with dual commit resumes;
    for a partition with none, Kafka's marker for the earliest (`reset` smallest) or latest."""
    chosen_topics, partitions = ctx.group_partitions(group, topics)
    found = furthest(*(ctx.read_offsets(chosen, group, chosen_topics)
                       for chosen in storages_named(storage)))
    missing = EARLIEST if reset == "smallest" else LATEST
    return {tp: found.get(tp, missing) for tp in partitions}

"""Topic znodes: the replica assignment (/brokers/topics/<t>) and each partition's leader state
(/brokers/topics/<t>/partitions/<p>/state).

Partition numbers are JSON object keys, so they arrive as strings; they are turned into ints
here once, so every caller orders partitions as integers (as the reference does) and no caller
ever sorts "10" before "2".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zkconsumer.znodes.json_fields import JsonObject, dump_json
from zkconsumer.znodes.paths import parse_partition_number

NO_LEADER = -1

ReplicaMap = Mapping[int, tuple[int, ...]]


@dataclass(frozen=True)
class TopicPartitions:
    """A topic's partitions and their replicas. Versions 2+ (Kafka 2.4+) add reassignment
    progress; version 3 adds the topic id. Nothing the consumer does depends on those, but
    they are kept so the value re-encodes as it was read."""

    version: int
    partitions: ReplicaMap
    topic_id: str | None = None
    adding_replicas: ReplicaMap = field(default_factory=dict)
    removing_replicas: ReplicaMap = field(default_factory=dict)

    @classmethod
    def decode(cls, path: str, data: bytes) -> TopicPartitions:
        fields = JsonObject.load(path, data)
        return cls(
            version=fields.integer("version", minimum=1),
            partitions=_read_replicas(fields, "partitions"),
            topic_id=fields.optional_string("topic_id"),
            adding_replicas=_read_replicas(fields, "adding_replicas", optional=True),
            removing_replicas=_read_replicas(fields, "removing_replicas", optional=True),
        )

    def encode(self) -> bytes:
        doc: dict[str, Any] = {"version": self.version, "partitions": _encode(self.partitions)}
        if self.version >= 2 or self.adding_replicas:
            doc["adding_replicas"] = _encode(self.adding_replicas)
        if self.version >= 2 or self.removing_replicas:
            doc["removing_replicas"] = _encode(self.removing_replicas)
        if self.topic_id is not None:
            doc["topic_id"] = self.topic_id
        return dump_json(doc)

    def partition_numbers(self) -> list[int]:
        return sorted(self.partitions)


@dataclass(frozen=True)
class PartitionState:
    """Who leads a partition; `leader` is NO_LEADER (-1) while none does."""

    version: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int

    @classmethod
    def decode(cls, path: str, data: bytes) -> PartitionState:
        fields = JsonObject.load(path, data)
        return cls(
            version=fields.integer("version", minimum=1),
            leader=fields.integer("leader", minimum=NO_LEADER),
            leader_epoch=fields.integer("leader_epoch"),
            isr=fields.integer_list("isr", minimum=0),
            controller_epoch=fields.integer("controller_epoch"),
        )

    def encode(self) -> bytes:
        """In the key order the controller writes, so the bytes match Kafka's own."""
        return dump_json(
            {
                "controller_epoch": self.controller_epoch,
                "leader": self.leader,
                "version": self.version,
                "leader_epoch": self.leader_epoch,
                "isr": list(self.isr),
            }
        )


def _read_replicas(
    fields: JsonObject, key: str, *, optional: bool = False
) -> dict[int, tuple[int, ...]]:
    if optional and not fields.has(key):
        return {}
    replicas = fields.obj(key)
    by_partition = {
        parse_partition_number(name, fields.path): replicas.check_int_list(name, value, minimum=0)
        for name, value in replicas.items()
    }
    return dict(sorted(by_partition.items()))


def _encode(replicas: ReplicaMap) -> dict[str, list[int]]:
    return {str(partition): list(ids) for partition, ids in sorted(replicas.items())}

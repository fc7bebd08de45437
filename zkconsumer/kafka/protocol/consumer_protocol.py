"""The assignment a consumer group's leader hands each member (Kafka's ConsumerProtocol), as
DescribeGroups shows it (pure).

These bytes are written by whatever client led the group, not by the broker, so nothing in
them is trusted: every count and length is checked against what is left (`codec._Reader`), and
bytes that do not parse are one ProtocolError. Versions 0 to 3 all begin with the version and
the assigned partitions; what follows (user data, in any version to come) is not read.
"""

from __future__ import annotations

import struct

from zkconsumer.kafka.protocol.codec import ProtocolError, _Reader
from zkconsumer.model import TopicPartition

_PARTITION = struct.Struct(">i")
_SMALLEST_TOPIC = 2 + 4  # an empty name and an empty partition array


def decode_assignment(data: bytes | bytearray) -> list[TopicPartition]:
    """The partitions assigned; none for empty bytes (a member between a rebalance's two
    steps has no assignment yet)."""
    if not data:
        return []
    reader = _Reader(data, flexible=False, start=0)
    version = reader.int16()
    if version < 0:
        raise ProtocolError(f"an assignment of version {version}")
    assigned = []
    for _ in range(max(0, reader.array_length(_SMALLEST_TOPIC))):
        topic = reader.string()
        for _ in range(max(0, reader.array_length(_PARTITION.size))):
            partition = reader.int32()
            if partition < 0:
                raise ProtocolError(f"an assignment of partition {partition} of {topic}")
            assigned.append(TopicPartition(topic, partition))
    return assigned

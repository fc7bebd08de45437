"""The consumer protocol's bytes: what a member of a Kafka-coordinated group says it subscribes
to (in its JoinGroup) and what the leader gives each member (in its SyncGroup).

The coordinator carries these bytes without reading them (protocol type "consumer"), so they
are written by whichever client each member runs: kafka-python, the Java consumer, librdkafka.
The leader reads every member's subscription and every member reads its assignment; both are
untrusted input. Every count and length is checked against the bytes left before anything is
allocated or looped over for it (the codec's `Reader`), and anything that does not parse is one
`GroupMetadataError` naming the member it came from, never another exception.

Versions: a Subscription v1 adds the partitions a member owns, v2 its generation, v3 its rack;
an Assignment keeps its v0 layout in every version. A version newer than these is read in the
newest layout known and the rest ignored, as Kafka's own clients do (new versions only append
fields). zkconsumer writes v0 of both, which every client since 0.9 reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from zkconsumer.kafka.errors import GroupMetadataError
from zkconsumer.kafka.protocol.codec import ProtocolError, Reader, Writer
from zkconsumer.model import TopicPartition

PROTOCOL_TYPE = "consumer"
_NEWEST_SUBSCRIPTION = 3
_INT32_SIZE = 4


class Subscription(NamedTuple):
    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()  # v1+
    generation_id: int = -1  # v2+
    rack_id: str | None = None  # v3+


class Assignment(NamedTuple):
    version: int
    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None


def encode_subscription(subscription: Subscription) -> bytes:
    writer = Writer(flexible=False)
    writer.int16(subscription.version)
    writer.array(len(subscription.topics))
    for topic in subscription.topics:
        writer.string(topic)
    writer.bytes_field(subscription.user_data)
    if subscription.version >= 1:
        _write_partitions(writer, subscription.owned_partitions)
    if subscription.version >= 2:
        writer.int32(subscription.generation_id)
    if subscription.version >= 3:
        writer.nullable_string(subscription.rack_id)
    return writer.build()


def decode_subscription(data: bytes | bytearray, member_id: str) -> Subscription:
    """The subscription in a JoinGroup answer's member metadata; GroupMetadataError if it
    does not parse."""
    try:
        reader = Reader(data, flexible=False, start=0)
        version = _version(reader)
        topics = tuple(reader.string() for _ in range(_count(reader, 2)))
        user_data = reader.bytes_field()
        owned: tuple[TopicPartition, ...] = ()
        generation_id, rack_id = -1, None
        if version >= 1:
            owned = _read_partitions(reader)
        if version >= 2:
            generation_id = reader.int32()
        if version >= 3:
            rack_id = reader.nullable_string()
        if version <= _NEWEST_SUBSCRIPTION:
            reader.expect_end()
    except ProtocolError as exc:
        raise GroupMetadataError(f"the subscription of group member {member_id!r} does not "
                                 f"parse: {_in_bytes(exc)}") from None
    return Subscription(version, topics, user_data, owned, generation_id, rack_id)


def encode_assignment(assignment: Assignment) -> bytes:
    writer = Writer(flexible=False)
    writer.int16(assignment.version)
    _write_partitions(writer, assignment.partitions)
    writer.bytes_field(assignment.user_data)
    return writer.build()


def decode_assignment(data: bytes | bytearray, writer: str) -> Assignment:
    """The assignment in a SyncGroup answer or a DescribeGroups member; GroupMetadataError if
    it does not parse, naming its `writer` (e.g. "group leader 'm-1'")."""
    try:
        reader = Reader(data, flexible=False, start=0)
        version = _version(reader)
        partitions = _read_partitions(reader)
        user_data = reader.bytes_field()
        if version <= _NEWEST_SUBSCRIPTION:
            reader.expect_end()
    except ProtocolError as exc:
        raise GroupMetadataError(f"the assignment written by {writer} does not parse: "
                                 f"{_in_bytes(exc)}") from None
    return Assignment(version, partitions, user_data)


def _version(reader: Reader) -> int:
    version = reader.int16()
    if version < 0:
        raise ProtocolError(f"it has version {version}")
    return version


def _count(reader: Reader, item_size: int) -> int:
    """An array's length; null (-1) is malformed here: Kafka's clients never write it."""
    count = reader.array_length(item_size)
    if count < 0:
        raise ProtocolError("it has a null array")
    return count


def _read_partitions(reader: Reader) -> tuple[TopicPartition, ...]:
    partitions = []
    for _ in range(_count(reader, 2 + _INT32_SIZE)):  # a topic's name and its array's length
        topic = reader.string()
        for _ in range(_count(reader, _INT32_SIZE)):
            partition = reader.int32()
            if partition < 0:
                raise ProtocolError(f"it names partition {partition} of topic {topic!r}")
            partitions.append(TopicPartition(topic, partition))
    return tuple(partitions)


def _write_partitions(writer: Writer, partitions: Iterable[TopicPartition]) -> None:
    per_topic: dict[str, list[int]] = {}
    for tp in partitions:
        per_topic.setdefault(tp.topic, []).append(tp.partition)
    writer.array(len(per_topic))
    for topic, numbers in per_topic.items():
        writer.string(topic)
        writer.array(len(numbers))
        for number in numbers:
            writer.int32(number)


def _in_bytes(exc: ProtocolError) -> str:
    """The codec speaks of responses; these bytes are a member's."""
    return str(exc).replace("response ", "", 1)

"""Messages as a fetch gives them (`zkconsumer.records.columns.RecordColumns`): over their tuples,
as aiokafka's reader and kafka-python give them, or written as a broker stores them and read back
by the compiled decoder."""

from __future__ import annotations

import struct
from collections.abc import Sequence

from kafka.record.default_records import DefaultRecordBatchBuilder

from zkconsumer.model import Message
from zkconsumer.records.columns import RecordColumns, decode_columns, records_of

NO_TIMESTAMP = -1


def v2_batch(message: Message) -> bytes:
    """One record batch (format v2) holding `message` at its offset."""
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    timestamp = NO_TIMESTAMP if message.timestamp is None else message.timestamp
    builder.append(0, timestamp, message.key, message.value, list(message.headers))
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, message.offset)
    return bytes(data)


def fetched(messages: list[Message]) -> RecordColumns:
    """The messages (of one partition, in offset order, at least one) over their tuples."""
    return records_of(messages, messages[0].topic, messages[0].partition)


def columns_of(messages: Sequence[Message]) -> RecordColumns:
    """The messages (of one partition, in offset order) as the compiled decoder's columns."""
    first = messages[0]
    data = b"".join(map(v2_batch, messages))
    decoded = decode_columns(data, first.topic, first.partition, first.offset)
    assert decoded.records == list(messages), "written and read back as they were"
    return decoded.records

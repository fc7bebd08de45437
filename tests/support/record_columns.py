"""Messages written as a broker stores them and read back by the compiled decoder, for tests
that need the columns a real fetch gives (`zkconsumer.records.columns.RecordColumns`)."""

from __future__ import annotations

import struct
from collections.abc import Sequence

from kafka.record.default_records import DefaultRecordBatchBuilder

from zkconsumer.model import Message
from zkconsumer.records.columns import RecordColumns, decode_columns

NO_TIMESTAMP = -1


def v2_batch(message: Message) -> bytes:
    """One record batch (format v2) holding `message` at its offset."""
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    timestamp = NO_TIMESTAMP if message.timestamp is None else message.timestamp
    builder.append(0, timestamp, message.key, message.value, list(message.headers))
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, message.offset)
    return bytes(data)


def columns_of(messages: Sequence[Message]) -> RecordColumns:
    """The messages (of one partition, in offset order) as the compiled decoder's columns."""
    first = messages[0]
    data = b"".join(map(v2_batch, messages))
    decoded = decode_columns(data, first.topic, first.partition, first.offset)
    assert decoded.records == list(messages), "written and read back as they were"
    return decoded.records

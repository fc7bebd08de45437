"""Every Kafka record format decoded into columns by the compiled decoder (`_columns.c`).

This is the hot path wherever the extension was built (it is an optional part of the install);
`decoding.decode_records` falls back to aiokafka's reader where it was not. The C side walks the
entries and parses every record without making a Python object per record, with the GIL
released; this side does what happens once per batch or compressed wrapper: batch headers,
CRC-32C of v2 batches, decompression, transactions and error messages that name the entry.

A fetch of one partition becomes a `RecordColumns`: a read-only sequence of `Message` tuples for
code that wants them (made in C, all at once, when first asked for), and an Arrow record batch
for code that works on columns (made by wrapping the decoded buffers, no Python object per
record). `scripts/bench --only decode` and `--only throughput` measure it against aiokafka's.
Records that come as tuples already (aiokafka's reader where the extension was not built, the
kafka-python backend) become a `RecordColumns` too, over a `MessageColumns`, so the code that
takes a fetch has one type to serve.

Pure: bytes in, columns out.
"""

from __future__ import annotations

import operator
import struct
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, NamedTuple

from zkconsumer.model import Message
from zkconsumer.records.decompression import (
    CODECS,
    DEFAULT_FETCH_BYTES,
    EXPANSION_LIMIT,
    ExpandsTooFar,
    expand,
    expansion_bound,
)
from zkconsumer.records.message_sets import CorruptMessageError, unwrap_old_lz4

if TYPE_CHECKING:
    import pyarrow as pa

try:
    import zkconsumer.records._columns as _columns
except ImportError:  # built without a C compiler: records.py reads with aiokafka instead
    _columns = None

# a v2 batch header: base offset, size, leader epoch, magic, crc, attributes, last offset
# delta, first and max timestamp, producer id and epoch, base sequence, record count
BATCH_HEAD = struct.Struct(">qiibIhiqqqhii")
BATCH_ATTRIBUTES_AT = 21  # an int16; a batch's CRC covers it and all after it
_BATCH_CRC_FROM = BATCH_ATTRIBUTES_AT
LOG_APPEND_TIME, TRANSACTIONAL, CONTROL = 0x08, 0x10, 0x20  # v2 batch attributes
# a v0/v1 message: offset, size, crc, magic, attributes; v1 then has its timestamp
_MESSAGE_HEAD = struct.Struct(">qiIbb")
_TIMESTAMP = struct.Struct(">q")
_LENGTH = struct.Struct(">i")
_MESSAGE_CRC_FROM = 16  # the magic on
_OLD_LZ4 = 3  # codec 3 in format v0: the 0.8/0.9 brokers' framing (see message_sets)
CODEC_MASK = 0x07  # the codec, in the attributes of every format
# snappy, lz4 and zstd are decompressed with cramjam (as aiokafka does), gzip with zlib
# (aiokafka's checks of what is installed, asked only when a payload failed: importing aiokafka
# is the dearest part of a member's start)
_CRAMJAM_CODECS = {2: ("snappy", "has_snappy"), 3: ("lz4", "has_lz4"), 4: ("zstd", "has_zstd")}


def _installed(codec: int) -> bool:
    from aiokafka import codec as aiokafka_codec
    return bool(getattr(aiokafka_codec, _CRAMJAM_CODECS[codec][1])())


def compiled() -> bool:
    """Whether the compiled decoder was built and loads."""
    return _columns is not None


class DecodedColumns(NamedTuple):
    records: RecordColumns
    next_offset: int | None  # where the next fetch starts; None: no complete entry here
    truncated: bool  # the data ended inside an entry (the broker cuts at the size asked for)


class BatchHeader(NamedTuple):
    """What `records._AbortedTransactions` asks of a v2 batch."""

    base_offset: int
    next_offset: int
    producer_id: int
    is_transactional: bool
    is_control_batch: bool


def decode_columns(data: bytes | memoryview, topic: str, partition: int, fetch_offset: int,
                   check_crcs: bool = True, aborted: Any = None, control_reader: Any = None,
                   fetch_bytes: int = DEFAULT_FETCH_BYTES) -> DecodedColumns:
    """Every complete record at or after `fetch_offset`, control records left out, as columns;
    `decoding.decode_records` calls this, and keeps the next offset from going below
    `fetch_offset`.

    `aborted` is None to read uncommitted, else the `records._AbortedTransactions` of the
    fetch; `control_reader(entry, limit)` reads a control batch whole, for its marker,
    decompressing at most `limit` bytes. `fetch_bytes` (fetch.message.max.bytes) bounds the
    decompressed bytes (see `zkconsumer.records.decompression`): entries past the bound are
    left for the next fetch, as if the data ended before them."""
    columns = _columns.Columns()
    decoder = _Decoder(data, topic, partition, fetch_offset, check_crcs, aborted,
                       control_reader, columns, expansion_bound(fetch_bytes, len(data)))
    try:
        runs, complete = _columns.walk(data)
    except ValueError as exc:
        offset, problem = exc.args
        raise CorruptMessageError(f"the entry at offset {offset} of {topic}-{partition} "
                                  f"{problem}") from None
    next_offset = None
    for start, end, magic, codec in runs:
        try:
            if magic == 2:
                next_offset = decoder.batch(start, end)
            elif codec:
                next_offset = decoder.wrapper(start, end, magic, codec)
            else:
                next_offset = decoder.message_set(start, end)
        except PastTheBound as exc:
            if next_offset is None:
                raise CorruptMessageError(f"{exc.args[0]} expands past {decoder.bound} bytes, "
                                          f"{EXPANSION_LIMIT} times fetch.message.max.bytes "
                                          "or the fetched bytes") from None
            complete = start
            break
    records = RecordColumns(columns, topic, partition, columns.count_before(fetch_offset),
                            len(columns))
    return DecodedColumns(records, next_offset, complete < len(data))


class PastTheBound(Exception):
    """An entry that would take the decompressed bytes of a fetch past their bound."""


class _Decoder:
    """One `decode_columns` call: the data, what it is read for, the columns filled and the
    decompressed bytes it may still hold."""

    def __init__(self, data: bytes | memoryview, topic: str, partition: int, fetch_offset: int,
                 check_crcs: bool, aborted: Any, control_reader: Any, columns: Any,
                 bound: int) -> None:
        self.data = data
        self.topic = topic
        self.partition = partition
        self.where = f"of {topic}-{partition}"
        self.fetch_offset = fetch_offset
        self.check_crcs = check_crcs
        self.aborted = aborted
        self.control_reader = control_reader
        self.columns = columns
        self.bound = bound
        self.room = bound

    def message_set(self, start: int, end: int) -> int:
        """Uncompressed v0/v1 messages, one entry each."""
        try:
            self.columns.add_message_set(self.data, start, end, self.check_crcs, None, None)
        except ValueError as exc:
            offset, problem = exc.args
            raise CorruptMessageError(f"the message at offset {offset} {self.where} {problem}"
                                      ) from None
        return self.columns.offset_at(len(self.columns) - 1) + 1

    def wrapper(self, start: int, end: int, magic: int, codec: int) -> int:
        """A compressed v0/v1 message: its value is a message set (offsets relative to the
        wrapper's from v1; a log-append-time wrapper's timestamp stands for all of them)."""
        data = self.data
        offset, _, crc, _, attributes = _MESSAGE_HEAD.unpack_from(data, start)
        name = f"the compressed message at offset {offset} {self.where}"
        if magic == 0 and codec == _OLD_LZ4:
            try:
                offset, inner = unwrap_old_lz4(bytes(data[start:end]), self.topic,
                                               self.partition, self.check_crcs, self.room)
            except ExpandsTooFar:
                raise PastTheBound(name) from None
            self.room -= len(inner)
            self._add_inner(inner, name, None, None)
            return offset + 1
        if self.check_crcs and _columns.crc32(data, start + _MESSAGE_CRC_FROM, end) != crc:
            raise CorruptMessageError(f"the message at offset {offset} {self.where} fails its "
                                      "CRC check")
        payload, log_append_time = wrapped_payload(data, start, end, magic, attributes)
        if payload is None:
            raise CorruptMessageError(f"{name} has no valid payload")
        inner = self._decompress(codec, payload, name)
        self._add_inner(inner, name, offset if magic == 1 else None, log_append_time)
        return offset + 1

    def _add_inner(self, inner: bytes, name: str, relative_to: int | None,
                   log_append_time: int | None) -> None:
        try:
            _runs, complete = _columns.walk(inner) if inner else ((), 0)
        except ValueError as exc:
            offset, problem = exc.args
            raise CorruptMessageError(f"cannot decode {name}: its message at offset {offset} "
                                      f"{problem}") from None
        if not inner or complete < len(inner):
            raise CorruptMessageError(f"{name} holds no complete message set")
        try:
            self.columns.add_message_set(inner, 0, len(inner), self.check_crcs, relative_to,
                                         log_append_time)
        except ValueError as exc:
            offset, problem = exc.args
            raise CorruptMessageError(f"cannot decode {name}: its message at offset {offset} "
                                      f"{problem}") from None

    def batch(self, start: int, end: int) -> int:
        """A v2 record batch: checked, skipped if aborted or a control batch, else decoded."""
        data = self.data
        (base_offset, _, _, _, crc, attributes, last_offset_delta, first_timestamp,
         max_timestamp, producer_id, _, _, count) = BATCH_HEAD.unpack_from(data, start)
        name = f"the record batch at offset {base_offset} {self.where}"
        if self.check_crcs and _columns.crc32c(data, start + _BATCH_CRC_FROM, end) != crc:
            raise CorruptMessageError(f"{name} fails its CRC check")
        next_offset = base_offset + last_offset_delta + 1
        header = BatchHeader(base_offset, next_offset, producer_id,
                             bool(attributes & TRANSACTIONAL), bool(attributes & CONTROL))
        if self.aborted is not None and header.is_transactional:
            try:
                held = self.aborted.holds(
                    self.control_reader(bytes(data[start:end]), self.room)
                    if header.is_control_batch else header)
            except Exception as exc:  # a control batch read whole: struct, codec and our own
                raise CorruptMessageError(f"cannot decode {name}: {exc}") from exc
            if held:
                return next_offset
        if header.is_control_batch or next_offset <= self.fetch_offset:
            return next_offset
        codec = attributes & CODEC_MASK
        records_start = start + BATCH_HEAD.size
        records: bytes | memoryview
        if codec:
            records = self._decompress(codec, memoryview(data)[records_start:end], name)
            records_start, records_end = 0, len(records)
        else:
            records, records_end = data, end
        try:
            self.columns.add_records(records, records_start, records_end, count, base_offset,
                                     first_timestamp, max_timestamp,
                                     bool(attributes & LOG_APPEND_TIME))
        except ValueError as exc:
            raise CorruptMessageError(f"cannot decode {name}: {exc.args[1]}") from None
        return next_offset

    def _decompress(self, codec: int, payload: memoryview, name: str) -> bytes:
        """The payload decompressed, counted against the bound."""
        if codec not in CODECS:
            raise CorruptMessageError(f"cannot decode {name}: unknown compression codec {codec}")
        try:
            expanded = expand(codec, payload, self.room)
        except ExpandsTooFar:
            raise PastTheBound(name) from None
        except Exception as exc:  # each codec library raises its own error types
            if codec in _CRAMJAM_CODECS and not _installed(codec):
                raise CorruptMessageError(f"cannot read {name}: it is compressed with "
                                          f"{_CRAMJAM_CODECS[codec][0]}, which needs cramjam "
                                          "(pip install cramjam)") from exc
            raise CorruptMessageError(f"cannot decode {name}: {exc}") from exc
        self.room -= len(expanded)
        return expanded


def wrapped_payload(data: bytes | memoryview, start: int, end: int, magic: int, attributes: int
                     ) -> tuple[memoryview | None, int | None]:
    """The value of the compressed message data[start:end] (None if its lengths do not fit
    it), and its timestamp if the broker set it for all it holds (log append time), else None."""
    cursor = start + _MESSAGE_HEAD.size
    log_append_time = None
    if magic == 1:
        if cursor + _TIMESTAMP.size > end:
            return None, None
        if attributes & LOG_APPEND_TIME:  # the same bit in v1 messages
            (log_append_time,) = _TIMESTAMP.unpack_from(data, cursor)
        cursor += _TIMESTAMP.size
    if cursor + _LENGTH.size > end:
        return None, None
    (key_length,) = _LENGTH.unpack_from(data, cursor)
    if key_length < -1:
        return None, None
    cursor += _LENGTH.size + max(key_length, 0)
    if cursor + _LENGTH.size > end:
        return None, None
    (value_length,) = _LENGTH.unpack_from(data, cursor)
    cursor += _LENGTH.size
    if value_length < 0 or cursor + value_length > end:
        return None, None
    return memoryview(data)[cursor:cursor + value_length], log_append_time


_OFFSET = operator.itemgetter(2)
_KEY = operator.itemgetter(3)
_VALUE = operator.itemgetter(4)


class MessageColumns:
    """What `RecordColumns` asks of the compiled `Columns`, answered from `Message` tuples that
    were made already, so that a fetch is one type whichever reader or backend made it."""

    __slots__ = ("_messages",)

    def __init__(self, messages: list[Message]) -> None:
        self._messages = messages

    def __len__(self) -> int:
        return len(self._messages)

    def messages(self, _type: type, _topic: str, _partition: int, start: int, stop: int
                 ) -> list[Message]:
        """The tuples themselves: made already, and of the type and partition asked for."""
        return self._span(start, stop)

    def offset_at(self, index: int) -> int:
        return self._messages[index].offset

    def count_before(self, offset: int) -> int:
        return bisect_left(self._messages, offset, key=_OFFSET)

    def payload_bytes(self, start: int, stop: int) -> int:
        """Counted in C iterators, once per chunk: about 60-80 ns per message, a few per cent of
        what consuming a message costs."""
        messages = self._span(start, stop)
        return sum(map(len, filter(None, chain(map(_VALUE, messages), map(_KEY, messages)))))

    def _span(self, start: int, stop: int) -> list[Message]:
        """The whole list without a copy."""
        messages = self._messages
        return messages if start == 0 and stop == len(messages) else messages[start:stop]


def records_of(messages: list[Message], topic: str, partition: int) -> RecordColumns:
    """Tuples of one partition, in offset order, as the `RecordColumns` a fetch gives."""
    return RecordColumns(MessageColumns(messages), topic, partition, 0, len(messages))


class RecordColumns(Sequence):
    """The records of one partition's fetch, `start:stop` of the decoded columns (the compiled
    `Columns`, or a `MessageColumns`).

    A read-only sequence of `Message` tuples, all made in C the first time one is asked for (a
    per-record consumer wants them all); `offset_at` and `record_batch` work on the columns and
    make none. Slicing shares the columns, and the tuples if they were made."""

    __slots__ = ("_columns", "_messages", "_start", "_stop", "partition", "topic")

    def __init__(self, columns: Any, topic: str, partition: int, start: int, stop: int) -> None:
        self._columns = columns
        self.topic = topic
        self.partition = partition
        self._start = start
        self._stop = stop
        self._messages: list[Message] | None = None

    def __len__(self) -> int:
        return self._stop - self._start

    def __repr__(self) -> str:
        return f"RecordColumns({self.topic}-{self.partition}, {len(self)} records)"

    def messages(self) -> list[Message]:
        """The records as `Message` tuples (made once, then kept)."""
        if self._messages is None:
            self._messages = self._columns.messages(Message, self.topic, self.partition,
                                                    self._start, self._stop)
        return self._messages

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages())

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return self.messages()[index]
            stop = max(start, stop)
            view = RecordColumns(self._columns, self.topic, self.partition,
                                 self._start + start, self._start + stop)
            if self._messages is not None:
                view._messages = self._messages[start:stop]
            return view
        return self.messages()[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (RecordColumns, list, tuple)):
            return self.messages() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compared by content, like a list

    def offset_at(self, index: int) -> int:
        """The offset of one record, without making its tuple."""
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("record index out of range")
        return self._columns.offset_at(self._start + index)

    def count_before(self, offset: int) -> int:
        """How many of these records are before `offset` (counted over the columns, in C where
        they are compiled ones)."""
        return min(max(self._columns.count_before(offset) - self._start, 0), len(self))

    def payload_bytes(self) -> int:
        """Bytes of the keys and values (what the metrics count as consumed bytes; the
        reference counted whole message sets, overhead included, which only the wire client
        sees)."""
        return self._columns.payload_bytes(self._start, self._stop)

    def record_batch(self) -> pa.RecordBatch:
        """The records as an Arrow record batch (`zkconsumer.arrow_records.SCHEMA`), its
        columns made from the decoded buffers, or from the tuples where there are none."""
        from zkconsumer import arrow_records

        if isinstance(self._columns, MessageColumns):
            return arrow_records.record_batch(self.messages())
        return arrow_records.batch_of_columns(self._columns.buffers(), self.topic,
                                              self.partition, self._start, self._stop)

"""Every Kafka record format decoded into `Message` tuples: the consumer's hot path.

Where the compiled decoder was built (`zkconsumer.records.columns`, nearly always), it does the
work; what follows describes the reader used where it was not, which is kept as the reference
the compiled one is tested against. The records come back as a `RecordColumns` either way.

A fetch response holds a slice of one partition's log as the broker stores it, entry after
entry: messages in format v0 (brokers 0.8-0.9) or v1 (0.10, with timestamps), or record batches
in format v2 (0.11+, with headers and transactions). A log upgraded from v1 to v2 holds both, and
modern brokers (Kafka 4, Tansu) never down-convert. The magic byte sits at byte 16 of every entry
in either layout, so one walk over the entries tells them apart.

Which reader, by measurement: records/s of CPU time, best of 5, on 1,000,000 records of 100
bytes in fetch responses of 1 MiB, CRCs checked, every record made into a `Message` (v0/v1 one
message per entry, as uncompressed; v2 in batches of 16 KiB, as a producer makes them; Python
3.11, one core of this project's 2-core test machine):

                                                   v0          v1          v2
    our former v0/v1 decoder (struct, zlib)       664,000     597,000         -
    aiokafka's compiled reader (C), Message(...)  758,000     761,000   1,319,000
    kafka-python's reader, Message(...)               -           -       300,000
    decode_records, as below                      815,000     818,000   1,456,000

aiokafka's reader is the fastest on every format, so it reads them all, and our own v0/v1
decoder is gone. Making each tuple with `tuple.__new__` rather than calling the NamedTuple class
(whose `__new__` is Python code) gains 13-19 %. The `headers` field costs nothing measurable:
the former decoder ran 670,000/s with a 6-field Message and 666,000/s with 7. The one thing
aiokafka refuses, LZ4 in format v0, goes through `message_sets`.

The walk over entries is ours, in front of aiokafka's MemoryRecords, for what it does not do:
tell where the complete entries end (a broker cuts a response at the byte limit asked for),
check each entry's size and magic, and split the entries into runs of one format, since its
compiled MemoryRecords misreads a mix (a log upgraded from v1 to v2) and refuses v0 LZ4. The
walk costs about a tenth on uncompressed v0/v1 (one entry per record) and nothing on v2 (one
entry per batch). `scripts/bench --only decode` measures the readers side by side.

aiokafka decodes header keys strictly, where Java's consumer puts U+FFFD for bytes that are not
UTF-8 (`new String(bytes, UTF_8)`): one producer writing such a key would stop the partition at
that batch on every restart. Only such a batch is read again, by a slow reader of our own
(`_LenientBatch`) that decodes keys as Java does; the fast path does not change.

Fetched bytes are untrusted (issue 24): a malformed entry of any kind is a `CorruptMessageError`
naming topic, partition and offset, never a read out of bounds. aiokafka's compiled reader does
not check everything it reads (its `decode_varint` reads wherever it is pointed; the messages in
a v0/v1 wrapper are read without length checks), so it is handed nothing unchecked: compressed
entries are decompressed within the bound of `zkconsumer.records.decompression` and a wrapper's
messages checked first, and `_LenientBatch` reads its varints with a reader of its own.
`tests/fuzz` holds the fuzzing harness that found what it missed.

Pure: bytes in, messages out.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from aiokafka import codec as aiokafka_codec
from aiokafka.errors import UnsupportedCodecError
from aiokafka.record.default_records import DefaultRecordBatch
from aiokafka.record.legacy_records import LegacyRecordBatch
from aiokafka.record.memory_records import MemoryRecords

from zkconsumer.model import Message
from zkconsumer.records import columns
from zkconsumer.records.decompression import (
    CODECS,
    DEFAULT_FETCH_BYTES,
    EXPANSION_LIMIT,
    ExpandsTooFar,
    expand,
    expansion_bound,
)
from zkconsumer.records.message_sets import CorruptMessageError, unwrap_old_lz4

# Each entry starts with its offset (v2: base offset), size, crc (v2: partition leader epoch)
# and magic; then v0/v1 have the attributes, where v2 has its crc.
_ENTRY_HEAD = struct.Struct(">8xi4xbb")  # size, magic, attributes (v0/v1)
_OFFSET = struct.Struct(">q")
_LENGTH = struct.Struct(">i")  # of a v0/v1 key or value
_TIMESTAMP_SIZE = 8  # in a v1 message, before its key
_LONG_BITS = (1 << 64) - 1
_MAGIC_AT = 16
_LOG_OVERHEAD = 12  # offset and size, before each entry
_SMALLEST_ENTRY = 14  # a v0 message: crc, magic, attributes and two null lengths
_SMALLEST_BATCH = 49  # a v2 batch header
_LZ4 = 3
_OLD_LZ4 = 0x100  # no magic byte: the run kind of a v0 LZ4 message, which aiokafka refuses
_NO_RUN = 0x200  # no magic byte either: before the first run
_CODEC_MASK = columns.CODEC_MASK
_BATCH_CODEC_AT = columns.BATCH_ATTRIBUTES_AT + 1  # the low byte of a v2 batch's attributes
_CONTROL_KEY = struct.Struct(">hh")  # version, type
_ABORT = 0


class DecodedSet(NamedTuple):
    messages: columns.RecordColumns
    next_offset: int | None  # where the next fetch starts; None: no complete entry here
    truncated: bool  # the data ended inside an entry (the broker cuts at the size asked for)


def decode_records(data: bytes | memoryview, topic: str, partition: int, fetch_offset: int,
                   check_crcs: bool = True, aborted: Sequence[tuple[int, int]] | None = None,
                   fetch_bytes: int = DEFAULT_FETCH_BYTES) -> DecodedSet:
    """Every complete record at or after `fetch_offset`, control records left out.

    A broker answers with whole batches (and whole compressed v0/v1 wrappers), so records
    before the offset asked for can appear and are skipped; the data is cut at the byte limit
    asked for, so its last entry may be partial and is left for the next fetch.

    `aborted` None reads uncommitted: every record is delivered. A sequence reads committed:
    the (producer id, first offset) pairs of the aborted transactions the fetch response lists,
    whose records are left out.

    `fetch_bytes`, the fetch.message.max.bytes asked with, bounds the bytes decompressed
    (`zkconsumer.records.decompression`): entries past the bound are left for the next fetch, as
    a cut entry is, and one that alone goes past it is corrupt. Malformed data of any kind is a
    `CorruptMessageError` naming the entry.
    """
    if not data:  # an idle partition's answer: most answers, for a member that keeps up
        return DecodedSet(columns.records_of([], topic, partition), None, False)
    transactions = None if aborted is None else _AbortedTransactions(aborted)
    if columns.compiled():
        records, next_offset, truncated = columns.decode_columns(
            data, topic, partition, fetch_offset, check_crcs, transactions, _LenientBatch,
            fetch_bytes)
    else:
        reader = _Reader(topic, partition, fetch_offset, check_crcs, transactions,
                         expansion_bound(fetch_bytes, len(data)))
        next_offset, truncated = reader.read(bytes(data))  # aiokafka's reader takes bytes only
        messages = reader.messages
        if messages and messages[0].offset < fetch_offset:
            messages = [m for m in messages if m.offset >= fetch_offset]
        records = columns.records_of(messages, topic, partition)
    if next_offset is not None and next_offset < fetch_offset:
        next_offset = fetch_offset
    return DecodedSet(records, next_offset, truncated)


class _Reader:
    """One `decode_records` call: what it reads for, the messages read so far and the
    decompressed bytes it may still hold."""

    def __init__(self, topic: str, partition: int, fetch_offset: int, check_crcs: bool,
                 aborted: _AbortedTransactions | None, bound: int) -> None:
        self.topic = topic
        self.partition = partition
        self.fetch_offset = fetch_offset
        self.check_crcs = check_crcs
        self.aborted = aborted
        self.messages: list[Message] = []
        self.bound = bound
        self.room = bound

    def read(self, data: bytes) -> tuple[int | None, bool]:
        """Reads every complete entry within the bound: the offset after the last, and
        whether `data` ends (or the bound leaves it) inside an entry."""
        runs, complete, compressed = _runs(data, self.topic, self.partition)
        next_offset = None
        for start, end, magic in runs:
            if magic == _OLD_LZ4:
                try:
                    next_offset = self._read_old_lz4(data[start:end])
                    continue
                except ExpandsTooFar:
                    within = start
            else:
                within = self._checked(data, start, end, compressed)
                if within > start:
                    next_offset = self._read_run(data[start:within])
            if within < end:
                if next_offset is None:
                    raise CorruptMessageError(
                        f"the entry at offset {_offset(data, within)} of {self.topic}-"
                        f"{self.partition} expands past {self.bound} bytes, {EXPANSION_LIMIT} "
                        "times fetch.message.max.bytes or the fetched bytes")
                return next_offset, True
        return next_offset, complete < len(data)

    def _checked(self, data: bytes, start: int, end: int, compressed: list[int]) -> int:
        """Where the entries of data[start:end] end whose decompressed bytes fit what is left
        of the bound, those bytes counted against it. aiokafka's compiled reader decompresses
        without a bound, and reads the messages inside a v0/v1 wrapper without checking their
        lengths (past the end of the data: a crash), so each compressed entry is decompressed
        here first, within the bound, and a wrapper's messages checked. What does not
        decompress here is refused here, as the compiled decoder refuses it (aiokafka's
        codecs read some damaged framings differently). `compressed`: where the compressed
        entries start."""
        for position in compressed[bisect_left(compressed, start):bisect_left(compressed, end)]:
            following = position + _LOG_OVERHEAD + _ENTRY_HEAD.unpack_from(data, position)[0]
            codec, payload = _compressed_payload(data, position, following)
            if codec in CODECS and payload is not None:
                is_batch = data[position + _MAGIC_AT] == 2
                try:
                    inner = expand(codec, payload, self.room)
                except ExpandsTooFar:
                    return position
                except Exception as exc:  # each codec library raises its own error types
                    kind = "record batch" if is_batch else "compressed message"
                    raise self._corrupt(f"the {kind} at offset {_offset(data, position)} of "
                                        f"{self.topic}-{self.partition}", exc) from exc
                self.room -= len(inner)
                if not is_batch:
                    self._check_wrapped(inner, _offset(data, position))
        return end

    def _check_wrapped(self, inner: bytes, wrapper_offset: int) -> None:
        """The checks of `_columns.c`'s message set parser, on the message set inside a v0/v1
        wrapper: complete uncompressed messages of format v0/v1 whose lengths fit them."""
        position = 0
        while position < len(inner):
            problem = _malformed_message(inner, position)
            if problem:
                raise CorruptMessageError(
                    f"cannot decode the compressed message at offset {wrapper_offset} of "
                    f"{self.topic}-{self.partition}: its message at byte {position} {problem}")
            position += _LOG_OVERHEAD + _ENTRY_HEAD.unpack_from(inner, position)[0]

    def _read_run(self, run: bytes) -> int:
        """Entries of one format (aiokafka's compiled MemoryRecords reads no mix of formats)."""
        topic, partition, fetch_offset = self.topic, self.partition, self.fetch_offset
        check_crcs, aborted = self.check_crcs, self.aborted
        append = self.messages.append
        new = tuple.__new__
        records = MemoryRecords(run)
        next_offset = _offset(run, 0)
        while True:
            try:
                batch = records.next_batch()  # reads a v0/v1 message's key and value already
            except Exception as exc:  # it raises what it meets, up to SystemError
                raise self._corrupt(f"the entry at or after offset {next_offset} of {topic}-"
                                    f"{partition}", exc) from exc
            if batch is None:
                return next_offset
            if check_crcs and not batch.validate_crc():
                raise CorruptMessageError(f"the {self._name(batch)} fails its CRC check")
            next_offset = batch.next_offset
            try:
                if aborted is not None and batch.is_transactional and aborted.holds(batch):
                    continue
                if batch.is_control_batch or next_offset <= fetch_offset:
                    continue
                for record in batch:
                    timestamp = record.timestamp
                    headers = record.headers
                    append(new(Message, (
                        topic, partition, record.offset, record.key, record.value,
                        timestamp if timestamp is not None and timestamp >= 0 else None,
                        tuple(headers) if headers else ())))
            except UnicodeDecodeError:  # a header key (aiokafka decodes keys strictly)
                self._read_leniently(run, batch)
            except Exception as exc:  # each codec library raises its own error types
                raise self._corrupt(f"the {self._name(batch)}", exc) from exc

    def _read_leniently(self, run: bytes, batch: DefaultRecordBatch) -> None:
        """Read again, with `_LenientBatch`, a batch that aiokafka's reader gave up on at a
        header key that is not UTF-8, taking back the records it had read of it. Whether the
        batch is aborted may have been asked already: `holds` answers the same again."""
        messages = self.messages
        while messages and messages[-1].offset >= batch.base_offset:
            messages.pop()
        try:
            lenient = _LenientBatch(_entry_at(run, batch.base_offset), self.room)
            if (self.aborted is not None and lenient.is_transactional
                    and self.aborted.holds(lenient)):
                return
            if lenient.is_control_batch or lenient.next_offset <= self.fetch_offset:
                return
            messages.extend(Message(self.topic, self.partition, record.offset, record.key,
                                    record.value,
                                    record.timestamp if record.timestamp >= 0 else None,
                                    tuple(record.headers))
                            for record in lenient)
        except Exception as exc:  # struct, codec and our own errors alike: the data is bad
            raise self._corrupt(f"the {self._name(batch)}", exc) from exc

    def _read_old_lz4(self, wrapper: bytes) -> int:
        wrapper_offset, inner = unwrap_old_lz4(wrapper, self.topic, self.partition,
                                               self.check_crcs, self.room)
        self.room -= len(inner)
        inner_next_offset, truncated = self.read(inner)
        if inner_next_offset is None or truncated:
            raise CorruptMessageError(f"the compressed message at offset {wrapper_offset} of "
                                      f"{self.topic}-{self.partition} holds no complete "
                                      "message set")
        return wrapper_offset + 1

    def _name(self, batch: DefaultRecordBatch | LegacyRecordBatch) -> str:
        where = f"of {self.topic}-{self.partition}"
        if isinstance(batch, DefaultRecordBatch):
            return f"record batch at offset {batch.base_offset} {where}"
        return f"message at offset {batch.next_offset - 1} {where}"

    def _corrupt(self, what: str, error: Exception) -> CorruptMessageError:
        if isinstance(error, UnsupportedCodecError) and not aiokafka_codec.has_zstd():
            return CorruptMessageError(f"cannot read {what}: {error} (pip install cramjam)")
        return CorruptMessageError(f"cannot decode {what}: {error}")


def _runs(data: bytes, topic: str, partition: int
          ) -> tuple[list[tuple[int, int, int]], int, list[int]]:
    """The complete entries as runs of one format, (start, end, magic), each format-v0 LZ4
    message a run of its own with magic `_OLD_LZ4`; where the complete entries end; and where
    the compressed ones start. Checks what aiokafka's reader takes on trust: each entry's size
    and magic."""
    head = _ENTRY_HEAD.unpack_from
    end = len(data)
    runs = []
    compressed = []
    run_start = position = 0
    run_magic = _NO_RUN
    smallest = _SMALLEST_ENTRY
    while position + _ENTRY_HEAD.size <= end:
        size, magic, attributes = head(data, position)
        following = position + _LOG_OVERHEAD + size
        if following > end:
            break
        if magic == 0 and attributes & columns.CODEC_MASK == _LZ4:
            magic = _OLD_LZ4
        if magic != run_magic or magic == _OLD_LZ4:
            if run_start < position:
                runs.append((run_start, position, run_magic))
            run_start, run_magic = position, magic
            smallest = _smallest_entry(data, position, topic, partition)
        if size < smallest:
            raise CorruptMessageError(f"the entry at offset {_offset(data, position)} of {topic}-"
                                      f"{partition} is too short ({size} bytes)")
        if (attributes & _CODEC_MASK or magic == 2) and (
                magic != 2 or data[position + _BATCH_CODEC_AT] & _CODEC_MASK):
            compressed.append(position)
        position = following
    if run_start < position:
        runs.append((run_start, position, run_magic))
    return runs, position, compressed


def _smallest_entry(data: bytes, position: int, topic: str, partition: int) -> int:
    """The smallest size an entry in this one's format can have."""
    magic = data[position + _MAGIC_AT]
    if magic == 2:
        return _SMALLEST_BATCH
    if magic in (0, 1):
        return _SMALLEST_ENTRY
    raise CorruptMessageError(f"the entry at offset {_offset(data, position)} of {topic}-"
                              f"{partition} is in an unknown format (magic {magic})")


def _compressed_payload(data: bytes, start: int, end: int) -> tuple[int, memoryview | None]:
    """The codec of the entry data[start:end] and its compressed payload (None if its lengths
    do not fit it)."""
    magic = data[start + _MAGIC_AT]
    if magic == 2:
        codec = data[start + _BATCH_CODEC_AT] & columns.CODEC_MASK
        return codec, memoryview(data)[start + columns.BATCH_HEAD.size:end]
    attributes = data[start + _MAGIC_AT + 1]
    return attributes & columns.CODEC_MASK, columns.wrapped_payload(data, start, end, magic,
                                                                    attributes)[0]


def _malformed_message(data: bytes, position: int) -> str | None:
    """What is wrong with the v0/v1 message at data[position:], if anything."""
    left = len(data) - position
    if left < _LOG_OVERHEAD + _SMALLEST_ENTRY:
        return "is cut short"
    size, magic, attributes = _ENTRY_HEAD.unpack_from(data, position)
    if not _SMALLEST_ENTRY <= size <= left - _LOG_OVERHEAD:
        return f"has a size of {size} bytes, with {left - _LOG_OVERHEAD} left"
    if magic > 1:
        return f"is in an unknown format (magic {magic})"
    if attributes & columns.CODEC_MASK:
        return "is compressed inside a compressed message"
    end = position + _LOG_OVERHEAD + size
    cursor = position + _ENTRY_HEAD.size + (_TIMESTAMP_SIZE if magic == 1 else 0)
    for field in ("key", "value"):
        if cursor + _LENGTH.size > end:
            return "is cut short"
        (length,) = _LENGTH.unpack_from(data, cursor)
        cursor += _LENGTH.size
        if not -1 <= length <= end - cursor:
            return f"has a {field} of {length} bytes, with {end - cursor} left"
        cursor += max(length, 0)
    return None


def _offset(data: bytes, position: int) -> int:
    return _OFFSET.unpack_from(data, position)[0]


def _entry_at(run: bytes, base_offset: int) -> bytes:
    """The entry of a run (complete entries, see `_runs`) that starts at this offset."""
    position = 0
    while position < len(run):
        following = position + _LOG_OVERHEAD + _ENTRY_HEAD.unpack_from(run, position)[0]
        if _offset(run, position) == base_offset:
            return run[position:following]
        position = following
    raise ValueError(f"no entry at offset {base_offset}")


class _Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


class _LenientBatch:
    """A v2 record batch read in pure Python, for what aiokafka's reader refuses: header keys
    that are not UTF-8, decoded as Java's consumer does, with U+FFFD for what does not decode.
    It offers what `_Reader` and `_AbortedTransactions` use of aiokafka's batch, and reads
    records the same way, every length checked against the data; its CRC was checked by
    aiokafka's. About five times slower than aiokafka's on 100-byte records with one header
    each."""

    def __init__(self, entry: bytes, limit: int) -> None:
        (self.base_offset, _, _, magic, _, attributes, last_offset_delta, self._first_timestamp,
         self._max_timestamp, self.producer_id, _, _, self._count) = columns.BATCH_HEAD.unpack_from(
            entry)
        if magic != 2:
            raise ValueError(f"magic {magic} where a record batch (magic 2) was expected")
        self.next_offset = self.base_offset + last_offset_delta + 1
        self.is_transactional = bool(attributes & columns.TRANSACTIONAL)
        self.is_control_batch = bool(attributes & columns.CONTROL)
        self._log_append_time = bool(attributes & columns.LOG_APPEND_TIME)
        self._codec = attributes & columns.CODEC_MASK
        self._records = entry[columns.BATCH_HEAD.size:]
        self._limit = limit  # of decompressed bytes

    def __iter__(self) -> Iterator[_Record]:
        data = self._records
        if self._codec:
            data = expand(self._codec, data, self._limit)
        if self._count < 0:
            raise ValueError(f"a record count of {self._count}")
        position, end = 0, len(data)
        for _ in range(self._count):  # each record takes a byte at least: the data ends it
            length, position = _varint(data, position, end)
            if not 0 < length <= end - position:
                raise ValueError(f"a record of {length} bytes, with {end - position} left")
            record_end = position + length
            position += 1  # record attributes: none in use
            timestamp_delta, position = _varint(data, position, record_end)
            offset_delta, position = _varint(data, position, record_end)
            key, position = _nullable_bytes(data, position, record_end)
            value, position = _nullable_bytes(data, position, record_end)
            header_count, position = _varint(data, position, record_end)
            if header_count < 0:
                raise ValueError(f"a header count of {header_count}")
            headers = []
            for _ in range(header_count):  # each header takes two bytes at least
                header_key, position = _nullable_bytes(data, position, record_end)
                if header_key is None:
                    raise ValueError("a header key of negative length")
                header_value, position = _nullable_bytes(data, position, record_end)
                headers.append((header_key.decode("utf-8", "replace"), header_value))
            if position != record_end:
                raise ValueError(f"a record has {record_end - position} bytes after its headers")
            yield _Record(_as_long(self.base_offset + offset_delta),
                          self._max_timestamp if self._log_append_time
                          else _as_long(self._first_timestamp + timestamp_delta),
                          key, value, headers)
        if position != end:
            raise ValueError(f"{end - position} bytes after the last record")


def _varint(data: bytes, position: int, end: int) -> tuple[int, int]:
    """A zigzag varint of 64 bits at most (as Java's reader keeps them) read from
    data[position:end], and the position after it. Ours, for this slow path, because
    aiokafka's `decode_varint` reads wherever it is pointed, past the end of the data too."""
    value = shift = 0
    while position < end and shift < 64:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            value &= _LONG_BITS
            return (value >> 1) ^ -(value & 1), position
        shift += 7
    raise ValueError("a varint runs past the end of its record")


def _as_long(value: int) -> int:
    """A sum wrapped around as Java's long does (and the compiled decoder)."""
    return ((value + (1 << 63)) & _LONG_BITS) - (1 << 63)


def _nullable_bytes(data: bytes, position: int, end: int) -> tuple[bytes | None, int]:
    """Varint length (-1: null), then the bytes, all inside data[:end]; and the position
    after them."""
    length, position = _varint(data, position, end)
    if length == -1:
        return None, position
    if not 0 <= length <= end - position:
        raise ValueError(f"a field of {length} bytes, with {end - position} left in its record")
    return bytes(data[position:position + length]), position + length


class _AbortedTransactions:
    """Which transactional batches belong to aborted transactions, for reading committed.

    The fetch response lists each aborted transaction overlapping it by producer id and first
    offset. Walking the batches in offset order, a producer's transactional batches are
    aborted from that first offset until the producer's ABORT marker, a control batch.
    """

    def __init__(self, aborted: Sequence[tuple[int, int]]) -> None:
        self._not_yet_started = sorted(aborted, key=lambda transaction: transaction[1],
                                       reverse=True)  # the next to start is popped off the end
        self._aborting: set[int] = set()

    def holds(self, batch: DefaultRecordBatch | _LenientBatch | columns.BatchHeader) -> bool:
        """Whether a transactional batch belongs to an aborted transaction; a control batch
        holding an ABORT marker ends its producer's."""
        last_offset = batch.next_offset - 1
        not_yet_started = self._not_yet_started
        while not_yet_started and not_yet_started[-1][1] <= last_offset:
            self._aborting.add(not_yet_started.pop()[0])
        producer_id = batch.producer_id
        if batch.is_control_batch:
            if producer_id in self._aborting and _is_abort_marker(batch):
                self._aborting.discard(producer_id)
            return False
        return producer_id in self._aborting


def _is_abort_marker(control_batch: DefaultRecordBatch | _LenientBatch) -> bool:
    marker = next(iter(control_batch), None)
    if marker is None:
        return False
    if marker.key is None or len(marker.key) < _CONTROL_KEY.size:
        raise ValueError("a control record without a version and type in its key")
    return _CONTROL_KEY.unpack_from(marker.key)[1] == _ABORT

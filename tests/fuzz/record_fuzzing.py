"""Fuzzing the record decoders: valid fetch data of every format, mutated, through every entry
point the consumer reads fetched bytes by.

Seeds are built with kafka-python's record builders (formats v0, v1 and v2; no compression,
gzip, snappy, lz4 and zstd; the 0.8/0.9 brokers' LZ4 framing; headers, keys that are not UTF-8,
transactional batches, control batches and aborted-transaction lists). Mutations flip bits, set
length fields and varints to -2, 0 or huge values, cut, splice and duplicate; half of the
mutated inputs are signed again (sizes and CRCs made right) and v2 records are mutated before
compression as often as after, so that damage reaches the record parsers rather than stopping
at a checksum or a codec.

Each input goes through `decode_records` with the compiled decoder and with aiokafka's reader,
then as the fetcher's consumers use the result: Message tuples, the stream's C cursor, Arrow
record batches and the Spark reader's conversion. `CorruptMessageError` is the one exception
allowed out; anything else is a finding, and so is the death of the process by a signal.

The harness (`harness.py`, target "records") runs it in watched worker processes, so an input
that kills a worker (or hangs it) is saved and the run goes on. `scripts/fuzz.py` runs it from
the command line; `test_record_fuzzing.py` runs it briefly in the suite and replays what earlier
runs found.
"""

from __future__ import annotations

import functools
import random
import struct
import zlib
from typing import NamedTuple

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
TRANSACTIONAL, CONTROL = 0x10, 0x20
HEADER_SIZE = 61  # of a v2 batch
ATTRIBUTES_AT, CRC_AT, COUNT_AT = 21, 17, 57
TIMESTAMP = 1_700_000_000_000
TOPIC, PARTITION = "fuzzed", 3
MAX_INPUT = 1 << 20
HUGE = (-2, -1, 0, 1, 0x7FFFFFFF, -0x80000000, 1 << 34, -(1 << 40), 1 << 62)


class Case(NamedTuple):
    """One input: fetched bytes and how they are read."""

    data: bytes
    fetch_offset: int = 0
    aborted: tuple[tuple[int, int], ...] | None = None  # None: read uncommitted
    check_crcs: bool = False

    def encoded(self) -> bytes:
        aborted = self.aborted or ()
        return (struct.pack(">qBi", self.fetch_offset, self.check_crcs,
                            -1 if self.aborted is None else len(aborted))
                + b"".join(struct.pack(">qq", *pair) for pair in aborted) + self.data)

    @classmethod
    def decoded(cls, raw: bytes) -> Case:
        fetch_offset, check_crcs, count = struct.unpack_from(">qBi", raw)
        position = struct.calcsize(">qBi")
        aborted = None
        if count >= 0:
            aborted = tuple(struct.unpack_from(">qq", raw, position + 16 * i)
                            for i in range(count))
            position += 16 * count
        return cls(raw[position:], fetch_offset, aborted, bool(check_crcs))


# -- seeds ----------------------------------------------------------------------------------

def _resign_v2(batch: bytearray) -> None:
    from kafka.record._crc32c import crc as crc32c

    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">I", batch, CRC_AT, crc32c(bytes(batch[ATTRIBUTES_AT:])))


def v2_batch(base_offset: int, records: list[tuple[bytes | None, bytes | None, list]],
             codec: int = NONE, producer_id: int = -1, transactional: bool = False,
             control: bool = False) -> bytes:
    """A record batch as a broker stores it; control batches are made by setting the bit
    (no client builder writes them) and signing again."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(2, codec, transactional, producer_id,
                                        0 if producer_id >= 0 else -1,
                                        0 if producer_id >= 0 else -1, 1 << 20)
    for delta, (key, value, headers) in enumerate(records):
        builder.append(delta, TIMESTAMP + delta, key, value, headers)
    batch = bytearray(builder.build())
    struct.pack_into(">q", batch, 0, base_offset)
    if control:
        (attributes,) = struct.unpack_from(">h", batch, ATTRIBUTES_AT)
        struct.pack_into(">h", batch, ATTRIBUTES_AT, attributes | CONTROL)
    _resign_v2(batch)
    return bytes(batch)


def legacy_messages(magic: int, base_offset: int, records: list[tuple[bytes | None, bytes]],
                    codec: int = NONE) -> bytes:
    """Format v0/v1 messages, one entry each, or one compressed wrapper holding them."""
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for delta, (key, value) in enumerate(records):
        inner_offset = delta if codec and magic == 1 else base_offset + delta
        builder.append(inner_offset, TIMESTAMP + delta if magic else None, key, value)
    data = bytearray(builder.build())
    if codec:
        struct.pack_into(">q", data, 0, base_offset + len(records) - 1)
    return bytes(data)


def marker(offset: int, producer_id: int, commit: bool) -> bytes:
    record = (struct.pack(">hh", 0, int(commit)), struct.pack(">hi", 0, 0), [])
    return v2_batch(offset, [record], producer_id=producer_id, transactional=True, control=True)


def varint(value: int) -> bytes:
    """A zig-zag varint, as v2 record fields are written; values past 64 bits too."""
    zigzag = (value << 1) ^ (value >> 63) if -(1 << 63) <= value < (1 << 63) else value << 1
    zigzag &= (1 << 70) - 1
    out = bytearray()
    while True:
        byte = zigzag & 0x7F
        zigzag >>= 7
        if not zigzag:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def hostile_control_batch(producer_id: int = 7, base_offset: int = 0) -> bytes:
    """The batch of issue 24: transactional and control bits set, one record (an ABORT marker)
    with one header whose key length is 2^34, far past the batch; CRC and size right, so only
    the record's own lengths are wrong."""
    body = (b"\x00" + varint(0) + varint(0)
            + varint(4) + struct.pack(">hh", 0, 0)  # key: version 0, ABORT
            + varint(6) + struct.pack(">hi", 0, 0)  # value: version 0, coordinator epoch
            + varint(1) + varint(1 << 34) + b"hk" + varint(-1))
    record = varint(len(body)) + body
    batch = bytearray(struct.pack(">qiibIhiqqqhii", base_offset, 0, 0, 2, 0,
                                  TRANSACTIONAL | CONTROL, 0, TIMESTAMP, TIMESTAMP, producer_id,
                                  0, 0, 1) + record)
    _resign_v2(batch)
    return bytes(batch)


def _records(rng: random.Random, count: int) -> list[tuple[bytes | None, bytes | None, list]]:
    return [(rng.choice([None, b"", b"key-%d" % i]), rng.choice([None, b"v" * rng.randrange(40)]),
             [("h%d" % h, rng.choice([None, b"x" * h])) for h in range(rng.randrange(3))])
            for i in range(count)]


def seeds() -> list[Case]:
    """Valid fetch data of every format and kind."""
    rng = random.Random(24)
    cases = []
    for codec in (NONE, GZIP, SNAPPY, LZ4, ZSTD):
        cases.append(Case(v2_batch(0, _records(rng, 5), codec) + v2_batch(5, _records(rng, 3))))
        cases.append(Case(v2_batch(10, _records(rng, 4), codec, producer_id=7,
                                   transactional=True) + marker(14, 7, commit=False)
                          + v2_batch(15, _records(rng, 2), codec), 10, ((7, 10),)))
    for magic in (0, 1):
        for codec in (NONE, GZIP, SNAPPY, LZ4):
            plain = [(key, value or b"") for key, value, _ in _records(rng, 4)]
            cases.append(Case(legacy_messages(magic, 20, plain, codec)
                              + legacy_messages(magic, 24, plain[:2]), 21))
    not_utf8 = bytearray(v2_batch(30, [(b"k", b"v", [("kXY", b"h")])] * 3, producer_id=9,
                                  transactional=True))
    not_utf8[HEADER_SIZE:] = not_utf8[HEADER_SIZE:].replace(b"kXY", b"k\xff\xfe")
    _resign_v2(not_utf8)
    cases.append(Case(bytes(not_utf8) + marker(33, 9, commit=False), 30, ((9, 30),)))
    transactions = b"".join([
        v2_batch(0, _records(rng, 2), producer_id=7, transactional=True), marker(2, 7, True),
        v2_batch(3, _records(rng, 2), GZIP, producer_id=7, transactional=True),
        v2_batch(5, _records(rng, 2), producer_id=8, transactional=True),
        v2_batch(7, _records(rng, 1)), marker(8, 7, False), marker(9, 8, False)])
    cases.append(Case(transactions, 0, ((8, 5), (7, 3))))
    cases.append(Case(transactions, 0, None, check_crcs=True))
    cases.append(Case(legacy_messages(0, 0, [(None, b"a")]) + legacy_messages(1, 1, [(b"k", b"b")])
                      + v2_batch(2, _records(rng, 3), SNAPPY), 1))
    cases.append(Case(hostile_control_batch(), 0, ((7, 0),)))
    return cases


# -- mutations ------------------------------------------------------------------------------

def _recompressed(batch: bytes, codec: int) -> bytes:
    """An uncompressed v2 batch (however damaged its records) with its records section
    compressed by `codec`, signed again: damage that survives decompression."""
    from kafka import codec as kafka_codec

    encode = {GZIP: kafka_codec.gzip_encode, SNAPPY: kafka_codec.snappy_encode,
              LZ4: kafka_codec.lz4_encode, ZSTD: kafka_codec.zstd_encode}[codec]
    result = bytearray(batch[:HEADER_SIZE] + encode(bytes(batch[HEADER_SIZE:])))
    (attributes,) = struct.unpack_from(">h", result, ATTRIBUTES_AT)
    struct.pack_into(">h", result, ATTRIBUTES_AT, (attributes & ~0x07) | codec)
    _resign_v2(result)
    return bytes(result)


def _signed_again(data: bytearray) -> bytes:
    """Each entry's size and CRC made right where the entry can still be found."""
    from kafka.record._crc32c import crc as crc32c

    position = 0
    while len(data) - position >= 26:
        size = struct.unpack_from(">i", data, position + 8)[0]
        if size < 14 or position + 12 + size > len(data):
            break
        end = position + 12 + size
        if data[position + 16] == 2 and size >= 49:
            struct.pack_into(">I", data, position + CRC_AT,
                             crc32c(bytes(data[position + ATTRIBUTES_AT:end])))
        elif data[position + 16] in (0, 1):
            struct.pack_into(">I", data, position + 12, zlib.crc32(data[position + 16:end]))
        position = end
    return bytes(data)


def _set_varint(rng: random.Random, data: bytearray) -> None:
    position = rng.randrange(len(data))
    encoded = varint(rng.choice(HUGE + (rng.randrange(-300, 300),)))
    if rng.random() < 0.5:
        data[position:position + 1] = encoded  # a one-byte varint replaced
    else:
        data[position:position + len(encoded)] = encoded


def _set_int(rng: random.Random, data: bytearray) -> None:
    if len(data) < 4:
        return
    value = rng.choice(HUGE[:6] + (rng.randrange(-100, 100),))
    position = rng.choice([8, 57, rng.randrange(len(data) - 3)])  # a size, a count, anywhere
    if position + 4 <= len(data):
        struct.pack_into(">i", data, position, value)


def mutated(rng: random.Random, corpus: list[Case]) -> Case:
    """A seed, damaged one to four times, perhaps compressed after the damage, perhaps signed
    again."""
    case = rng.choice(corpus)
    data = bytearray(case.data)
    compress_after = 0
    if rng.random() < 0.3 and len(data) > HEADER_SIZE and data[16] == 2 and not data[22] & 7:
        compress_after = rng.choice([GZIP, SNAPPY, LZ4, ZSTD])
        data = data[:12 + struct.unpack_from(">i", data, 8)[0]]  # the first batch alone
    for _ in range(rng.randint(1, 4)):
        if not data:
            break
        kind = rng.randrange(8)
        if kind == 0:
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif kind == 1:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind == 2:
            _set_int(rng, data)
        elif kind in (3, 4):
            _set_varint(rng, data)
        elif kind == 5:
            del data[rng.randrange(len(data) + 1):]
        elif kind == 6:
            other = rng.choice(corpus).data
            start = rng.randrange(len(other))
            data[rng.randrange(len(data) + 1):] = other[start:start + rng.randrange(1, 200)]
        else:
            start = rng.randrange(len(data))
            piece = data[start:start + rng.randrange(1, 64)]
            data[start:start] = piece * rng.randint(1, 3)
    if compress_after and len(data) >= HEADER_SIZE:
        data = bytearray(_recompressed(bytes(data), compress_after))
    if rng.random() < 0.5:
        data = bytearray(_signed_again(data))
    aborted = case.aborted
    if rng.random() < 0.2:
        aborted = tuple((rng.choice([7, 8, 9, -1]), rng.randrange(-2, 40))
                        for _ in range(rng.randrange(3)))
    return Case(bytes(data[:MAX_INPUT]), rng.choice([case.fetch_offset, 0, rng.randrange(40)]),
                aborted, rng.random() < 0.2)


# -- the target -----------------------------------------------------------------------------

class Outcome(NamedTuple):
    path: str  # "compiled" or "aiokafka"
    result: str  # "decoded N" or "CorruptMessageError: ..."


def exercise(case: Case) -> list[Outcome]:
    """The case through both decoders and everything that reads what they give. Exceptions
    other than `CorruptMessageError` propagate: they are findings."""
    from zkconsumer.records import columns
    from zkconsumer.records.decoding import decode_records
    from zkconsumer.records.message_sets import CorruptMessageError

    compiled_decoder = columns._columns
    outcomes = []
    for path, decoder in (("compiled", compiled_decoder), ("aiokafka", None)):
        if path == "compiled" and decoder is None:
            continue
        columns._columns = decoder
        try:
            decoded = decode_records(case.data, TOPIC, PARTITION, case.fetch_offset,
                                     case.check_crcs, case.aborted)
        except CorruptMessageError as exc:
            outcomes.append(Outcome(path, f"CorruptMessageError: {exc}"))
            continue
        finally:
            columns._columns = compiled_decoder
        _consume(decoded.messages)
        outcomes.append(Outcome(path, f"decoded {len(decoded.messages)}"))
    return outcomes


def _consume(messages) -> None:
    """What the member, its streams, Arrow batches and the Spark reader do with a fetch."""
    from zkconsumer.spark.reading import arrow_schema, for_spark

    _through_cursor(list(messages))
    batch = messages.record_batch()
    messages.payload_bytes()
    if len(messages):
        messages.count_before(messages.offset_at(-1))
    batch.validate(full=True)
    for decode_utf8 in (False, True):
        for_spark(batch, arrow_schema(decode_utf8), decode_utf8).validate(full=True)


def _through_cursor(tuples: list) -> None:
    try:
        from zkconsumer.member._cursor import Cursor
    except ImportError:
        return

    class Drained(Cursor):
        def _next_slowly(self):
            raise StopIteration

    from zkconsumer.member.claims import Consumed, DeliveryGate

    claim = object()
    cursor = Drained()
    cursor._chunk = (PARTITION, claim, tuples, Consumed())
    cursor._index = 0
    cursor._claims = {PARTITION: claim}
    gate = DeliveryGate()  # open, with no lease's deadline: every message may go
    cursor._gate = gate
    cursor._until = gate.until
    cursor._stopping = False
    if sum(1 for _ in cursor) != len(tuples):
        raise AssertionError("the cursor handed out a different number of messages")


# -- as the harness drives it -----------------------------------------------------------------

@functools.cache
def _seed_cases() -> list[Case]:
    return seeds()


def _mutated_input(rng: random.Random, corpus: list[bytes]) -> bytes:
    """A mutation of the seeds (the corpus is always theirs, kept here decoded)."""
    return mutated(rng, _seed_cases()).encoded()


def _exercised(raw: bytes) -> list[str]:
    return [f"{outcome.path}: {outcome.result}" for outcome in exercise(Case.decoded(raw))]


def targets() -> dict:
    """The record decoders as `harness.Target`; imported only where the harness runs, since
    other tests import this module for its seeds."""
    from harness import Target

    return {"records": Target("records", lambda: [case.encoded() for case in _seed_cases()],
                              _mutated_input, _exercised, hang_after=30.0, memory_bound=None)}

"""Record batches (message format v2), alone and mixed with v0/v1 messages, through
`decode_records`, built with kafka-python's own encoders as an independent oracle; control
batches, which no client encoder writes, are made from ordinary batches by setting their
attribute and signing them again."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import zlib

import pytest
from fuzz.record_fuzzing import legacy_messages as legacy
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec
from kafka.record._crc32c import crc as crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder

from zkconsumer.model import Message
from zkconsumer.records.decoding import DecodedSet, decode_records
from zkconsumer.records.decompression import ExpandsTooFar, expand
from zkconsumer.records.message_sets import CorruptMessageError

# Each test runs with the compiled decoder and with aiokafka's reader (tests/unit/conftest.py).
pytestmark = pytest.mark.usefixtures("each_decoder")

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
CODEC_LIBRARY = {SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstandard"}  # kafka-python's encoders
TIMESTAMP = 1_700_000_000_000
# where a v2 batch header keeps what the tests rewrite
CRC_AT, ATTRIBUTES_AT, MAX_TIMESTAMP_AT, COUNT_AT = 17, 21, 35, 57
HEADER_SIZE = 61
CODEC_MASK, LOG_APPEND_TIME, CONTROL = 0x07, 0x08, 0x20
ABORT, COMMIT = 0, 1
ENCODE = {GZIP: kafka_codec.gzip_encode, SNAPPY: kafka_codec.snappy_encode,
          LZ4: kafka_codec.lz4_encode, ZSTD: kafka_codec.zstd_encode}
# A header key written as "kXY" and changed into bytes that are not UTF-8, and what Java's
# consumer makes of them (new String(bytes, UTF_8)).
GOOD_KEY, BAD_KEY, JAVA_KEY = b"kXY", b"k\xff\xfe", "k\ufffd\ufffd"


def batch(base_offset: int, records: list[tuple[bytes | None, bytes | None, list]],
          codec: int = NONE, producer_id: int = -1, transactional: bool = False) -> bytes:
    """A record batch as a broker stores it: offsets from `base_offset`, one per record."""
    builder = DefaultRecordBatchBuilder(2, codec, transactional, producer_id,
                                        0 if producer_id >= 0 else -1,
                                        0 if producer_id >= 0 else -1, 1 << 20)
    for delta, (key, value, headers) in enumerate(records):
        builder.append(delta, TIMESTAMP + delta, key, value, headers)
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)  # the builder leaves it for the broker
    return bytes(data)


def values(base_offset: int, count: int, **options) -> bytes:
    return batch(base_offset, [(None, b"v%d" % (base_offset + i), []) for i in range(count)],
                 **options)


def resigned(data: bytes, *, set_attributes: int = 0, max_timestamp: int | None = None,
             without_records: bool = False) -> bytes:
    """The batch changed as only a broker changes it, with its length and CRC made right."""
    data = bytearray(data)
    if without_records:  # every record compacted away; the offsets they held stay used
        del data[HEADER_SIZE:]
        struct.pack_into(">i", data, COUNT_AT, 0)
    struct.pack_into(">i", data, 8, len(data) - 12)
    (attributes,) = struct.unpack_from(">h", data, ATTRIBUTES_AT)
    struct.pack_into(">h", data, ATTRIBUTES_AT, attributes | set_attributes)
    if max_timestamp is not None:
        struct.pack_into(">q", data, MAX_TIMESTAMP_AT, max_timestamp)
    struct.pack_into(">I", data, CRC_AT, crc32c(bytes(data[ATTRIBUTES_AT:])))
    return bytes(data)


def marker(offset: int, producer_id: int, kind: int) -> bytes:
    """A transaction marker: a control batch whose one record's key is (version 0, kind)."""
    record = (struct.pack(">hh", 0, kind), struct.pack(">hi", 0, 0), [])
    return resigned(batch(offset, [record], producer_id=producer_id, transactional=True),
                    set_attributes=CONTROL)


def bad_header_keys(data: bytes, codec: int = NONE, attributes: int = 0) -> bytes:
    """The uncompressed batch with each header key "kXY" made BAD_KEY, compressed with
    `codec` and signed again: what a producer that wrote such keys stored."""
    records = data[HEADER_SIZE:].replace(GOOD_KEY, BAD_KEY)
    if codec:
        records = ENCODE[codec](records)
    return resigned(data[:HEADER_SIZE] + records, set_attributes=codec | attributes)


def as_java_reads_them(message: Message) -> Message:
    return message._replace(headers=tuple((JAVA_KEY if key == GOOD_KEY.decode() else key, value)
                                          for key, value in message.headers))


def offsets(decoded) -> list[int]:
    return [m.offset for m in decoded.messages]


@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4, ZSTD])
def test_every_codec_gives_keys_values_timestamps_and_headers(codec):
    if codec in CODEC_LIBRARY:
        pytest.importorskip(CODEC_LIBRARY[codec])
        pytest.importorskip("cramjam")  # aiokafka's decoders
    records = [(b"k%d" % i if i % 3 else None, b"value %d " % i * 10,
                [("trace", b"%d" % i)] if i % 2 else []) for i in range(50)]
    data = batch(100, records, codec)
    (attributes,) = struct.unpack_from(">h", data, ATTRIBUTES_AT)
    assert attributes & CODEC_MASK == codec  # compressed indeed
    decoded = decode_records(data, "t", 4, 100)
    assert decoded.messages == [
        Message("t", 4, 100 + i, key, value, TIMESTAMP + i, tuple(headers))
        for i, (key, value, headers) in enumerate(records)]
    assert decoded.next_offset == 150
    assert not decoded.truncated


def test_headers_keep_their_order_text_keys_and_null_values():
    headers = [("origin", b"eu-1"), ("empty", b""), ("nothing", None), ("origin", b"again")]
    (message,) = decode_records(batch(0, [(None, b"v", headers)]), "t", 0, 0).messages
    assert message.headers == (("origin", b"eu-1"), ("empty", b""), ("nothing", None),
                               ("origin", b"again"))


def test_log_append_time_gives_every_record_the_batch_max_timestamp():
    data = resigned(values(10, 3), set_attributes=LOG_APPEND_TIME, max_timestamp=42)
    assert [m.timestamp for m in decode_records(data, "t", 0, 10).messages] == [42, 42, 42]


def test_a_fetch_offset_inside_a_batch_drops_the_records_before_it():
    decoded = decode_records(values(10, 10) + values(20, 5), "t", 0, 15)
    assert offsets(decoded) == list(range(15, 25))
    assert decoded.next_offset == 25


@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4, ZSTD])
def test_header_keys_that_are_not_utf8_get_replacement_characters_as_in_java(codec):
    """Not a corrupt batch that would stop the partition for good: everything else as read
    from the same batch with keys that decode, also the records before the bad key, which
    aiokafka's reader had already given."""
    if codec in CODEC_LIBRARY:
        pytest.importorskip(CODEC_LIBRARY[codec])
        pytest.importorskip("cramjam")
    records = [(b"k%d" % i if i % 2 else None, b"value %d" % i,
                [("trace", b"%d" % i), ("kXY", None if i == 4 else b"x")] if i in (1, 2, 4)
                else []) for i in range(6)]
    written = batch(10, records)
    for fetch_offset in (4, 12):
        decoded = decode_records(values(4, 6) + bad_header_keys(written, codec) + values(16, 2),
                                 "t", 3, fetch_offset)
        readable = decode_records(values(4, 6) + written + values(16, 2), "t", 3, fetch_offset)
        assert decoded == DecodedSet(list(map(as_java_reads_them, readable.messages)), 18, False)
        assert [m.headers for m in decoded.messages if m.offset == 14] == [
            (("trace", b"4"), (JAVA_KEY, None))]


def test_header_keys_that_are_not_utf8_keep_the_log_append_time():
    written = batch(0, [(None, b"v", [("kXY", b"x")])] * 3)
    data = bad_header_keys(resigned(written, set_attributes=LOG_APPEND_TIME, max_timestamp=42))
    assert [(m.timestamp, m.headers) for m in decode_records(data, "t", 0, 0).messages] == [
        (42, ((JAVA_KEY, b"x"),))] * 3


def test_header_keys_that_are_not_utf8_keep_transactions_apart():
    """Producer 7 aborts 0-1 (with an ABORT marker whose record has such a key too), then
    commits 6; producer 8 commits 2; 5 is not transactional."""
    def transactional(offset: int, producer: int, count: int = 1) -> bytes:
        return bad_header_keys(batch(offset, [(None, b"v%d" % offset, [("kXY", b"h")])] * count,
                                     producer_id=producer, transactional=True))
    abort_record = (struct.pack(">hh", 0, ABORT), struct.pack(">hi", 0, 0), [("kXY", None)])
    abort = bad_header_keys(batch(3, [abort_record], producer_id=7, transactional=True),
                            attributes=CONTROL)
    data = b"".join([transactional(0, 7, 2), transactional(2, 8), abort, marker(4, 8, COMMIT),
                     bad_header_keys(values(5, 1)), transactional(6, 7), marker(7, 7, COMMIT)])
    committed = decode_records(data, "t", 0, 0, aborted=[(7, 0)])
    assert (offsets(committed), committed.next_offset) == ([2, 5, 6], 8)
    assert offsets(decode_records(data, "t", 0, 0)) == [0, 1, 2, 5, 6]


def test_a_batch_cut_at_the_byte_limit_is_left_for_the_next_fetch():
    whole = values(0, 5)
    data = whole + values(5, 5)
    for cut in (1, 40, len(data) - len(whole) - 20):
        decoded = decode_records(data[:-cut], "t", 0, 0)
        assert offsets(decoded) == [0, 1, 2, 3, 4]
        assert decoded.next_offset == 5 and decoded.truncated
    assert decode_records(whole[:-1], "t", 0, 0) == ([], None, True)
    assert decode_records(whole[:10], "t", 0, 0) == ([], None, True)


def test_control_batches_are_skipped_and_the_next_fetch_starts_past_them():
    producer = 7
    data = values(0, 3, producer_id=producer, transactional=True) + marker(3, producer, COMMIT)
    decoded = decode_records(data, "t", 0, 0)
    assert offsets(decoded) == [0, 1, 2]
    assert decoded.next_offset == 4
    only_a_marker = decode_records(marker(3, producer, COMMIT), "t", 0, 3)
    assert only_a_marker == ([], 4, False)


def test_a_batch_whose_records_were_all_compacted_away_still_advances():
    emptied = resigned(values(0, 5), without_records=True)
    decoded = decode_records(emptied + values(5, 2), "t", 0, 0)
    assert offsets(decoded) == [5, 6]
    assert decode_records(emptied, "t", 0, 0) == ([], 5, False)


def transactions_log() -> tuple[bytes, list[tuple[int, int]]]:
    """Producer 7 commits 0-1, aborts 3-4 and commits 10; producer 8 aborts 5-6; a
    non-transactional record at 7 comes in between. The fetch response lists the two aborted
    transactions by producer and first offset."""
    data = b"".join([
        values(0, 2, producer_id=7, transactional=True), marker(2, 7, COMMIT),
        values(3, 2, producer_id=7, transactional=True),
        values(5, 2, producer_id=8, transactional=True),
        values(7, 1),
        marker(8, 7, ABORT), marker(9, 8, ABORT),
        values(10, 1, producer_id=7, transactional=True), marker(11, 7, COMMIT),
    ])
    return data, [(8, 5), (7, 3)]  # deliberately not in offset order


def test_read_committed_leaves_out_aborted_transactions_and_delivers_committed_ones():
    data, aborted = transactions_log()
    decoded = decode_records(data, "t", 0, 0, aborted=aborted)
    assert offsets(decoded) == [0, 1, 7, 10]
    assert decoded.next_offset == 12


def test_read_uncommitted_delivers_every_record_but_the_markers():
    data, _ = transactions_log()
    decoded = decode_records(data, "t", 0, 0)
    assert offsets(decoded) == [0, 1, 3, 4, 5, 6, 7, 10]
    assert decoded.next_offset == 12


def test_a_flipped_byte_fails_the_crc_check_unless_checks_are_off():
    data = bytearray(values(10, 3))
    data[-2] ^= 0xFF  # in the last value, just before its (empty) header count
    with pytest.raises(CorruptMessageError,
                       match="^the record batch at offset 10 of t-2 fails its CRC check$"):
        decode_records(bytes(data), "t", 2, 10)
    decoded = decode_records(bytes(data), "t", 2, 10, check_crcs=False)
    assert offsets(decoded) == [10, 11, 12]
    assert decoded.messages[-1].value != b"v12"


def test_an_undecompressible_batch_names_its_offset():
    data = bytearray(batch(30, [(None, b"value %d" % i, []) for i in range(50)], GZIP))
    data[HEADER_SIZE + 20:HEADER_SIZE + 30] = b"\xff" * 10
    with pytest.raises(CorruptMessageError,
                       match="^cannot decode the record batch at offset 30 of t-1: "):
        decode_records(bytes(data), "t", 1, 30, check_crcs=False)


def test_an_unknown_magic_is_named():
    data = bytearray(values(0, 1))
    data[16] = 3
    with pytest.raises(CorruptMessageError, match="offset 0 of t-0 .*unknown format .*magic 3"):
        decode_records(bytes(data), "t", 0, 0, check_crcs=False)


def test_a_missing_codec_library_says_what_to_install():
    pytest.importorskip(CODEC_LIBRARY[ZSTD])
    data = batch(0, [(None, b"value %d " % i * 10, []) for i in range(20)], ZSTD)
    probe = ("import sys; sys.modules['cramjam'] = None\n"
             "from zkconsumer.records.decoding import decode_records\n"
             "decode_records(bytes.fromhex(sys.argv[1]), 't', 0, 0)\n")
    result = subprocess.run([sys.executable, "-c", probe, data.hex()], capture_output=True,
                            text=True, timeout=60, check=False,
                            env={**os.environ, "PYTHONWARNINGS": "ignore"})
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith("zkconsumer.records.message_sets.CorruptMessageError: "
                                "cannot read the record batch at offset 0 of t-0: ")
    assert "zstd" in last_line and last_line.endswith("(pip install cramjam)")


def test_a_log_upgraded_from_v0_to_v1_to_v2_decodes_every_format_in_one_response():
    pytest.importorskip("lz4")
    data = b"".join([legacy(0, 0, [(None, b"v0")], LZ4), legacy(0, 1, [(b"k", b"v1")]),
                     legacy(1, 2, [(b"old", b"v2"), (b"old", b"v3")], GZIP),
                     batch(4, [(b"new", b"v4", [("h", b"x")])]), legacy(1, 5, [(None, b"v5")]),
                     values(6, 2)])
    decoded = decode_records(data, "t", 0, 1)
    assert decoded.messages == [
        Message("t", 0, 1, b"k", b"v1", None),
        Message("t", 0, 2, b"old", b"v2", TIMESTAMP),
        Message("t", 0, 3, b"old", b"v3", TIMESTAMP + 1),
        Message("t", 0, 4, b"new", b"v4", TIMESTAMP, (("h", b"x"),)),
        Message("t", 0, 5, None, b"v5", TIMESTAMP),
        Message("t", 0, 6, None, b"v6", TIMESTAMP), Message("t", 0, 7, None, b"v7", TIMESTAMP + 1)]
    assert decoded.next_offset == 8


def test_a_message_whose_lengths_are_garbage_is_corrupt():
    data = bytearray(legacy(1, 0, [(b"k", b"v0")]) + legacy(1, 1, [(b"k", b"v1")]))
    second = len(data) // 2
    struct.pack_into(">i", data, second + 12 + 4 + 1 + 1 + 8, 0x7FFF0000)  # its key length
    with pytest.raises(CorruptMessageError, match="offset 1 of t-0"):
        decode_records(bytes(data), "t", 0, 0)


header_values = st.one_of(st.none(), st.binary(max_size=8))
record_lists = st.lists(
    st.tuples(st.one_of(st.none(), st.binary(max_size=16)),
              st.one_of(st.none(), st.binary(max_size=64)),
              st.lists(st.tuples(st.text(max_size=6), header_values), max_size=3)),
    min_size=1, max_size=8)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(record_lists, st.sampled_from([0, 1, 2]), st.sampled_from([NONE, GZIP])),
                min_size=1, max_size=6),
       st.integers(0, 1 << 40), st.integers(0, 60))
def test_random_entries_of_every_format_come_back_as_written(entries, first_offset, fetch_skip):
    data, expected, offset = b"", [], first_offset
    for records, magic, codec in entries:
        if magic == 2:
            data += batch(offset, records, codec)
        else:
            data += legacy(magic, offset, [(key, value) for key, value, _ in records], codec)
        expected += [Message("t", 0, offset + i, key, value, TIMESTAMP + i if magic else None,
                             tuple(headers) if magic == 2 else ())
                     for i, (key, value, headers) in enumerate(records)]
        offset += len(records)
    fetch_offset = first_offset + fetch_skip
    decoded = decode_records(data, "t", 0, fetch_offset)
    assert decoded.messages == [m for m in expected if m.offset >= fetch_offset]
    assert decoded.next_offset == max(offset, fetch_offset)
    assert not decoded.truncated


@settings(max_examples=60, deadline=None)
@given(record_lists, st.sampled_from([NONE, GZIP]), st.integers(0, 1 << 40), st.integers(0, 10))
def test_random_batches_with_a_key_that_is_not_utf8_read_as_with_one_that_is(
        records, codec, base_offset, fetch_skip):
    records[-1][2].append(("kXY", b""))
    written = batch(base_offset, records)
    fetch_offset = base_offset + fetch_skip
    decoded = decode_records(bad_header_keys(written, codec), "t", 0, fetch_offset)
    readable = decode_records(batch(base_offset, records, codec), "t", 0, fetch_offset)
    assert decoded == readable._replace(messages=list(map(as_java_reads_them, readable.messages)))


def signed_again(message: bytearray) -> bytes:
    """A v0/v1 message with its size and CRC made right after a change."""
    struct.pack_into(">i", message, 8, len(message) - 12)
    struct.pack_into(">I", message, 12, zlib.crc32(bytes(message[16:])))
    return bytes(message)


def test_bytes_after_a_messages_value_are_left_alone():
    decoded = decode_records(signed_again(bytearray(legacy(1, 7, [(b"k", b"v")])) + b"\0\0"),
                             "t", 0, 7)
    assert decoded.messages == [Message("t", 0, 7, b"k", b"v", TIMESTAMP)]
    assert decoded.next_offset == 8


def test_a_log_append_time_wrapper_without_a_timestamp_gives_none():
    wrapper = bytearray(legacy(1, 0, [(None, b"a"), (None, b"b")], GZIP))
    wrapper[17] |= 0x08  # log append time
    struct.pack_into(">q", wrapper, 18, -1)
    decoded = decode_records(signed_again(wrapper), "t", 0, 0)
    assert [(m.offset, m.timestamp) for m in decoded.messages] == [(0, None), (1, None)]


BOMB_PROBE = """
import resource, sys
from zkconsumer.records import columns
from zkconsumer.records.message_sets import CorruptMessageError
from zkconsumer.records.decoding import decode_records
if sys.argv[2] == "aiokafka":
    columns._columns = None
data = open(sys.argv[1], "rb").read()
status = open("/proc/self/status").read()
room = int(status.split("VmSize:")[1].split()[0]) * 1024 + (256 << 20)
resource.setrlimit(resource.RLIMIT_AS, (room, room))  # a GiB expanded would not fit
try:
    decode_records(data, "t", 5, 0)
except CorruptMessageError as exc:
    print(exc)
"""


def bomb(codec: int, expanded_mib: int) -> bytes:
    """A batch of one record whose records section expands to `expanded_mib` MiB of zeros,
    made a MiB at a time (gzip in one member, zstd in one frame per MiB)."""
    zeros = bytes(1 << 20)
    if codec == GZIP:
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        records = b"".join(compressor.compress(zeros) for _ in range(expanded_mib))
        records += compressor.flush()
    else:
        records = kafka_codec.zstd_encode(zeros) * expanded_mib
    return resigned(values(0, 1)[:HEADER_SIZE] + records, set_attributes=codec)


@pytest.mark.parametrize(("codec", "expanded_mib"), [(GZIP, 256), (ZSTD, 1024)])
def test_a_decompression_bomb_is_corrupt_without_being_expanded(codec, expanded_mib,
                                                                each_decoder, tmp_path):
    """A GiB from 50 KB (zstd), 256 MiB from 250 KB (gzip): refused at the bound, 32 times
    fetch.message.max.bytes (1 MiB by default), in a process that could not hold them."""
    pytest.importorskip(CODEC_LIBRARY.get(codec, "zlib"))
    data = bomb(codec, expanded_mib)
    assert len(data) < 300_000
    saved = tmp_path / "bomb"
    saved.write_bytes(data)
    result = subprocess.run([sys.executable, "-c", BOMB_PROBE, str(saved), each_decoder],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == ("the record batch at offset 0 of t-5 expands past 33554432 "
                                     "bytes, 32 times fetch.message.max.bytes or the fetched "
                                     "bytes") or result.stdout.startswith(
        "the entry at offset 0 of t-5 expands past 33554432 bytes")


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_each_codec_expands_up_to_its_limit_and_not_a_byte_further(codec):
    pytest.importorskip(CODEC_LIBRARY.get(codec, "zlib"))
    payload = b"0123456789" * 30_000 + bytes(range(256))
    compressed = [ENCODE[codec](payload)]
    if codec == SNAPPY:
        compressed.append(kafka_codec.snappy_encode(payload, xerial_compatible=False))
    for framed in compressed:
        assert expand(codec, framed, len(payload)) == payload
        with pytest.raises(ExpandsTooFar):
            expand(codec, framed, len(payload) - 1)


def test_the_bombs_framing_expands_in_full_below_the_bound():
    """What the bomb tests are stopped by is the bound, not their framing."""
    pytest.importorskip(CODEC_LIBRARY[ZSTD])
    assert expand(ZSTD, bomb(ZSTD, 3)[HEADER_SIZE:], 3 << 20) == bytes(3 << 20)
    assert expand(GZIP, bomb(GZIP, 3)[HEADER_SIZE:], 3 << 20) == bytes(3 << 20)


def test_batches_past_the_bound_are_left_for_the_next_fetch():
    """Four batches expanding to 600 kB each, read with fetch.message.max.bytes of 32 KiB: the
    bound (1 MiB) takes one per fetch; a batch over the whole bound is corrupt."""
    batches = [batch(offset, [(None, bytes(600_000), [])], GZIP) for offset in range(4)]
    data = b"".join(batches)
    position, fetched = 0, []
    while position < len(data):
        decoded = decode_records(data[position:], "t", 0, len(fetched), fetch_bytes=32 << 10)
        assert decoded.next_offset == len(fetched) + 1
        fetched += decoded.messages
        position += len(batches[len(fetched) - 1])
    assert [m.value for m in fetched] == [bytes(600_000)] * 4
    huge = batch(0, [(None, bytes(1_100_000), [])], GZIP)
    with pytest.raises(CorruptMessageError, match="^the (record batch|entry) at offset 0 of t-0 "
                                                  "expands past 1048576 bytes"):
        decode_records(huge, "t", 0, 0, fetch_bytes=32 << 10)

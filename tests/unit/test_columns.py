"""The compiled decoder's own promises: Arrow columns equal to the tuples, views that share the
columns, and no crash on any bytes (its parsers read untrusted data in C)."""

from __future__ import annotations

import gc
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.codec import gzip_encode
from kafka.record._crc32c import crc as kafka_crc32c
from test_records import COUNT_AT, GZIP, NONE, TIMESTAMP, batch, legacy, record_lists, resigned

from zkconsumer.model import Message
from zkconsumer.records import columns
from zkconsumer.records.message_sets import CorruptMessageError

pytestmark = pytest.mark.skipif(not columns.compiled(),
                                reason="the compiled decoder was not built")

entries = st.lists(st.tuples(record_lists, st.sampled_from([0, 1, 2]),
                             st.sampled_from([NONE, GZIP])), min_size=1, max_size=5)


def log_of(entries: list, first_offset: int) -> bytes:
    data, offset = b"", first_offset
    for records, magic, codec in entries:
        if magic == 2:
            data += batch(offset, records, codec)
        else:
            data += legacy(magic, offset, [(key, value) for key, value, _ in records], codec)
        offset += len(records)
    return data


@settings(max_examples=60, deadline=None)
@given(entries, st.integers(0, 1 << 40), st.integers(0, 30), st.integers(0, 30))
def test_columns_answer_as_their_tuples_do(entries, first_offset, fetch_skip, cut):
    fetch_offset = first_offset + fetch_skip
    records = columns.decode_columns(log_of(entries, first_offset), "t", 3, fetch_offset).records
    rest = records[min(cut, len(records)):]
    tuples = columns.records_of(list(rest), "t", 3)
    assert rest.record_batch().equals(tuples.record_batch())
    assert rest.payload_bytes() == tuples.payload_bytes()
    assert [rest.offset_at(i) for i in range(len(rest))] == [m.offset for m in rest] \
        == [tuples.offset_at(i) for i in range(len(tuples))]
    for offset in (fetch_offset, first_offset + cut, first_offset + fetch_skip + cut):
        assert rest.count_before(offset) == tuples.count_before(offset)


def test_a_view_shares_the_columns_and_counts_from_its_own_start():
    data = batch(10, [(b"k%d" % i, b"v%d" % i, [("h", b"%d" % i)]) for i in range(6)])
    records = columns.decode_columns(data, "t", 0, 12).records
    assert len(records) == 4 and records.offset_at(0) == 12 and records.offset_at(-1) == 15
    middle = records[1:3]
    assert [m.offset for m in middle] == [13, 14]
    assert middle == [Message("t", 0, 13, b"k3", b"v3", TIMESTAMP + 3, (("h", b"3"),)),
                      Message("t", 0, 14, b"k4", b"v4", TIMESTAMP + 4, (("h", b"4"),))]
    assert middle.record_batch().column("offset").to_pylist() == [13, 14]
    with pytest.raises(IndexError):
        middle.offset_at(2)
    assert records.count_before(14) == 2
    assert columns.records_of(list(records), "t", 0).count_before(14) == 2


# Around 64 and 16 bytes: where the carry-less CRC-32 starts and where its tail goes to the table.
@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 63, 64, 65, 79, 80, 127, 128, 129, 134,
                                  4096 + 3])
def test_checksums_agree_with_the_reference_implementations(size):
    data = bytes(range(256)) * (size // 256 + 1)
    data = b"x" + data[:size]  # odd start: the unaligned head is handled
    assert columns._columns.crc32(data, 1, len(data)) == zlib.crc32(data[1:])
    assert columns._columns.crc32c(data, 1, len(data)) == kafka_crc32c(data[1:])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.data())
def test_checksums_of_any_slice_agree_with_the_reference_implementations(data, draw):
    start = draw.draw(st.integers(0, len(data)))
    end = draw.draw(st.integers(start, len(data)))
    assert columns._columns.crc32(data, start, end) == zlib.crc32(data[start:end])
    assert columns._columns.crc32c(data, start, end) == kafka_crc32c(data[start:end])


@settings(max_examples=300, deadline=None)
@given(entries, st.data())
def test_any_damage_is_a_corrupt_message_error_never_a_crash(entries, data):
    log = bytearray(log_of(entries, 0))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(log) - 1))
        log[position] = data.draw(st.integers(0, 255))
    log = log[:data.draw(st.integers(0, len(log)))]
    try:
        decoded = columns.decode_columns(bytes(log), "t", 0, 0, check_crcs=False)
    except CorruptMessageError:
        return
    list(decoded.records)
    decoded.records.record_batch()


def test_message_tuples_are_left_out_of_the_cycle_collector():
    """A million tracked tuples made the collector's passes most of the cost of consuming;
    they hold only numbers, bytes, text and tuples of those, so they can be in no cycle."""
    data = batch(0, [(b"k", b"v", [("h", b"x")]), (None, b"w", [])])
    messages = list(columns.decode_columns(data, "t", 0, 0).records)
    assert messages[0].headers == (("h", b"x"),)
    assert not any(gc.is_tracked(m) or gc.is_tracked(m.headers) for m in messages)
    assert not gc.is_tracked(messages[0].headers[0])


def wrapper_with_inner_magic(magic: int) -> bytes:
    """A gzip v1 wrapper whose one inner message claims `magic`, CRCs made right."""
    inner = bytearray(legacy(1, 0, [(None, b"v")]))
    inner[16] = magic
    struct.pack_into(">I", inner, 12, zlib.crc32(bytes(inner[16:])))
    wrapper = bytearray(legacy(1, 0, [(None, b"x")]))  # one uncompressed v1 message
    head, value = wrapper[:34], gzip_encode(bytes(inner))
    message = head[16:26] + struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    message[1] |= GZIP
    crc = struct.pack(">I", zlib.crc32(bytes(message)))
    return struct.pack(">qi", 5, len(message) + 4) + crc + bytes(message)


def test_a_bad_message_inside_a_compressed_one_is_corrupt_and_named():
    with pytest.raises(CorruptMessageError,
                       match="compressed message at offset 5 of t-2: .*offset 0 .*magic 7"):
        columns.decode_columns(wrapper_with_inner_magic(7), "t", 2, 0)


def test_a_failed_parse_leaves_the_columns_as_they_were():
    good = batch(0, [(b"k", b"v", [("h", b"1")])])
    target = columns._columns.Columns()
    target.add_records(good, 61, len(good), 1, 0, TIMESTAMP, TIMESTAMP, False)
    broken = batch(1, [(b"k", b"v", [("h", b"1"), ("i", b"2")])])[:-3]
    with pytest.raises(ValueError):
        target.add_records(broken, 61, len(broken), 1, 1, TIMESTAMP, TIMESTAMP, False)
    assert len(target) == 1
    assert target.messages(Message, "t", 0, 0, 1) == [
        Message("t", 0, 0, b"k", b"v", TIMESTAMP, (("h", b"1"),))]


def test_arrow_batches_borrow_the_decoded_buffers_and_keep_them_alive():
    data = batch(0, [(b"k%d" % i, b"v%d" % i, []) for i in range(3)])
    decoded = columns.decode_columns(data, "t", 0, 0)
    table = decoded.records.record_batch()
    lent = decoded.records._columns
    del decoded
    gc.collect()
    assert table.column("value").to_pylist() == [b"v0", b"v1", b"v2"]
    with pytest.raises(RuntimeError, match="lent to Arrow"):
        lent.add_records(data, 61, len(data), 3, 3, TIMESTAMP, TIMESTAMP, False)


def test_a_negative_record_count_is_corrupt_even_without_records():
    """Kafka refuses a record count below zero; the parser takes none as the count of records
    it must find."""
    data = bytearray(resigned(batch(9, [(None, b"v", [])]), without_records=True))
    struct.pack_into(">i", data, COUNT_AT, -3)
    with pytest.raises(CorruptMessageError,
                       match="^cannot decode the record batch at offset 9 of t-0: a record "
                             "count of -3$"):
        columns.decode_columns(bytes(data), "t", 0, 0, check_crcs=False)

"""Message formats v0 and v1 (legacy message sets) through `decode_records`, checked against
kafka-python's own encoder as an independent oracle."""

from __future__ import annotations

import struct
import zlib

import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from zkconsumer.model import Message
from zkconsumer.records.decoding import decode_records
from zkconsumer.records.message_sets import CorruptMessageError

# Each test runs with the compiled decoder and with aiokafka's reader (tests/unit/conftest.py).
pytestmark = pytest.mark.usefixtures("each_decoder")

GZIP, SNAPPY, LZ4 = 1, 2, 3
LOG_APPEND_TIME = 0x08


def message_set(magic: int, records: list[tuple[int, int | None, bytes | None, bytes | None]],
                codec: int = 0) -> bytes:
    """As a broker sends it: uncompressed messages with absolute offsets, or one wrapper whose
    offset is that of its last inner message (inner offsets relative from format v1)."""
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for offset, timestamp, key, value in records:
        inner_offset = offset - records[0][0] if codec and magic == 1 else offset
        builder.append(inner_offset, timestamp, key, value)
    data = bytearray(builder.build())
    if codec:
        struct.pack_into(">q", data, 0, records[-1][0])
    return bytes(data)


def test_format_v0_gives_offsets_keys_and_values_and_no_timestamps():
    data = message_set(0, [(5, None, b"k", b"one"), (6, None, None, b"two"),
                           (7, None, b"k3", None)])
    decoded = decode_records(data, "t", 3, 5)
    assert decoded.messages == [Message("t", 3, 5, b"k", b"one", None),
                                Message("t", 3, 6, None, b"two", None),
                                Message("t", 3, 7, b"k3", None, None)]
    assert decoded.next_offset == 8
    assert not decoded.truncated


def test_format_v1_carries_timestamps():
    data = message_set(1, [(0, 1_700_000_000_000, None, b"a"), (1, 1_700_000_000_001, b"k", b"b")])
    decoded = decode_records(data, "t", 0, 0)
    assert [(m.offset, m.key, m.value, m.timestamp) for m in decoded.messages] == [
        (0, None, b"a", 1_700_000_000_000), (1, b"k", b"b", 1_700_000_000_001)]


def test_a_v1_message_without_a_timestamp_has_none_and_legacy_messages_have_no_headers():
    decoded = decode_records(message_set(1, [(0, -1, None, b"a")]), "t", 0, 0)
    assert decoded.messages == [Message("t", 0, 0, None, b"a", None, ())]


def test_a_message_cut_at_the_byte_limit_is_left_for_the_next_fetch():
    data = message_set(0, [(0, None, None, b"x" * 50), (1, None, None, b"y" * 50)])
    for cut in (1, 11, 12, 20, 30):
        decoded = decode_records(data[:-cut], "t", 0, 0)
        assert [m.offset for m in decoded.messages] == [0]
        assert decoded.next_offset == 1 and decoded.truncated


def test_a_set_holding_only_part_of_one_message_has_no_next_offset():
    data = message_set(0, [(9, None, None, b"x" * 500)])
    decoded = decode_records(data[:100], "t", 0, 9)
    assert decoded == ([], None, True)


def test_an_empty_set_is_nothing_new():
    messages, next_offset, truncated = decode_records(b"", "t", 0, 4)
    assert list(messages) == [] and next_offset is None and not truncated


def test_a_flipped_byte_fails_the_crc_check_unless_checks_are_off():
    data = bytearray(message_set(0, [(0, None, None, b"payload")]))
    data[-1] ^= 0xFF
    with pytest.raises(CorruptMessageError, match="offset 0 of t-2 fails its CRC"):
        decode_records(bytes(data), "t", 2, 0)
    assert decode_records(bytes(data), "t", 2, 0, check_crcs=False).messages[0].value \
        != b"payload"


@pytest.mark.parametrize("magic", [0, 1])
def test_gzip_wrappers_give_absolute_offsets_and_skip_what_precedes_the_fetch_offset(magic):
    records = [(100 + i, 1_000 + i if magic else None, None, b"v%d" % i) for i in range(10)]
    data = message_set(magic, records[:5], GZIP) + message_set(magic, records[5:], GZIP)
    decoded = decode_records(data, "t", 0, 103)
    assert [(m.offset, m.value, m.timestamp) for m in decoded.messages] == [
        (offset, value, timestamp) for offset, timestamp, _, value in records[3:]]
    assert decoded.next_offset == 110


def test_log_append_time_on_the_wrapper_replaces_the_inner_timestamps():
    data = bytearray(message_set(1, [(40, 1, None, b"a"), (41, 2, None, b"b")], GZIP))
    data[17] |= LOG_APPEND_TIME  # attributes byte of the wrapper
    struct.pack_into(">q", data, 18, 9_999)  # its timestamp
    struct.pack_into(">I", data, 12, zlib.crc32(bytes(data[16:])))
    decoded = decode_records(bytes(data), "t", 0, 40)
    assert [(m.offset, m.timestamp) for m in decoded.messages] == [(40, 9_999), (41, 9_999)]


@pytest.mark.parametrize("codec,magic", [(SNAPPY, 0), (SNAPPY, 1), (LZ4, 0), (LZ4, 1)])
def test_snappy_and_lz4_wrappers_decode_when_their_libraries_are_installed(codec, magic):
    pytest.importorskip("snappy" if codec == SNAPPY else "lz4")  # kafka-python's encoders
    if not (codec == LZ4 and magic == 0):  # that one is kafka-python's codec too
        pytest.importorskip("cramjam")  # aiokafka's decoders
    records = [(7 + i, 5 if magic else None, b"k", b"value %d" % i) for i in range(20)]
    decoded = decode_records(message_set(magic, records, codec), "t", 1, 7)
    assert [(m.offset, m.key, m.value) for m in decoded.messages] == [
        (offset, key, value) for offset, _, key, value in records]


def test_an_undecompressible_v0_lz4_wrapper_names_its_offset():
    pytest.importorskip("lz4")
    data = bytearray(message_set(0, [(3 + i, None, None, b"value %d" % i) for i in range(20)],
                                 LZ4))
    data[-8:] = b"\xff" * 8
    with pytest.raises(CorruptMessageError, match="decompress the message at offset 22 of t-0"):
        decode_records(bytes(data), "t", 0, 0, check_crcs=False)


def test_a_too_short_message_is_corrupt_not_truncated():
    data = struct.pack(">qiIbb", 0, 4, 0, 0, 0) + b"\x00" * 20
    with pytest.raises(CorruptMessageError, match="too short"):
        decode_records(data, "t", 0, 0, check_crcs=False)


def test_an_unknown_codec_is_named():
    data = bytearray(message_set(0, [(0, None, None, b"x")]))
    data[17] = 0x05
    with pytest.raises(CorruptMessageError,
                       match="(?i)offset 0 of t-0: .*unknown compression codec"):
        decode_records(bytes(data), "t", 0, 0, check_crcs=False)

"""The fetcher's requests and responses against hand-made bytes in the documented layouts."""

from __future__ import annotations

import struct

import pytest

from zkconsumer.fetch import kafka_protocol as protocol
from zkconsumer.model import TopicPartition


def string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def array(items: list[bytes]) -> bytes:
    return struct.pack(">i", len(items)) + b"".join(items)


def test_a_request_frame_is_size_header_and_body():
    frame = protocol.frame_request(protocol.FETCH, 1, 42, "me", b"BODY")
    size, api_key, version, correlation_id = struct.unpack_from(">ihhi", frame)
    assert (api_key, version, correlation_id) == (1, 1, 42)
    assert size == len(frame) - 4
    assert frame[12:] == string("me") + b"BODY"


def test_fetch_requests_group_partitions_by_topic_in_order():
    body = protocol.fetch_request(100, 1, {TopicPartition("b", 0): 7, TopicPartition("a", 2): 5,
                                           TopicPartition("a", 1): 3}, 1024)
    expected = struct.pack(">iii", -1, 100, 1) + array([
        string("a") + array([struct.pack(">iqi", 1, 3, 1024), struct.pack(">iqi", 2, 5, 1024)]),
        string("b") + array([struct.pack(">iqi", 0, 7, 1024)]),
    ])
    assert body == expected


@pytest.mark.parametrize("version", [0, 1, 2])
def test_fetch_responses_give_each_partition_its_error_watermark_and_message_set(version):
    throttle = struct.pack(">i", 0) if version else b""
    payload = struct.pack(">i", 9) + throttle + array([
        string("t") + array([struct.pack(">ihqi", 0, 0, 50, 3) + b"abc",
                             struct.pack(">ihqi", 1, 6, -1, 0)])])
    assert protocol.decode_fetch(version, payload) == [
        (TopicPartition("t", 0), 0, 50, b"abc"), (TopicPartition("t", 1), 6, -1, b"")]


def test_a_response_cut_short_is_a_protocol_error():
    payload = struct.pack(">i", 9) + array([string("t") + array([struct.pack(">ihqi", 0, 0, 50,
                                                                               100) + b"abc"])])
    with pytest.raises(protocol.ProtocolError):
        protocol.decode_fetch(0, payload)


def test_metadata_gives_brokers_and_leaders_and_parses_past_a_topic_in_error():
    payload = struct.pack(">i", 1) + array([
        struct.pack(">i", 0) + string("host-a") + struct.pack(">i", 9092),
        struct.pack(">i", 1) + string("host-b") + struct.pack(">i", 9093),
    ]) + array([
        struct.pack(">h", 0) + string("t") + array([
            struct.pack(">hii", 0, 0, 1) + array([struct.pack(">i", 1)]) + array([]),
            struct.pack(">hii", 5, 1, -1) + array([]) + array([]),
        ]),
        struct.pack(">h", 3) + string("missing") + array([]),
    ])
    metadata = protocol.decode_metadata(payload)
    assert metadata.brokers == {0: ("host-a", 9092), 1: ("host-b", 9093)}
    assert metadata.leaders == {TopicPartition("t", 0): 1, TopicPartition("t", 1): -1}
    assert {tp.topic for tp in metadata.leaders} == {"t"}  # "missing" had an error, no partitions
    assert protocol.metadata_request(["a", "b"]) == array([string("a"), string("b")])


def test_list_offsets_asks_one_offset_per_partition_and_reads_the_answers():
    body = protocol.list_offsets_request({TopicPartition("t", 0): protocol.EARLIEST})
    assert body == struct.pack(">i", -1) + array(
        [string("t") + array([struct.pack(">iqi", 0, -2, 1)])])
    payload = struct.pack(">i", 3) + array([string("t") + array([
        struct.pack(">ih", 0, 0) + array([struct.pack(">q", 17)]),
        struct.pack(">ih", 1, 6) + array([]),
    ])])
    assert protocol.decode_list_offsets(payload) == {TopicPartition("t", 0): (0, 17),
                                                     TopicPartition("t", 1): (6, None)}


@pytest.mark.parametrize("api_version,expected", [
    ((0, 8, 2), 0), ((0, 9), 1), ((0, 10), 2), ((2, 8), 2), (None, 2)])
def test_the_fetch_version_follows_the_broker_generation(api_version, expected):
    assert protocol.fetch_version(api_version) == expected

"""The fetcher's requests and responses, in every version it speaks.

Two references: hand-made bytes in the documented layouts for the legacy versions, and, for
every version, kafka-python's implementation of Kafka's message specs (an encoder and decoder
written independently from the same JSON specs): our requests must be byte for byte what it
encodes and decode in it to what we meant, and its responses must decode in ours."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from support.kafka_answers import (
    FETCH_VERSIONS,
    LIST_OFFSETS_VERSIONS,
    METADATA_VERSIONS,
    decode_answer,
    fetch_response,
    valid_answers,
)

from zkconsumer.kafka.protocol import codec as protocol
from zkconsumer.model import TopicPartition

A0, A2, B0, B3 = (TopicPartition("a", 0), TopicPartition("a", 2), TopicPartition("b", 0),
                  TopicPartition("b", 3))


def string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def array(items: list[bytes]) -> bytes:
    return struct.pack(">i", len(items)) + b"".join(items)


def framed_by_us(api_key: int, version: int, body: bytes) -> bytes:
    """A request as a channel sends it, without the size."""
    frame = protocol.frame_request(api_key, version, 42, "zk-test", body)
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    return frame[4:]


def answered_by_them(response, correlation_id: int = 9) -> bytes:
    """A response as a channel receives it: header (flexible or not) and body."""
    response.with_header(correlation_id=correlation_id)
    payload = bytes(response.encode(header=True))
    assert protocol.response_correlation_id(payload) == correlation_id
    return payload


def assert_their_header(request, api_key: int, version: int) -> None:
    assert (request.header.request_api_key, request.header.request_api_version,
            request.header.correlation_id, request.header.client_id) == (
        api_key, version, 42, "zk-test")


# -- hand-made bytes: the legacy versions ---------------------------------------------------

def test_a_request_frame_is_size_header_and_body():
    frame = protocol.frame_request(protocol.FETCH, 1, 42, "me", b"BODY")
    size, api_key, version, correlation_id = struct.unpack_from(">ihhi", frame)
    assert (api_key, version, correlation_id) == (1, 1, 42)
    assert size == len(frame) - 4
    assert frame[12:] == string("me") + b"BODY"


def test_a_flexible_request_header_ends_with_empty_tagged_fields():
    frame = protocol.frame_request(protocol.FETCH, 12, 42, "me", b"BODY")
    assert frame[12:] == string("me") + b"\x00" + b"BODY"  # the client id stays a classic string


def test_fetch_requests_group_partitions_by_topic_in_the_order_given():
    body = protocol.fetch_request(100, 1, {B0: 7, A2: 5, TopicPartition("a", 1): 3}, 1024)
    expected = struct.pack(">iii", -1, 100, 1) + array([
        string("b") + array([struct.pack(">iqi", 0, 7, 1024)]),
        string("a") + array([struct.pack(">iqi", 2, 5, 1024), struct.pack(">iqi", 1, 3, 1024)]),
    ])
    assert body == expected


@pytest.mark.parametrize("version", [0, 1, 2])
def test_fetch_responses_give_each_partition_its_error_watermark_and_message_set(version):
    throttle = struct.pack(">i", 0) if version else b""
    payload = struct.pack(">i", 9) + throttle + array([
        string("t") + array([struct.pack(">ihqi", 0, 0, 50, 3) + b"abc",
                             struct.pack(">ihqi", 1, 6, -1, 0)])])
    assert protocol.decode_fetch(version, payload) == (0, [
        (TopicPartition("t", 0), 0, 50, -1, None, b"abc"),
        (TopicPartition("t", 1), 6, -1, -1, None, b"")])


def test_a_response_cut_short_is_a_protocol_error():
    payload = struct.pack(">i", 9) + array([string("t") + array([struct.pack(">ihqi", 0, 0, 50,
                                                                               100) + b"abc"])])
    with pytest.raises(protocol.ProtocolError):
        protocol.decode_fetch(0, payload)


def test_a_response_longer_than_its_layout_is_a_protocol_error():
    """What a broker answering in another version's layout looks like, when it parses at all."""
    payload = struct.pack(">i", 9) + array([]) + b"\x00\x00"
    with pytest.raises(protocol.ProtocolError, match="2 bytes after its last field"):
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


# -- ApiVersions v0, against kafka-python ---------------------------------------------------

def test_api_versions_asks_with_an_empty_v0_body():
    request = ApiVersionsRequest.decode(
        framed_by_us(protocol.API_VERSIONS, 0, protocol.API_VERSIONS_REQUEST), version=0,
        header=True)
    assert_their_header(request, protocol.API_VERSIONS, 0)
    assert protocol.API_VERSIONS_REQUEST == bytes(ApiVersionsRequest[0]().encode())


def test_api_versions_answers_give_each_api_its_version_range():
    response = ApiVersionsResponse[0](error_code=0, api_keys=[
        ApiVersionsResponse.ApiVersion(api_key=1, min_version=4, max_version=17),
        ApiVersionsResponse.ApiVersion(api_key=2, min_version=1, max_version=10),
        ApiVersionsResponse.ApiVersion(api_key=3, min_version=0, max_version=13)])
    assert protocol.decode_api_versions(answered_by_them(response)) == {
        1: (4, 17), 2: (1, 10), 3: (0, 13)}


def test_an_api_versions_error_without_versions_is_a_protocol_error():
    response = ApiVersionsResponse[0](error_code=35, api_keys=[])
    with pytest.raises(protocol.ProtocolError, match="error 35"):
        protocol.decode_api_versions(answered_by_them(response))


# -- Fetch v0-v12, against kafka-python -----------------------------------------------------

@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_fetch_requests_are_what_kafka_python_encodes(version):
    offsets = {B0: 7, A2: 5, B3: 9}
    body = protocol.fetch_request(100, 1, offsets, 1024, version, protocol.READ_COMMITTED)

    def partition(tp, offset):
        return FetchRequest.FetchTopic.FetchPartition(
            partition=tp.partition, current_leader_epoch=-1, fetch_offset=offset,
            last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1024)

    theirs = FetchRequest[version](
        replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=3 * 1024, isolation_level=1,
        session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[
            FetchRequest.FetchTopic(topic="b", partitions=[partition(B0, 7), partition(B3, 9)]),
            FetchRequest.FetchTopic(topic="a", partitions=[partition(A2, 5)])])
    assert body == bytes(theirs.encode())


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_fetch_requests_decode_in_kafka_python_as_meant(version):
    body = protocol.fetch_request(250, 10, {B0: 7, A2: 5}, 4096, version, protocol.READ_COMMITTED)
    request = FetchRequest.decode(framed_by_us(protocol.FETCH, version, body), version=version,
                                  header=True)
    assert_their_header(request, protocol.FETCH, version)
    assert (request.replica_id, request.max_wait_ms, request.min_bytes) == (-1, 250, 10)
    assert [(t.topic, [(p.partition, p.fetch_offset, p.partition_max_bytes) for p in t.partitions])
            for t in request.topics] == [("b", [(0, 7, 4096)]), ("a", [(2, 5, 4096)])]
    if version >= 3:
        assert request.max_bytes == 2 * 4096  # every partition's share, as v0-v2 allowed
    if version >= 4:
        assert request.isolation_level == 1
    if version >= 7:
        assert (request.session_id, request.session_epoch) == (0, -1)  # no session: full fetch
        assert request.forgotten_topics_data == []
    if version >= 9:
        assert {p.current_leader_epoch for t in request.topics for p in t.partitions} == {-1}
    if version >= 11:
        assert request.rack_id == ""


def test_a_fetch_response_limit_never_overflows():
    request = FetchRequest.decode(protocol.fetch_request(
        100, 1, {TopicPartition("t", p): 0 for p in range(3000)}, 1 << 20, 12), version=12)
    assert request.max_bytes == 0x7FFFFFFF


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_fetch_responses_from_kafka_python_decode(version):
    transactional = version >= 4
    assert protocol.decode_fetch(version, answered_by_them(fetch_response(version))) == (0, [
        (TopicPartition("t", 0), 0, 50, 40 if transactional else -1,
         [(11, 30), (12, 35)] if transactional else None, b"abc"),
        (TopicPartition("t", 1), 6, -1, -1, None, b""),
        (TopicPartition("u", 4), 0, 8, 8 if transactional else -1,
         [] if transactional else None, b""),
    ])


@pytest.mark.parametrize("version", [7, 12])
def test_a_fetch_response_error_for_the_whole_request_is_read(version):
    response = FetchResponse[version](throttle_time_ms=0, error_code=35, session_id=0,
                                      responses=[])
    assert protocol.decode_fetch(version, answered_by_them(response)) == (35, [])


# -- ListOffsets v0-v11, against kafka-python -----------------------------------------------

@pytest.mark.parametrize("version", LIST_OFFSETS_VERSIONS)
def test_list_offsets_requests_are_what_kafka_python_encodes(version):
    body = protocol.list_offsets_request({B0: protocol.LATEST, A2: protocol.EARLIEST}, version,
                                         protocol.READ_COMMITTED, timeout_ms=1500)

    def partition(tp, time):
        return ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=tp.partition, current_leader_epoch=-1, timestamp=time,
            max_num_offsets=1)

    theirs = ListOffsetsRequest[version](replica_id=-1, isolation_level=1, timeout_ms=1500, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name="b", partitions=[partition(B0, -1)]),
        ListOffsetsRequest.ListOffsetsTopic(name="a", partitions=[partition(A2, -2)])])
    assert body == bytes(theirs.encode())
    request = ListOffsetsRequest.decode(framed_by_us(protocol.LIST_OFFSETS, version, body),
                                        version=version, header=True)
    assert_their_header(request, protocol.LIST_OFFSETS, version)
    assert [(t.name, [(p.partition_index, p.timestamp) for p in t.partitions])
            for t in request.topics] == [("b", [(0, -1)]), ("a", [(2, -2)])]
    if version >= 2:
        assert request.isolation_level == 1


@pytest.mark.parametrize("version", LIST_OFFSETS_VERSIONS)
def test_list_offsets_responses_from_kafka_python_decode(version):
    answer = ListOffsetsResponse.ListOffsetsTopicResponse.ListOffsetsPartitionResponse
    response = ListOffsetsResponse[version](throttle_time_ms=0, topics=[
        ListOffsetsResponse.ListOffsetsTopicResponse(name="t", partitions=[
            answer(partition_index=0, error_code=0, old_style_offsets=[17], timestamp=-1,
                   offset=17, leader_epoch=4),
            answer(partition_index=1, error_code=6, old_style_offsets=[], timestamp=-1,
                   offset=-1, leader_epoch=-1)])])
    assert protocol.decode_list_offsets(answered_by_them(response), version) == {
        TopicPartition("t", 0): (0, 17), TopicPartition("t", 1): (6, None)}


# -- Metadata v0-v12, against kafka-python --------------------------------------------------

@pytest.mark.parametrize("version", METADATA_VERSIONS)
def test_metadata_requests_are_what_kafka_python_encodes(version):
    body = protocol.metadata_request(["b", "a"], version)
    topic = MetadataRequest.MetadataRequestTopic
    theirs = MetadataRequest[version](
        topics=[topic(topic_id=uuid.UUID(int=0), name="b"),
                topic(topic_id=uuid.UUID(int=0), name="a")],
        allow_auto_topic_creation=True, include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False)
    assert body == bytes(theirs.encode())
    request = MetadataRequest.decode(framed_by_us(protocol.METADATA, version, body),
                                     version=version, header=True)
    assert_their_header(request, protocol.METADATA, version)
    assert [t.name for t in request.topics] == ["b", "a"]
    if version >= 4:
        assert request.allow_auto_topic_creation  # as every v0-v3 request allowed


@pytest.mark.parametrize("version", METADATA_VERSIONS)
def test_metadata_responses_from_kafka_python_decode(version):
    broker, topic = MetadataResponse.MetadataResponseBroker, MetadataResponse.MetadataResponseTopic
    partition = topic.MetadataResponsePartition
    response = MetadataResponse[version](
        throttle_time_ms=0, cluster_id="cluster", controller_id=1, authorized_operations=set(),
        brokers=[broker(node_id=0, host="host-a", port=9092, rack="r1"),
                 broker(node_id=1, host="host-b", port=9093, rack=None)],
        topics=[
            topic(error_code=0, name="t", topic_id=uuid.uuid4(), is_internal=False,
                  authorized_operations=set(), partitions=[
                      partition(error_code=0, partition_index=0, leader_id=1, leader_epoch=3,
                                replica_nodes=[1, 0], isr_nodes=[1], offline_replicas=[0]),
                      partition(error_code=5, partition_index=1, leader_id=-1, leader_epoch=-1,
                                replica_nodes=[], isr_nodes=[], offline_replicas=[])]),
            topic(error_code=3, name="missing", topic_id=uuid.UUID(int=0), is_internal=False,
                  authorized_operations=set(), partitions=[])])
    metadata = protocol.decode_metadata(answered_by_them(response), version)
    assert metadata.brokers == {0: ("host-a", 9092), 1: ("host-b", 9093)}
    assert metadata.leaders == {TopicPartition("t", 0): 1, TopicPartition("t", 1): -1}


# -- flexible encoding details --------------------------------------------------------------

def test_unknown_tagged_fields_of_a_flexible_response_are_skipped():
    """A newer broker may add tagged fields anywhere; here in the header and at the end."""
    payload = answered_by_them(fetch_response(12))
    header_tags = b"\x01" + b"\x05\x02zz"  # one field, tag 5, two bytes
    tagged = payload[:4] + header_tags + payload[5:-1] + b"\x01\x09\x01z"
    assert protocol.decode_fetch(12, tagged) == protocol.decode_fetch(12, payload)


def test_a_varint_longer_than_five_bytes_is_a_protocol_error():
    with pytest.raises(protocol.ProtocolError, match="varint"):
        protocol.decode_fetch(12, struct.pack(">i", 9) + b"\xff" * 6)


def test_a_null_topic_name_where_one_is_needed_is_a_protocol_error():
    payload = struct.pack(">i", 9) + b"\x00" + struct.pack(">ihi", 0, 0, 0) + b"\x02\x00"
    with pytest.raises(protocol.ProtocolError, match="null"):
        protocol.decode_fetch(12, payload)


# -- hostile answers: a broker's bytes are untrusted ---------------------------------------

ABSURD_COUNTS = [-2, -(2**31), 2**31 - 1, 2**20]
# unsigned varints: 2^32-1, 2^28, 0 (a null where a length belongs), 2^35-1 (too long)
ABSURD_VARINTS = [b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x01", b"\x00",
                  b"\xff\xff\xff\xff\x7f"]


VALID_ANSWERS = valid_answers()


def test_every_valid_answer_used_below_decodes():
    for decoder, version, payload in VALID_ANSWERS:
        decode_answer(decoder, version, payload)


@pytest.mark.parametrize(("decoder", "version", "payload"), VALID_ANSWERS,
                         ids=[f"{d}-v{v}" for d, v, _ in VALID_ANSWERS])
def test_an_answer_cut_anywhere_is_a_protocol_error(decoder, version, payload):
    for end in range(4, len(payload)):
        with pytest.raises(protocol.ProtocolError):
            decode_answer(decoder, version, payload[:end])


@settings(max_examples=300, deadline=None)
@given(answer=st.sampled_from(VALID_ANSWERS), data=st.data())
def test_a_mutated_answer_decodes_or_is_a_protocol_error(answer, data):
    """Bit flips, and lengths or counts made absurd (an int16, int32 or varint written over
    the answer anywhere after its correlation id): never anything but a ProtocolError."""
    decoder, version, payload = answer
    mutated = bytearray(payload)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(4, len(mutated) - 1))
        kind = data.draw(st.sampled_from(["flip", "int16", "int32", "varint"]))
        if kind == "flip":
            mutated[at] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "varint":
            mutated[at:at + 5] = data.draw(st.sampled_from(ABSURD_VARINTS))
        else:
            size = 2 if kind == "int16" else 4
            mutated[at:at + size] = struct.pack(">h" if size == 2 else ">i", data.draw(
                st.sampled_from([-2, -1, 0x7FFF, 0x7FFFFFFF, -(2**31)] if size == 4
                                else [-2, -1, 0x7FFF, -(2**15)])))
    try:
        decode_answer(decoder, version, bytes(mutated))
    except protocol.ProtocolError:
        pass


@pytest.mark.parametrize("count", ABSURD_COUNTS)
def test_an_absurd_count_is_refused_before_it_is_looped_over(count):
    """2^31-1 partitions announced in a few bytes: refused by the count's own check, before
    any item is read or allocated."""
    fetch = struct.pack(">i", 9) + struct.pack(">i", 1) + string("t") + struct.pack(">i", count)
    api_versions = struct.pack(">ih", 9, 0) + struct.pack(">i", count) + b"\x00" * 12
    list_offsets_v0 = struct.pack(">i", 9) + array([string("t") + array([
        struct.pack(">ih", 0, 0) + struct.pack(">i", count) + b"\x00" * 8])])
    refused = "announces" if count > 0 else "length of"
    with pytest.raises(protocol.ProtocolError, match=refused):
        protocol.decode_fetch(0, fetch)
    with pytest.raises(protocol.ProtocolError, match=refused):
        protocol.decode_api_versions(api_versions)
    with pytest.raises(protocol.ProtocolError, match=refused):
        protocol.decode_list_offsets(list_offsets_v0)


def _metadata_v0(replicas: bytes) -> bytes:
    """A v0 metadata answer: one broker, one topic of one partition led by it, whose replica
    list is `replicas` (its in-sync list is one replica)."""
    broker = struct.pack(">i", 0) + string("host") + struct.pack(">i", 9092)
    partition = struct.pack(">hii", 0, 0, 0) + replicas + array([struct.pack(">i", 0)])
    return struct.pack(">i", 9) + array([broker]) + array([
        struct.pack(">h", 0) + string("t") + array([partition])])


@pytest.mark.parametrize("count", ABSURD_COUNTS)
def test_a_replica_list_longer_than_the_answer_or_below_null_is_refused(count):
    refused = "announces" if count > 0 else "length of"
    with pytest.raises(protocol.ProtocolError, match=refused):
        protocol.decode_metadata(_metadata_v0(struct.pack(">i", count)), 0)


def test_replica_lists_are_skipped_whole_even_null_and_an_answer_ending_in_one_is_refused():
    for replicas in (array([]), struct.pack(">i", -1), array([struct.pack(">i", n)
                                                              for n in range(40)])):
        assert protocol.decode_metadata(_metadata_v0(replicas), 0).leaders == \
            {TopicPartition("t", 0): 0}
    # five replicas announced, seven bytes of them and the in-sync list's eight left: 15 < 20
    with pytest.raises(protocol.ProtocolError, match="announces 5 items"):
        protocol.decode_metadata(_metadata_v0(struct.pack(">i", 5) + b"\x00" * 7), 0)
    whole = _metadata_v0(array([]))
    inside_the_count = len(whole) - 8 - 2  # two bytes into it (the in-sync list's 8 follow)
    with pytest.raises(protocol.ProtocolError, match="ends early"):
        protocol.decode_metadata(whole[:inside_the_count], 0)


def test_aborted_transactions_beyond_the_answer_are_refused():
    partition = struct.pack(">ihqq", 0, 0, 10, 10) + struct.pack(">i", 2**31 - 1) + b"\x00" * 16
    payload = struct.pack(">ii", 9, 0) + array([string("t") + array([partition])])
    with pytest.raises(protocol.ProtocolError, match="2147483647 items of 16"):
        protocol.decode_fetch(4, payload)


@pytest.mark.parametrize("size", [-2, -(2**31), 2**31 - 1, 4])
def test_a_record_set_length_that_is_not_in_the_answer_is_refused(size):
    payload = struct.pack(">i", 9) + array([string("t") + array([
        struct.pack(">ihqi", 0, 0, 50, size) + b"abc"])])
    with pytest.raises(protocol.ProtocolError):
        protocol.decode_fetch(0, payload)


def test_a_negative_string_length_other_than_null_is_refused():
    payload = struct.pack(">i", 9) + struct.pack(">i", 1) + struct.pack(">h", -2)
    with pytest.raises(protocol.ProtocolError, match="length of -2"):
        protocol.decode_fetch(0, payload)


def test_a_name_that_is_not_utf8_is_a_protocol_error():
    broker = struct.pack(">i", 0) + struct.pack(">h", 2) + b"\xff\xfe" + struct.pack(">i", 9092)
    with pytest.raises(protocol.ProtocolError, match="not UTF-8"):
        protocol.decode_metadata(struct.pack(">i", 9) + array([broker]) + array([]))


def test_a_huge_tagged_field_count_is_refused():
    payload = struct.pack(">i", 9) + b"\xff\xff\xff\xff\x0f"
    with pytest.raises(protocol.ProtocolError, match="tagged fields"):
        protocol.decode_fetch(12, payload)


@pytest.mark.parametrize("version", [0, 1])
def test_a_negative_log_offset_is_no_offset_in_every_version(version):
    """A position below 0 would be fetched, answered out of range, reset to it again: a loop."""
    if version == 0:
        answer = struct.pack(">ih", 0, 0) + array([struct.pack(">q", -5)])
    else:
        answer = struct.pack(">ihqq", 0, 0, -1, -5)
    payload = struct.pack(">i", 3) + array([string("t") + array([answer])])
    assert protocol.decode_list_offsets(payload, version) == {TopicPartition("t", 0): (0, None)}

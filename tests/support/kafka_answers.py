"""A broker's answers to the wire fetcher's requests, as a channel receives them (correlation id
first), encoded by kafka-python: an implementation of the same layouts independent of ours.
Offset and fetch answers are built from what the request asked, as kafka-python decodes it."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping

from kafka.protocol.admin import DescribeGroupsResponse, ListGroupsResponse
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.group import OffsetCommitResponse, OffsetFetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata.api_versions import ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataResponse
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from zkconsumer.kafka.protocol import codec as protocol
from zkconsumer.kafka.protocol import group_codec
from zkconsumer.kafka.protocol.cluster_versions import CLUSTER_IMPLEMENTED
from zkconsumer.model import TopicPartition

# The two partitions the fetcher tests read: one whose answers the test spoils, one left alone.
TOPIC = "t"
SICK, HEALTHY = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
MESSAGES = 3  # in each partition's log
NOT_LEADER, UNKNOWN_SERVER_ERROR = 6, -1
FETCH, LIST_OFFSETS, METADATA, API_VERSIONS = (protocol.FETCH, protocol.LIST_OFFSETS,
                                               protocol.METADATA, protocol.API_VERSIONS)
# ApiVersions answers of brokers of two eras
KAFKA_0_10_0 = {FETCH: (0, 2), LIST_OFFSETS: (0, 0), METADATA: (0, 1), API_VERSIONS: (0, 0)}
KAFKA_4_0 = {FETCH: (4, 17), LIST_OFFSETS: (1, 10), METADATA: (0, 13), API_VERSIONS: (0, 4)}

# Per partition, the error code to answer with; None or 0: answer normally.
ErrorOf = Callable[[TopicPartition], int | None]


def no_error(_tp: TopicPartition) -> None:
    return None


def encoded(response) -> bytes:
    response.with_header(correlation_id=0)
    return bytes(response.encode(header=True))


def api_versions_answer(offered: Mapping[int, tuple[int, int]]) -> bytes:
    return encoded(ApiVersionsResponse[0](error_code=0, api_keys=[
        ApiVersionsResponse.ApiVersion(api_key=key, min_version=low, max_version=high)
        for key, (low, high) in offered.items()]))


def metadata_answer(version: int, leaders: Mapping[TopicPartition, int],
                    brokers: Mapping[int, tuple[str, int]]) -> bytes:
    """These brokers, and these partitions (of one topic) led by these nodes (-1: none)."""
    (topic,) = {tp.topic for tp in leaders}
    partition = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
    return encoded(MetadataResponse[version](
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=node, host=host, port=port)
                 for node, (host, port) in brokers.items()],
        topics=[MetadataResponse.MetadataResponseTopic(error_code=0, name=topic, partitions=[
            partition(error_code=0, partition_index=tp.partition, leader_id=leader,
                      replica_nodes=[0], isr_nodes=[0], offline_replicas=[])
            for tp, leader in leaders.items()])]))


def list_offsets_answer(version: int, body: bytes, error_of: ErrorOf = no_error) -> bytes:
    """Offset 0 for each partition asked, unless it has an error code."""
    asked = ListOffsetsRequest.decode(body, version=version)

    def partition(tp: TopicPartition):
        error = error_of(tp) or 0
        return ListOffsetsResponse.ListOffsetsTopicResponse.ListOffsetsPartitionResponse(
            partition_index=tp.partition, error_code=error,
            old_style_offsets=[] if error else [0], timestamp=-1, offset=-1 if error else 0)

    return encoded(ListOffsetsResponse[version](throttle_time_ms=0, topics=[
        ListOffsetsResponse.ListOffsetsTopicResponse(name=topic.name, partitions=[
            partition(TopicPartition(topic.name, p.partition_index)) for p in topic.partitions])
        for topic in asked.topics]))


def fetch_answer(version: int, body: bytes, log_end: int, error_of: ErrorOf = no_error,
                 aborted: Iterable[tuple[int, int]] = ()) -> bytes:
    """Each partition asked, its messages from the offset asked up to `log_end` (its high
    watermark), unless it has an error code; `aborted` in every v4+ answer."""
    asked = FetchRequest.decode(body, version=version)
    data = FetchResponse.FetchableTopicResponse.PartitionData

    def partition(tp: TopicPartition, offset: int):
        error = error_of(tp) or 0
        if error:
            return data(partition_index=tp.partition, error_code=error, high_watermark=-1,
                        records=b"")
        builder = LegacyRecordBatchBuilder(1, 0, 1 << 20)
        for position in range(offset, log_end):
            builder.append(position, 1_700_000_000_000, None, b"%s@%d" % (str(tp).encode(),
                                                                         position))
        return data(partition_index=tp.partition, error_code=0, high_watermark=log_end,
                    last_stable_offset=log_end, aborted_transactions=list(aborted),
                    records=bytes(builder.build()))

    return encoded(FetchResponse[version](throttle_time_ms=0, error_code=0, session_id=0,
                                          responses=[
        FetchResponse.FetchableTopicResponse(topic=topic.topic, partitions=[
            partition(TopicPartition(topic.topic, p.partition), p.fetch_offset)
            for p in topic.partitions]) for topic in asked.topics]))


# -- every decoder, every version: the valid answers hostile ones are made from --------------

FETCH_VERSIONS = range(protocol.IMPLEMENTED[protocol.FETCH][1] + 1)
LIST_OFFSETS_VERSIONS = range(protocol.IMPLEMENTED[protocol.LIST_OFFSETS][1] + 1)
METADATA_VERSIONS = range(protocol.IMPLEMENTED[protocol.METADATA][1] + 1)


def fetch_response(version: int, error: int = 0) -> FetchResponse:
    """Two topics, a partition with aborted transactions, one in error, one empty."""
    data = FetchResponse.FetchableTopicResponse.PartitionData
    leader = data.LeaderIdAndEpoch(leader_id=3, leader_epoch=7)  # a tagged field from v12 on
    return FetchResponse[version](throttle_time_ms=5, error_code=error, session_id=0, responses=[
        FetchResponse.FetchableTopicResponse(topic="t", partitions=[
            data(partition_index=0, error_code=0, high_watermark=50, last_stable_offset=40,
                 log_start_offset=3, current_leader=leader,
                 aborted_transactions=[data.AbortedTransaction(producer_id=11, first_offset=30),
                                       data.AbortedTransaction(producer_id=12, first_offset=35)],
                 preferred_read_replica=-1, records=b"abc"),
            data(partition_index=1, error_code=6, high_watermark=-1, last_stable_offset=-1,
                 log_start_offset=-1, aborted_transactions=None, preferred_read_replica=-1,
                 records=None)]),
        FetchResponse.FetchableTopicResponse(topic="u", partitions=[
            data(partition_index=4, error_code=0, high_watermark=8, last_stable_offset=8,
                 log_start_offset=0, aborted_transactions=[], preferred_read_replica=-1,
                 records=b"")])])


def valid_answers() -> list[tuple[str, int, bytes]]:
    """(decoder, version, a valid answer) for every decoder and version."""
    answers = [("api_versions", 0, encoded(ApiVersionsResponse[0](error_code=0, api_keys=[
        ApiVersionsResponse.ApiVersion(api_key=1, min_version=4, max_version=17)])))]
    answers += [("fetch", v, encoded(fetch_response(v))) for v in FETCH_VERSIONS]
    answer = ListOffsetsResponse.ListOffsetsTopicResponse.ListOffsetsPartitionResponse
    answers += [("list_offsets", v, encoded(ListOffsetsResponse[v](
        throttle_time_ms=0, topics=[ListOffsetsResponse.ListOffsetsTopicResponse(
            name="t", partitions=[answer(partition_index=0, error_code=0, old_style_offsets=[17],
                                         timestamp=-1, offset=17, leader_epoch=4)])])))
        for v in LIST_OFFSETS_VERSIONS]
    broker, topic = MetadataResponse.MetadataResponseBroker, MetadataResponse.MetadataResponseTopic
    answers += [("metadata", v, encoded(MetadataResponse[v](
        throttle_time_ms=0, cluster_id="c", controller_id=1, authorized_operations=set(),
        brokers=[broker(node_id=0, host="h", port=9092, rack="r")],
        topics=[topic(error_code=0, name="t", topic_id=uuid.UUID(int=1), is_internal=False,
                      authorized_operations=set(), partitions=[
                          topic.MetadataResponsePartition(
                              error_code=0, partition_index=0, leader_id=0, leader_epoch=1,
                              replica_nodes=[0], isr_nodes=[0], offline_replicas=[])])])))
        for v in METADATA_VERSIONS]
    return answers + group_answers()


def _versions(api_key: int) -> range:
    lowest, highest = CLUSTER_IMPLEMENTED[api_key]
    return range(lowest, highest + 1)


def group_answers() -> list[tuple[str, int, bytes]]:
    """(decoder, version, a valid answer) for the group coordinator's and the cluster's
    group answers the offset readers and the admin commands decode."""
    answers = [("find_coordinator", v, encoded(FindCoordinatorResponse[v](
        throttle_time_ms=0, error_code=0, error_message=None, node_id=3, host="h", port=9093)))
        for v in _versions(protocol.FIND_COORDINATOR)]
    fetched = OffsetFetchResponse.OffsetFetchResponseTopic
    answers += [("offset_fetch", v, encoded(OffsetFetchResponse[v](
        throttle_time_ms=0, error_code=0, topics=[fetched(name="t", partitions=[
            fetched.OffsetFetchResponsePartition(partition_index=0, committed_offset=12,
                                                 committed_leader_epoch=-1, metadata="",
                                                 error_code=0)])])))
        for v in _versions(protocol.OFFSET_FETCH)]
    committed = OffsetCommitResponse.OffsetCommitResponseTopic
    answers += [("offset_commit", v, encoded(OffsetCommitResponse[v](throttle_time_ms=0, topics=[
        committed(name="t", partitions=[committed.OffsetCommitResponsePartition(
            partition_index=0, error_code=0)])])))
        for v in _versions(protocol.OFFSET_COMMIT)]
    answers += [("list_groups", v, encoded(ListGroupsResponse[v](
        throttle_time_ms=0, error_code=0, groups=[ListGroupsResponse.ListedGroup(
            group_id="g", protocol_type="consumer", group_state="Stable")])))
        for v in _versions(protocol.LIST_GROUPS)]
    described = DescribeGroupsResponse.DescribedGroup
    answers += [("described_groups", v, encoded(DescribeGroupsResponse[v](
        throttle_time_ms=0, groups=[described(
            error_code=0, error_message=None, group_id="g", group_state="Stable",
            protocol_type="consumer", protocol_data="range", authorized_operations=set(),
            members=[described.DescribedGroupMember(
                member_id="m", group_instance_id=None, client_id="c", client_host="/h",
                member_metadata=b"\x00\x00", member_assignment=b"\x00\x00")])])))
        for v in _versions(protocol.DESCRIBE_GROUPS)]
    return answers


def decode_answer(decoder: str, version: int, payload: bytes):
    """A payload through our decoder named as `valid_answers` names it."""
    if decoder == "api_versions":
        return protocol.decode_api_versions(payload)
    if decoder == "fetch":
        return protocol.decode_fetch(version, payload)
    module = protocol if hasattr(protocol, f"decode_{decoder}") else group_codec
    return getattr(module, f"decode_{decoder}")(payload, version)

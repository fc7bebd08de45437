"""A small fake Kafka broker whose every fetch answer carries a corrupt record batch.

A member that reads a partition from it meets, on its first fetch, what a broker bug, a proxy
or an attacker on the path could send. It speaks only what zkconsumer's wire fetcher asks of a
modern broker: ApiVersions v0 (offering Fetch v4, ListOffsets v1 and Metadata v0, so that
reading committed brings aborted-transaction lists), Metadata v0 (one topic, every partition
led by itself) and Fetch v4. Any other request closes the connection. Requests are read and
answers written with kafka-python's protocol classes, independent of zkconsumer's codec.

The corrupt batches are built from kafka-python's record batch builder, then broken as
described, their length and CRC made right again so that only the broken field is wrong.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from fuzz.record_fuzzing import hostile_control_batch, varint
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.metadata.api_versions import ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataResponse
from kafka.record._crc32c import crc as crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder

from support.fake_broker import FakeBroker

FETCH, LIST_OFFSETS, METADATA, API_VERSIONS = 1, 2, 3, 18
NODE_ID = 0
PRODUCER_ID = 4242
_TIMESTAMP = 1_700_000_000_000
# Where a v2 batch header keeps the fields rewritten here, and its size.
_LENGTH_AT, _CRC_AT, _ATTRIBUTES_AT, _COUNT_AT, _HEADER_SIZE = 8, 17, 21, 57, 61


def _signed(head: bytes, records: bytes, base_offset: int, count: int) -> bytes:
    """A batch of this header and these record bytes, its offset, count, length and CRC set."""
    batch = bytearray(head[:_HEADER_SIZE] + records)
    struct.pack_into(">q", batch, 0, base_offset)
    struct.pack_into(">i", batch, _LENGTH_AT, len(batch) - 12)
    struct.pack_into(">i", batch, _COUNT_AT, count)
    struct.pack_into(">I", batch, _CRC_AT, crc32c(bytes(batch[_ATTRIBUTES_AT:])))
    return bytes(batch)


def control_batch_with_huge_header_key(base_offset: int) -> bytes:
    """The batch of issue 24, as the fuzzing harness builds it: a transaction marker
    (transactional and control bits) of `PRODUCER_ID` whose one record has a header whose key
    length is 2^34, far past the end of the batch."""
    return hostile_control_batch(PRODUCER_ID, base_offset)


def batch_with_huge_record_length(base_offset: int) -> bytes:
    """An ordinary batch whose one record says it is 2^31-1 bytes long."""
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, _TIMESTAMP, b"key", b"value", [])
    built = builder.build()
    records = built[_HEADER_SIZE:]
    length_size = next(i for i, byte in enumerate(records) if byte < 0x80) + 1
    return _signed(built, varint(2**31 - 1) + records[length_size:], base_offset, 1)


class HostileBroker(FakeBroker):
    """Serves `topic` with `partitions` partitions; each partition a fetch asks for is
    answered with `corrupt(fetch_offset)` and an aborted transaction of `PRODUCER_ID` starting
    there. `served` lists the (partition, offset) pairs answered so, in order."""

    def __init__(self, topic: str, partitions: int, corrupt: Callable[[int], bytes]) -> None:
        super().__init__("hostile-broker")
        self._topic = topic
        self._partitions = partitions
        self._corrupt = corrupt
        self.served: list[tuple[int, int]] = []

    def answer(self, frame: bytes) -> bytes | None:
        api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
        if (api_key, version) == (API_VERSIONS, 0):
            response = ApiVersionsResponse[0](error_code=0, api_keys=[
                ApiVersionsResponse.ApiVersion(api_key=key, min_version=v, max_version=v)
                for key, v in ((FETCH, 4), (LIST_OFFSETS, 1), (METADATA, 0), (API_VERSIONS, 0))])
        elif (api_key, version) == (METADATA, 0):
            response = self._metadata()
        elif (api_key, version) == (FETCH, 4):
            response = self._fetch(FetchRequest.decode(frame, version=4, header=True))
        else:
            return None
        response.with_header(correlation_id=correlation_id)
        return bytes(response.encode(header=True))

    def _metadata(self) -> MetadataResponse:
        topic = MetadataResponse.MetadataResponseTopic
        return MetadataResponse[0](
            brokers=[MetadataResponse.MetadataResponseBroker(node_id=NODE_ID, host="127.0.0.1",
                                                             port=self.port, rack=None)],
            topics=[topic(error_code=0, name=self._topic, is_internal=False, partitions=[
                topic.MetadataResponsePartition(
                    error_code=0, partition_index=p, leader_id=NODE_ID, leader_epoch=-1,
                    replica_nodes=[NODE_ID], isr_nodes=[NODE_ID], offline_replicas=[])
                for p in range(self._partitions)])])

    def _fetch(self, request) -> FetchResponse:
        data = FetchResponse.FetchableTopicResponse.PartitionData
        topics = []
        for asked in request.topics:
            answers = []
            for partition in asked.partitions:
                offset = partition.fetch_offset
                with self._lock:
                    self.served.append((partition.partition, offset))
                answers.append(data(
                    partition_index=partition.partition, error_code=0,
                    high_watermark=offset + 1, last_stable_offset=offset + 1,
                    aborted_transactions=[data.AbortedTransaction(producer_id=PRODUCER_ID,
                                                                  first_offset=offset)],
                    records=self._corrupt(offset)))
            topics.append(FetchResponse.FetchableTopicResponse(topic=asked.topic,
                                                               partitions=answers))
        return FetchResponse[4](throttle_time_ms=0, responses=topics)

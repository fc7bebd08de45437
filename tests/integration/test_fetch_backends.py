"""Both fetch backends against the real broker: compressed topics, offsets out of range, and a
message too large for the fetch size. The wire backend is the default; kafka-python is the one
chosen for SASL and other pass-through options, so both must deliver the same messages."""

from __future__ import annotations

import pytest
from support.kafka import produce

from zkconsumer import ConsumerConnector
from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import ZookeeperOffsetStore

pytestmark = pytest.mark.integration

BACKENDS = ["wire", "kafka-python"]
CODEC_LIBRARIES = {"gzip": None, "snappy": "snappy", "lz4": "lz4"}


def consume(cluster, group: str, topic: str, expected: int, **settings: str) -> list:
    """Every message until `expected` have arrived (or a quiet `consumer.timeout.ms`)."""
    config = {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group,
              "auto.offset.reset": "smallest", "consumer.timeout.ms": "20000", **settings}
    received = []
    with ConsumerConnector(config) as connector:
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        for message in stream:
            received.append(message)
            if len(received) >= expected:
                break
    return received


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("compression", list(CODEC_LIBRARIES))
def test_compressed_topics_arrive_whole_in_order_at_contiguous_offsets(
        cluster, topic_factory, unique_name, compression, backend):
    if CODEC_LIBRARIES[compression]:
        pytest.importorskip(CODEC_LIBRARIES[compression])
    topic = topic_factory(partitions=2)
    values = [f"{compression}-{i:05d}".encode() for i in range(3000)]
    produce(cluster, topic, values, partitions=2, compression=compression)
    received = consume(cluster, unique_name("codec"), topic, len(values),
                       **{"fetch.backend": backend})
    for partition in (0, 1):
        mine = [m for m in received if m.partition == partition]
        assert [m.offset for m in mine] == list(range(len(values) // 2))
        assert [m.value for m in mine] == values[partition::2]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_committed_offset_past_the_log_end_resets_by_auto_offset_reset(
        cluster, zk, topic_factory, unique_name, backend):
    topic = topic_factory(partitions=1)
    values = [b"v%d" % i for i in range(20)]
    produce(cluster, topic, values, partitions=1)
    group = unique_name("out-of-range")
    ZookeeperOffsetStore(zk, group).commit({TopicPartition(topic, 0): 5_000})
    received = consume(cluster, group, topic, len(values), **{"fetch.backend": backend})
    assert [m.offset for m in received] == list(range(20))


def test_a_message_larger_than_the_fetch_size_fails_the_stream_with_a_clear_error(
        cluster, topic_factory, unique_name):
    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"small", b"x" * 4096], partitions=1)
    with pytest.raises(ZkConsumerError, match="offset 1 of .* fetch.message.max.bytes"):
        consume(cluster, unique_name("too-large"), topic, 2,
                **{"fetch.backend": "wire", "fetch.message.max.bytes": "1024"})

"""Both fetch backends against the real broker: compressed topics, offsets out of range, and a
message too large for the fetch size. The wire backend is the default; kafka-python is the one
chosen for SASL and other pass-through options, so both must deliver the same messages."""

from __future__ import annotations

import pytest
from support.kafka import produce
from support.waiting import wait_until

from zkconsumer import ConsumerConnector
from zkconsumer.errors import ZkConsumerError
from zkconsumer.localcluster import create_topic
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import ZookeeperOffsetStore
from zkconsumer.zk.registry import read_partition_state

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


def test_the_wire_fetcher_follows_a_leader_that_moves_to_another_broker(
        cluster, zk, unique_name, members, second_broker):
    topic = unique_name("moving-leader")
    create_topic(zk, topic, partitions=2, replication_factor=2)
    moving = [p for p in (0, 1)
              if read_partition_state(zk, topic, p).leader == second_broker.broker_id]
    assert moving, "the second broker leads a partition"
    before = [b"before-%d" % i for i in range(20)]
    produce(cluster, topic, before, partitions=2)
    member = members(unique_name("moving-leader"), topics={topic: 1},
                     **{"fetch.backend": "wire"})
    wait_until(lambda: len(member.values()) >= 20, timeout=60, message="messages before")

    # A controlled shutdown hands the second broker's leaderships to the first.
    cluster.local.stop_broker(second_broker.broker_id, graceful=True)
    wait_until(lambda: all(read_partition_state(zk, topic, p).leader != second_broker.broker_id
                           for p in moving), timeout=60, message="leadership moved")
    after = [b"after-%d" % i for i in range(20)]
    produce(cluster, topic, after, partitions=2)
    wait_until(lambda: len(member.values()) >= 40, timeout=60, message="messages after")
    assert sorted(member.values()) == sorted(before + after)
    assert member.failure is None


def test_an_idle_member_polls_once_per_fetch_answer(cluster, topic_factory, unique_name,
                                                     monkeypatch):
    """A poll waits for the answer of the fetch in flight, not just the broker's wait, which
    ends a little before the answer comes: an idle member's CPU went on a second, empty poll
    per answer (a routing change and a stop wake the poll, see test_fetch_loop)."""
    from zkconsumer.fetch.wire_fetcher import WireFetcher
    from zkconsumer.metrics import MemberMetrics

    counts = {"polls": 0, "answers": 0}
    poll, observe = WireFetcher.poll, MemberMetrics.observe_fetch

    def counted_poll(self, timeout_ms):
        counts["polls"] += 1
        return poll(self, timeout_ms)

    def counted_answer(self, broker, seconds):  # told of each fetch answer, and only of those
        counts["answers"] += 1
        return observe(self, broker, seconds)

    monkeypatch.setattr(WireFetcher, "poll", counted_poll)
    monkeypatch.setattr(MemberMetrics, "observe_fetch", counted_answer)
    topic = topic_factory(partitions=2)
    config = {"zookeeper.connect": cluster.zookeeper_connect, "group.id": unique_name("idle"),
              "auto.offset.reset": "smallest", "fetch.wait.max.ms": "100",
              "fetch.backend": "wire"}
    with ConsumerConnector(config) as connector:
        connector.create_message_streams({topic: 1})
        wait_until(lambda: counts["answers"] >= 3, timeout=30, message="fetches answered")
        before = dict(counts)
        wait_until(lambda: counts["answers"] - before["answers"] >= 20, timeout=30,
                   message="20 more fetches answered")
        polls = counts["polls"] - before["polls"]
        answers = counts["answers"] - before["answers"]
        assert polls <= answers + 2, counts

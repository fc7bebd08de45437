"""The Python API on the real cluster: streams, batches, timeouts, callbacks, commits, filters,
and incremental rebalances."""

from __future__ import annotations

import threading

import pytest
from support.kafka import produce
from support.waiting import wait_until

from zkconsumer import ConsumerConnector, ConsumerTimeout, Message, TopicPartition, Whitelist
from zkconsumer.zk.group_state import read_owners

pytestmark = pytest.mark.integration


def _config(cluster, group: str, **settings: str) -> dict[str, str]:
    return {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group,
            "auto.offset.reset": "smallest", **settings}


def _values(n: int, prefix: str) -> list[bytes]:
    return [f"{prefix}-{i:04d}".encode() for i in range(n)]


def test_a_stream_yields_messages_then_times_out_and_the_context_manager_commits(
        cluster, zk, topic_factory, unique_name):
    topic = topic_factory(partitions=2)
    produce(cluster, topic, _values(40, "a"), partitions=2, keys=_values(40, "k"))
    group = unique_name("api")
    received: list[Message] = []
    with ConsumerConnector(_config(cluster, group, **{"consumer.timeout.ms": "3000"})) as c:
        (stream,) = c.create_message_streams({topic: 1})[topic]
        with pytest.raises(ConsumerTimeout):
            for message in stream:
                received.append(message)
    assert sorted(m.value for m in received) == _values(40, "a")
    first = min(received, key=lambda m: (m.partition, m.offset))
    assert (first.topic, first.partition, first.offset, first.key) == (topic, 0, 0, b"k-0000")
    # A 0.9 broker keeps no timestamps; newer ones do.
    assert first.timestamp is None or first.timestamp > 0

    produce(cluster, topic, _values(6, "b"), partitions=2)
    with ConsumerConnector(_config(cluster, group, **{"consumer.timeout.ms": "3000"})) as c:
        (stream,) = c.create_message_streams({topic: 1})[topic]
        again: list[bytes] = []
        with pytest.raises(ConsumerTimeout):
            for message in stream:
                again.append(message.value)
    assert sorted(again) == _values(6, "b")


def test_batches_deliver_whole_chunks_and_manual_commit_is_the_only_commit(
        cluster, zk, topic_factory, unique_name):
    topic = topic_factory(partitions=3)
    produce(cluster, topic, _values(300, "x"), partitions=3)
    group = unique_name("batch")
    settings = {"consumer.timeout.ms": "3000", "auto.commit.enable": "false"}
    with ConsumerConnector(_config(cluster, group, **settings)) as c:
        (stream,) = c.create_message_streams({topic: 1})[topic]
        batches = []
        with pytest.raises(ConsumerTimeout):
            for batch in stream.batches():
                batches.append(batch)
        assert sum(len(b) for b in batches) == 300
        assert all(len({(m.topic, m.partition) for m in b}) == 1 for b in batches)
        assert len(batches) < 300, "batches hold more than one message"
        assert not zk.exists(f"/consumers/{group}/offsets/{topic}/0")
        committed = c.commit_offsets()
        assert committed == {TopicPartition(topic, p): 100 for p in range(3)}
        assert c.commit_offsets() == {}, "an unchanged offset is not written again"
    assert zk.get(f"/consumers/{group}/offsets/{topic}/1")[0] == b"100"


def test_a_whitelist_stream_picks_up_a_topic_created_later(cluster, zk, topic_factory,
                                                           unique_name):
    prefix = unique_name("wl").replace("-", "_")
    first = topic_factory(partitions=1, name=f"{prefix}.one")
    produce(cluster, first, [b"one"], partitions=1)
    group = unique_name("filter")
    with ConsumerConnector(_config(cluster, group)) as c:
        (stream,) = c.create_message_streams_by_filter(Whitelist(rf"{prefix}\..*"), 1)
        seen: list[bytes] = []
        reader = threading.Thread(target=lambda: seen.extend(m.value for m in stream),
                                  daemon=True)
        reader.start()
        wait_until(lambda: seen == [b"one"], timeout=60, message="the first topic's message")
        second = topic_factory(partitions=2, name=f"{prefix}.two")
        topic_factory(partitions=1, name=f"other_{prefix}")
        produce(cluster, second, [b"two-a", b"two-b"], partitions=2)
        wait_until(lambda: sorted(seen) == [b"one", b"two-a", b"two-b"], timeout=60,
                   message="the new topic's messages")
        assert {tp.topic for tp in read_owners(zk, group)} == {first, second}
    reader.join(timeout=30)


def test_a_joining_member_moves_only_its_share_and_callbacks_see_exactly_that(
        cluster, zk, topic_factory, unique_name, members):
    topic = topic_factory(partitions=4)
    produce(cluster, topic, _values(80, "r"), partitions=4)
    group = unique_name("incremental")
    revoked: list[set[TopicPartition]] = []
    assigned: list[set[TopicPartition]] = []
    connector = ConsumerConnector(
        _config(cluster, group, **{"rebalance.backoff.ms": "2000"}),
        on_partitions_revoked=lambda tps: revoked.append(set(tps)),
        on_partitions_assigned=lambda tps: assigned.append(set(tps)))
    try:
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        seen: list[Message] = []
        threading.Thread(target=lambda: seen.extend(stream), daemon=True).start()
        wait_until(lambda: len(seen) >= 80, timeout=60, message="the first 80 messages")
        everything = {TopicPartition(topic, p) for p in range(4)}
        assert assigned == [everything] and revoked == []

        joiner = members(group, topics={topic: 1})
        wait_until(lambda: len(read_owners(zk, group)) == 4 and
                   len(set(read_owners(zk, group).values())) == 2, timeout=60,
                   message="ownership shared by both members")
        # Range over two members: ids sort one before the other, and each takes two partitions.
        kept = set(connector.owned_partitions())
        assert len(kept) == 2 and revoked == [everything - kept]
        produce(cluster, topic, _values(40, "s"), partitions=4)
        wait_until(lambda: len(seen) + len(joiner.values()) >= 120, timeout=60,
                   message="the next 40 messages")
        mine = {m.partition for m in seen if m.value.startswith(b"s-")}
        assert mine == {tp.partition for tp in kept}
    finally:
        connector.shutdown()

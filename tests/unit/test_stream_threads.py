from __future__ import annotations

from zkconsumer.member.stream_threads import deal_to_stream_threads
from zkconsumer.model import TopicPartition


def tps(topic: str, *partitions: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in partitions}


def test_a_topics_partitions_are_spread_over_its_streams_in_ranges():
    threads = deal_to_stream_threads(tps("t", 4, 0, 3, 1, 2), {"t": 2}, "c")
    assert threads == {TopicPartition("t", 0): "c-0", TopicPartition("t", 1): "c-0",
                       TopicPartition("t", 2): "c-0", TopicPartition("t", 3): "c-1",
                       TopicPartition("t", 4): "c-1"}


def test_more_streams_than_partitions_leaves_the_last_streams_idle():
    assert deal_to_stream_threads(tps("t", 7), {"t": 3}, "c") == {TopicPartition("t", 7): "c-0"}


def test_each_topic_has_its_own_streams():
    threads = deal_to_stream_threads(tps("a", 0, 1) | tps("b", 0), {"a": 2, "b": 1}, "c")
    assert threads == {TopicPartition("a", 0): "c-0", TopicPartition("a", 1): "c-1",
                       TopicPartition("b", 0): "c-0"}


def test_a_partition_of_a_topic_without_streams_is_left_out():
    assert deal_to_stream_threads(tps("other", 0) | tps("t", 0), {"t": 1}, "c") == {
        TopicPartition("t", 0): "c-0"}

"""Which of the member's own streams each partition Kafka's group coordinator gave it is
delivered to, decided without any I/O.

On ZooKeeper the group's assignment names consumer threads, so a partition's stream comes with
it. Kafka's consumer protocol assigns partitions to members only: the member then deals each
topic's partitions to that topic's streams itself, in ranges as the range assignor deals them
to threads (`deal_ranges`: the lowest partitions to the first stream, the remainder one each to
the first streams), with the thread ids the ZooKeeper path uses (`<consumer id>-<stream index>`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from zkconsumer.assignment.identity import thread_ids
from zkconsumer.assignment.range_deal import deal_ranges
from zkconsumer.model import TopicPartition


def deal_to_stream_threads(partitions: Collection[TopicPartition],
                           streams_per_topic: Mapping[str, int],
                           consumer_id: str) -> dict[TopicPartition, str]:
    """Partition -> the thread id of the member's stream it is dealt to. A partition of a
    topic the member has no streams for is left out: it was given by a leader that read
    another subscription, and nothing could consume it."""
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in partitions:
        if streams_per_topic.get(tp.topic, 0) > 0:
            by_topic.setdefault(tp.topic, []).append(tp)
    threads = {}
    for topic, tps in by_topic.items():
        ordered = sorted(tps, key=lambda tp: tp.partition)
        for thread, run in deal_ranges(ordered, thread_ids(consumer_id, streams_per_topic[topic])):
            threads.update(dict.fromkeys(run, thread))
    return threads

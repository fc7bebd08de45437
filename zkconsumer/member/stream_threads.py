"""Which of the member's own streams each partition Kafka's group coordinator gave it is
delivered to, decided without any I/O.

On ZooKeeper the group's assignment names consumer threads, so a partition's stream comes with
it. Kafka's consumer protocol assigns partitions to members only: the member then spreads each
topic's partitions over that topic's streams itself, in ranges as the range assignor spreads
them over threads (the lowest partitions to the first stream, the remainder one each to the
first streams), with the thread ids the ZooKeeper path uses (`<consumer id>-<stream index>`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from zkconsumer.model import TopicPartition


def thread_ids(partitions: Collection[TopicPartition], streams_per_topic: Mapping[str, int],
               consumer_id: str) -> dict[TopicPartition, str]:
    """Partition -> thread id. A partition of a topic the member has no streams for is left
    out: it was given by a leader that read another subscription, and nothing could consume
    it."""
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in partitions:
        if streams_per_topic.get(tp.topic, 0) > 0:
            by_topic.setdefault(tp.topic, []).append(tp)
    threads = {}
    for topic, tps in by_topic.items():
        streams = streams_per_topic[topic]
        ordered = sorted(tps, key=lambda tp: tp.partition)
        share, extra = divmod(len(ordered), streams)
        start = 0
        for index in range(streams):
            end = start + share + (1 if index < extra else 0)
            for tp in ordered[start:end]:
                threads[tp] = f"{consumer_id}-{index}"
            start = end
    return threads

"""One row per partition of a group, from numbers read elsewhere (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from zkconsumer.model import TopicPartition


def describe_partitions(partitions: Iterable[TopicPartition],
                        zookeeper: Mapping[TopicPartition, int],
                        kafka: Mapping[TopicPartition, int],
                        log_end: Mapping[TopicPartition, int],
                        owners: Mapping[TopicPartition, str]) -> list[dict]:
    """Lag is counted from the larger committed offset, where a member with dual commit would
    resume; None where the group has no offset or the log end is unknown."""
    rows = []
    for tp in sorted(set(partitions)):
        committed = [o for o in (zookeeper.get(tp), kafka.get(tp)) if o is not None]
        end = log_end.get(tp)
        rows.append({
            "topic": tp.topic, "partition": tp.partition,
            "zookeeper_offset": zookeeper.get(tp), "kafka_offset": kafka.get(tp),
            "log_end_offset": end,
            "lag": None if not committed or end is None else end - max(committed),
            "owner": owners.get(tp),
        })
    return rows


def offsets_differ(zookeeper: Mapping[TopicPartition, int],
                   kafka: Mapping[TopicPartition, int]) -> list[dict]:
    """Every partition where the two storages disagree (including one having none)."""
    return [{"topic": tp.topic, "partition": tp.partition,
             "zookeeper_offset": zookeeper.get(tp), "kafka_offset": kafka.get(tp)}
            for tp in sorted(set(zookeeper) | set(kafka)) if zookeeper.get(tp) != kafka.get(tp)]

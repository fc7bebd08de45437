"""Planning a read on the driver: which partitions, from which offsets to which.

This is the only part of the data source that talks to ZooKeeper; executors get a picklable
`ReadPlan` with the broker addresses in it, so they only ever talk to Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient

from zkconsumer.admin.offset_files import EARLIEST, LATEST
from zkconsumer.assignment import Blacklist, Whitelist
from zkconsumer.errors import ConfigError
from zkconsumer.fetch import (
    KafkaAccess,
    LogOffsets,
    kafka_consumer_settings,
    resolve_kafka_access,
)
from zkconsumer.kafka_client import kafka_client_options
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import open_offset_store
from zkconsumer.spark.options import SOURCE, SourceOptions
from zkconsumer.zk.registry import list_topics, read_brokers, read_topic
from zkconsumer.zk.session import session_for


@dataclass(frozen=True)
class ReadPlan:
    """Everything executors need, and what the group had committed when it was made."""

    group: str
    access: KafkaAccess
    consumer_settings: Mapping[str, Any]   # the consumer's own kafka-python options
    starts: Mapping[TopicPartition, int]
    ends: Mapping[TopicPartition, int]
    committed: Mapping[TopicPartition, int]


def selected_partitions(zk: KazooClient, options: SourceOptions) -> list[TopicPartition]:
    config = options.config
    if config.topics:
        topics = list(config.topics)
        missing = [t for t in topics if read_topic(zk, t) is None]
        if missing:
            raise ConfigError("topics", ",".join(config.topics),
                              f"unknown topic(s): {', '.join(missing)}", SOURCE)
    else:
        topic_filter = Whitelist(config.whitelist) if config.whitelist else \
            Blacklist(config.blacklist)
        topics = [t for t in list_topics(zk)
                  if topic_filter.allows(t, config.exclude_internal_topics)]
    partitions = []
    for topic in topics:
        registered = read_topic(zk, topic)
        if registered is not None:
            partitions.extend(TopicPartition(topic, p) for p in registered.partition_numbers())
    return sorted(partitions)


def kafka_access(zk: KazooClient, options: SourceOptions) -> KafkaAccess:
    config = options.config
    return resolve_kafka_access(read_brokers(zk).values(),
                                config.kafka_client_properties.get("security.protocol",
                                                                   "PLAINTEXT"),
                                config.kafka_api_version, options.bootstrap_servers)


def committed_offsets(zk: KazooClient, options: SourceOptions, access: KafkaAccess,
                      partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    store = open_offset_store(options.config, zk, *access)
    try:
        return store.fetch(partitions)
    finally:
        store.close()


def plan_read(options: SourceOptions) -> ReadPlan:
    with session_for(options.config) as zk:
        partitions = selected_partitions(zk, options)
        access = kafka_access(zk, options)
        committed = committed_offsets(zk, options, access, partitions)
    return plan_from(options, access, partitions, committed)


def plan_from(options: SourceOptions, access: KafkaAccess, partitions: list[TopicPartition],
              committed: Mapping[TopicPartition, int]) -> ReadPlan:
    client_options = kafka_client_options(options.config.kafka_client_properties)
    log = LogOffsets(access.bootstrap_servers, access.api_version, client_options)
    try:
        earliest, latest = log.earliest(partitions), log.latest(partitions)
    finally:
        log.close()
    starts = resolve_starts(options, partitions, committed, earliest, latest)
    ends = resolve_ends(options, partitions, starts, latest)
    settings = kafka_consumer_settings(options.config, access.bootstrap_servers,
                                       access.api_version)
    return ReadPlan(options.config.group_id, access, settings, starts, ends, dict(committed))


def resolve_starts(options: SourceOptions, partitions: list[TopicPartition],
                   committed: Mapping[TopicPartition, int], earliest: Mapping[TopicPartition, int],
                   latest: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """The group's offsets by default; where it has none (or one outside the log, e.g. after
    retention), `auto.offset.reset` decides, as it would for a consumer."""
    reset = earliest if options.config.auto_offset_reset == "smallest" else latest
    spec = options.starting
    starts = {}
    for tp in partitions:
        if spec == "earliest":
            wanted = earliest[tp]
        elif spec == "latest":
            wanted = latest[tp]
        elif spec == "group":
            wanted = committed.get(tp, reset[tp])
        else:
            wanted = spec.get(tp, committed.get(tp, reset[tp]))
            wanted = {EARLIEST: earliest[tp], LATEST: latest[tp]}.get(wanted, wanted)
        starts[tp] = wanted if earliest[tp] <= wanted <= latest[tp] else reset[tp]
    return starts


def resolve_ends(options: SourceOptions, partitions: list[TopicPartition],
                 starts: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]
                 ) -> dict[TopicPartition, int]:
    spec = options.ending
    ends = {}
    for tp in partitions:
        wanted = latest[tp] if spec == "latest" else spec.get(tp, latest[tp])
        if wanted in (LATEST, EARLIEST):
            wanted = latest[tp] if wanted == LATEST else starts[tp]
        ends[tp] = max(starts[tp], min(wanted, latest[tp]))
    return ends


def write_group_offsets(options: SourceOptions, access: KafkaAccess,
                        offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Commit to the group in its own storage (both, with dual commit); only offsets that
    changed are written. Returns what was written."""
    with session_for(options.config) as zk:
        store = open_offset_store(options.config, zk, *access)
        try:
            current = store.fetch(offsets)
            changed = {tp: o for tp, o in offsets.items() if current.get(tp) != o}
            store.commit(changed)
            return changed
        finally:
            store.close()

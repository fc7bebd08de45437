"""Planning a read on the driver: which partitions, from which offsets to which.

This is the only part of the data source that talks to where the group lives (ZooKeeper or
Kafka's group coordinator, `group_homes`); executors get a picklable `ReadPlan` with the
broker addresses in it, so they only ever fetch from Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from zkconsumer.assignment import wildcard_filter
from zkconsumer.errors import ConfigError, ZkConsumerError
from zkconsumer.fetch import KafkaAccess, LogOffsets, kafka_consumer_settings
from zkconsumer.fetch.kafka_client import kafka_client_options
from zkconsumer.kafka.protocol.codec import EARLIEST, LATEST
from zkconsumer.logs import get_logger
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import OffsetStoreError
from zkconsumer.offsets.kafka_store import refused_by_group
from zkconsumer.spark.commit_guard import CommitRefusedError, check_commit
from zkconsumer.spark.group_homes import open_group_home
from zkconsumer.spark.options import SOURCE, SourceOptions
from zkconsumer.topology import TopicView

log = get_logger(__name__)


@dataclass(frozen=True)
class ReadPlan:
    """Everything executors need, and what the group had committed when it was made."""

    group: str
    access: KafkaAccess
    consumer_settings: Mapping[str, Any]   # the consumer's own kafka-python options
    fetch_backend: str                     # and its `fetch.backend`
    starts: Mapping[TopicPartition, int]
    ends: Mapping[TopicPartition, int]
    committed: Mapping[TopicPartition, int]


def selected_partitions(options: SourceOptions) -> list[TopicPartition]:
    """The partitions the options select, from where the group's topics are known (see
    `group_homes`)."""
    home = open_group_home(options)
    try:
        source = home.topic_source()
        try:
            return _partitions_in(source.view(), options)
        finally:
            source.close()
    finally:
        home.close()


def _partitions_in(view: TopicView, options: SourceOptions) -> list[TopicPartition]:
    config = options.config
    if config.topics:
        topics = list(config.topics)
        missing = [t for t in topics if view.partitions(t) is None]
        if missing:
            raise ConfigError("topics", ",".join(config.topics),
                              f"unknown topic(s): {', '.join(missing)}", SOURCE)
    else:
        topic_filter = wildcard_filter(config.whitelist, config.blacklist)
        topics = [t for t in view.all_topics
                  if topic_filter.allows(t, config.exclude_internal_topics)]
    return sorted(TopicPartition(topic, partition) for topic in topics
                  for partition in view.partitions(topic) or ())


class GroupClients:
    """The driver's connections for one group: its home's (a ZooKeeper session, or a client
    for Kafka's group coordinator), the group's offset store and one Kafka client for log
    offsets (opened at the first question), through which topics are read too when they come
    from Kafka metadata.

    A one-off read opens them around one plan; a streaming query keeps them for its whole
    life, so each trigger costs a few requests instead of new sessions and clients. Not
    picklable: readers drop them before Spark ships a reader to executors.
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.home = open_group_home(options)
        with ExitStack() as undo:
            undo.callback(self.home.close)
            self.access = self.home.kafka_access()
            self._log = LogOffsets(self.access.bootstrap_servers, self.access.api_version,
                                   kafka_client_options(options.config.kafka_client_properties))
            undo.callback(self._log.close)
            self._topics = self.home.topic_source(self._log)
            undo.callback(self._topics.close)
            self._store = self.home.offset_store(self.access)
            undo.pop_all()  # all open: close() closes them from here on

    def __enter__(self) -> GroupClients:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def plan(self, strict: bool = True) -> ReadPlan:
        """From the group's committed offsets (or as the options say) to the log ends;
        `strict=False` moves an explicit start that retention deleted instead of failing
        (see `resolve_starts`)."""
        options = self.options
        partitions = _partitions_in(self._topics.view(), options)
        committed = self._store.fetch(partitions)
        earliest, latest = self._log.earliest(partitions), self._log.latest(partitions)
        starts = resolve_starts(options, partitions, committed, earliest, latest, strict)
        ends = resolve_ends(options, partitions, starts, latest)
        settings = kafka_consumer_settings(options.config, self.access.bootstrap_servers,
                                           self.access.api_version)
        return ReadPlan(options.config.group_id, self.access, settings,
                        options.config.fetch_backend, starts, ends, dict(committed))

    def commit(self, offsets: Mapping[TopicPartition, int],
               planned: Mapping[TopicPartition, int] | None = None) -> dict[TopicPartition, int]:
        """Commit to the group in its own storage (both, with dual commit), unless it is live
        (a member owns one of these partitions; on Kafka's group coordinator, it has members)
        or an offset would go back (`check_commit`; with `planned`, also if the group moved
        since then). Only offsets that changed are written. Returns what was written."""
        group = self.options.config.group_id
        # Owners first: a member commits before it releases a partition, so offsets read once
        # it let go include its last commit.
        owners = self.home.live_owners()
        current = self._store.fetch(offsets)
        check_commit(group, offsets, owners, current, planned)
        changed = {tp: o for tp, o in offsets.items() if current.get(tp) != o}
        try:
            self._store.commit(changed)
        except OffsetStoreError as exc:
            if self._store.name == "kafka" and refused_by_group(exc.__cause__):
                # Kafka's group coordinator refused this commit from outside the group, all of
                # it (one request, and Kafka alone): a member joined since it was looked at.
                raise CommitRefusedError(
                    f"Kafka's group coordinator refused the offsets of group {group}: a member "
                    f"joined it meanwhile ({exc}); nothing committed") from None
            raise
        return changed

    def close(self) -> None:
        self._store.close()
        self._topics.close()
        self._log.close()
        self.home.close()


def plan_read(options: SourceOptions) -> ReadPlan:
    with GroupClients(options) as clients:
        return clients.plan()


class DeletedStartError(ZkConsumerError):
    """Records an explicit starting offset names were deleted before the read began."""


def resolve_starts(options: SourceOptions, partitions: list[TopicPartition],
                   committed: Mapping[TopicPartition, int], earliest: Mapping[TopicPartition, int],
                   latest: Mapping[TopicPartition, int], strict: bool = True
                   ) -> dict[TopicPartition, int]:
    """The group's offsets by default; where it has none (or one outside the log, e.g. after
    retention), `auto.offset.reset` decides, as it would for a consumer. An explicit start
    that retention has deleted (e.g. a `GroupRead` planned before a retention run) fails the
    read, or with `failOnDataLoss` false starts at the earliest offset: never where the
    group's reset policy would jump, past records that still exist. `strict=False` (a
    stream's later triggers, whose partitions under way do not start here) leaves such a
    start to `auto.offset.reset`."""
    reset = earliest if options.config.auto_offset_reset == "smallest" else latest
    spec = options.starting
    starts = {}
    for tp in partitions:
        if isinstance(spec, dict):
            wanted = spec.get(tp, committed.get(tp, reset[tp]))
            wanted = {EARLIEST: earliest[tp], LATEST: latest[tp]}.get(wanted, wanted)
            if strict and tp in spec and wanted < earliest[tp]:
                wanted = _deleted_start(options, tp, wanted, earliest[tp])
        elif spec == "earliest":
            wanted = earliest[tp]
        elif spec == "latest":
            wanted = latest[tp]
        else:  # "group"
            wanted = committed.get(tp, reset[tp])
        if not earliest[tp] <= wanted <= latest[tp]:
            log.warning("the group's offset is outside the log; auto.offset.reset decides",
                        partition=str(tp), offset=wanted, log_start=earliest[tp],
                        log_end=latest[tp], reset_to=reset[tp])
            wanted = reset[tp]
        starts[tp] = wanted
    return starts


def _deleted_start(options: SourceOptions, tp: TopicPartition, start: int, log_start: int) -> int:
    lost = f"offsets {start} to {log_start - 1} of {tp} were deleted before this read began"
    if options.fail_on_data_loss:
        raise DeletedStartError(f"{lost}; set failOnDataLoss=false to start at the earliest "
                                "offset")
    log.warning("records deleted before the read began; starting at the earliest offset",
                partition=str(tp), first=start, last=log_start - 1, skipped=log_start - start)
    return log_start


def resolve_ends(options: SourceOptions, partitions: list[TopicPartition],
                 starts: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]
                 ) -> dict[TopicPartition, int]:
    spec = options.ending
    ends = {}
    for tp in partitions:
        wanted = spec.get(tp, latest[tp]) if isinstance(spec, dict) else latest[tp]  # "latest"
        if wanted in (LATEST, EARLIEST):
            wanted = latest[tp] if wanted == LATEST else starts[tp]
        ends[tp] = max(starts[tp], min(wanted, latest[tp]))
    return ends

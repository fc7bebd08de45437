"""The lag exporter's loop: scan every interval on its own thread, serve the last scan.

A scan reads groups from the ZooKeeper cache (no request) and, optionally, those on Kafka's
group coordinator (`kafka_groups`), the topics' partitions, the log ends of every partition any
group has, and, optionally, the offsets groups keep in Kafka; it then judges every partition and
publishes the result in one assignment, so a scrape or a Burrow request never waits for a scan
nor sees half of one. A scan that fails leaves the previous one published and says so in the
log, in `zkconsumer_exporter_scans_total{result="failure"}` and, after three intervals without a
good scan, in `/healthz`.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from zkconsumer.errors import ZkConsumerError, ZnodeDataError
from zkconsumer.exporter.burrow_config import BurrowSetup, Connections
from zkconsumer.exporter.burrow_view import burrow_reply, served_paths
from zkconsumer.exporter.group_story import Changes, status_changes, worst_first
from zkconsumer.exporter.kafka_groups import CoordinatorWatch, merged_states
from zkconsumer.exporter.page_view import PAGE_PATHS, PageData, page_reply
from zkconsumer.exporter.prometheus_view import exposition, group_families
from zkconsumer.fetch.log_offsets import log_ends_of_each_topic
from zkconsumer.lag.history import OffsetHistory
from zkconsumer.lag.report import (
    GroupReport,
    GroupState,
    ScanInputs,
    registered_partitions,
    scan,
    with_offsets,
)
from zkconsumer.lag.status import WindowRules
from zkconsumer.logs import get_logger
from zkconsumer.metrics.http_server import Reply
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.coordinator_groups import CoordinatorGroup
from zkconsumer.offsets.kafka_reader import GroupOffsets, KafkaReadError
from zkconsumer.throttled_log import RetryWarnings
from zkconsumer.topology import TopicView
from zkconsumer.znodes.fence import Fence

log = get_logger(__name__)

# Healthy while the last good scan is at most this many intervals old.
STALE_INTERVALS = 3


class GroupsSource(Protocol):
    def groups(self) -> list[GroupState]: ...


class Reads(Protocol):
    """What a scan asks the brokers (`ClusterReads`)."""

    def topics(self) -> TopicView: ...

    def log_ends(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...

    def kafka_offsets(self, wanted: Mapping[str, Iterable[TopicPartition]]
                      ) -> GroupOffsets: ...

    def every_kafka_offset(self, groups: Iterable[str],
                           every_partition: Iterable[TopicPartition]) -> GroupOffsets: ...

    def coordinator_groups(self, wanted: Callable[[str], bool]
                           ) -> Mapping[str, CoordinatorGroup]: ...


@dataclass(frozen=True)
class ExporterSettings:
    """`kafka_groups`: also the groups on Kafka's group coordinator (which need
    `kafka_offsets`), those whose whole name matches `group_regex` if set."""

    interval_s: float
    rules: WindowRules
    cluster: str = "local"
    kafka_offsets: bool = True
    connections: Connections = field(default_factory=Connections)  # for Burrow's /v3/config
    kafka_groups: bool = False
    group_regex: str | None = None


@dataclass(frozen=True)
class _Published:
    reports: Mapping[str, GroupReport] = field(default_factory=dict)
    metrics: bytes = b""  # the groups' families in the text format
    at: float | None = None  # when the scan ended; None before the first
    fences: Mapping[str, Fence] = field(default_factory=dict)  # of the groups seen
    changes: Changes = field(default_factory=dict)  # each group's status changes seen
    ordered: tuple[GroupReport, ...] = ()  # worst first, for the page
    started: float | None = None  # when the scan started: its observations' time


# Told every good scan's reports and when it ended (the notifier's `scan_done`).
AfterScan = Callable[[list[GroupReport], float], None]
# The cutover fence of each group that has one (`GroupsCache.fences`).
Fences = Callable[[], Mapping[str, Fence]]


class LagExporter:
    def __init__(self, groups: GroupsSource, reads: Reads, settings: ExporterSettings,
                 clock: Callable[[], float] = time.time,
                 after_scan: AfterScan | None = None, fences: Fences | None = None) -> None:
        """`fences`: read at each scan for the page (`page_view`); none without it."""
        self.settings = settings
        self._fences = fences
        self._after_scan = after_scan
        self._groups = groups
        self._reads = reads
        self._clock = clock
        self._history = OffsetHistory(settings.rules)
        self._burrow = BurrowSetup(settings.cluster, settings.interval_s, settings.rules.samples,
                                   settings.kafka_offsets, settings.connections)
        self._published = _Published()
        self._kafka_known: dict[str, Mapping[TopicPartition, int]] = {}
        self._kafka_trouble: tuple[str, ...] = ()
        self._coordinator = (CoordinatorWatch(reads.coordinator_groups, settings.group_regex, log)
                             if settings.kafka_groups and settings.kafka_offsets else None)
        # What stays wrong until someone fixes it is met at every scan, and said once.
        self._warnings = RetryWarnings(log, every_s=math.inf)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.registry = CollectorRegistry()  # the exporter's own metrics
        self._scans = Counter("zkconsumer_exporter_scans", "Scans of every group, by result.",
                              ["result"], registry=self.registry)
        self._scan_seconds = Gauge("zkconsumer_exporter_scan_duration_seconds",
                                   "How long the last scan took.", registry=self.registry)
        self._groups_seen = Gauge("zkconsumer_exporter_groups",
                                  "Groups in the last good scan.", registry=self.registry)

    def reports(self) -> Mapping[str, GroupReport]:
        return self._published.reports

    def metrics_text(self) -> bytes:
        """What a scrape of /metrics answers: the exporter's own metrics as they are now, then
        the last good scan's, written out once when it was published."""
        return generate_latest(self.registry) + self._published.metrics

    def scan_once(self) -> bool:
        """One scan, published if it worked; False (logged and counted) if it did not."""
        started = self._clock()
        try:
            reports = self._scan(started)
            fences = {} if self._fences is None else self._fences()
        except ZkConsumerError as exc:
            return self._failed(started, str(exc))
        except Exception as exc:  # noqa: BLE001 - the loop must outlive any one scan
            return self._failed(started, f"{type(exc).__name__}: {exc}")
        ended = self._clock()
        by_name = {report.group: report for report in reports}
        self._published = _Published(
            by_name, exposition(group_families(reports)), ended,
            {name: fence for name, fence in fences.items() if name in by_name},
            status_changes(self._published.changes, reports, ended),
            tuple(worst_first(by_name)), started)
        self._scans.labels("success").inc()
        self._scan_seconds.set(ended - started)
        self._groups_seen.set(len(reports))
        if self._after_scan is not None:
            try:
                self._after_scan(reports, ended)
            except Exception as exc:  # noqa: BLE001 - the scans go on whatever it does
                log.error("handing a scan to the notifier failed",
                          error=f"{type(exc).__name__}: {exc}")
        return True

    def start(self) -> None:
        """The first scan runs at once, then one every interval until `stop`."""
        self._thread = threading.Thread(target=self._loop, name="zkconsumer-exporter",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def health(self) -> tuple[bool, str]:
        published = self._published
        if published.at is None:
            return False, "no scan has finished yet"
        age = self._clock() - published.at
        limit = STALE_INTERVALS * self.settings.interval_s
        if age > limit:
            return False, f"the last good scan is {age:.0f} s old (more than {limit:g} s)"
        return True, f"{len(published.reports)} groups, last scan {age:.0f} s ago"

    @property
    def paths(self) -> list[str]:
        """What `route` answers, besides /metrics and /healthz: the pages and Burrow's
        paths."""
        return [*PAGE_PATHS, *served_paths(self.settings.cluster)]

    def route(self, path: str, query: str = "") -> Reply | None:
        """The pages (`page_view`) and Burrow's paths, from the last good scan: never waiting
        for one that runs."""
        published = self._published
        page = page_reply(path, query, PageData(
            self.settings.cluster, self.settings.interval_s, self.settings.rules.span_s,
            published.at, published.reports, published.fences, published.changes,
            published.ordered, published.started))
        if page is not None:
            return page
        return burrow_reply(path, self._burrow, published.reports, self.health())

    def _loop(self) -> None:
        while True:
            self.scan_once()
            if self._stop.wait(self.settings.interval_s):
                return

    def _scan(self, now: float) -> list[GroupReport]:
        in_zookeeper = self._groups.groups()
        coordinator = {} if self._coordinator is None else self._coordinator.groups()
        states = merged_states(in_zookeeper, coordinator)
        view = self._reads.topics()
        partitions_of = functools.cache(self._partitions_reader(view))  # groups share topics
        all_topics = list(view.all_topics)
        existing = {state.name: registered_partitions(state, all_topics, partitions_of)
                    for state in states}
        kafka_only = sorted(set(coordinator) - {state.name for state in in_zookeeper})
        # Committed offsets before log ends: read the other way round, a consumer committing
        # between the two reads would show a lag below zero.
        kafka = self._kafka_offsets(
            {name: partitions for name, partitions in existing.items() if name not in kafka_only},
            kafka_only, lambda: [TopicPartition(topic, partition) for topic in all_topics
                                 for partition in partitions_of(topic) or ()])
        if self._coordinator is not None:
            self._coordinator.forget_stopped(kafka)
        for name in kafka_only:  # and every partition it has an offset for, if it exists
            committed = [tp for tp in kafka.get(name, {})
                         if tp.partition in (partitions_of(tp.topic) or ())]
            existing[name] = sorted({*existing[name], *committed})
        layout = {state.name: with_offsets(existing[state.name], state) for state in states}
        log_ends = self._log_ends(sorted({tp for partitions in existing.values()
                                          for tp in partitions}))
        return scan(ScanInputs(states, layout, log_ends, kafka), self._history, now)

    def _partitions_reader(self, view: TopicView) -> Callable[[str], list[int] | None]:
        """The view's partitions of a topic; a topic whose registration does not parse is
        left out (and said once), not allowed to stop every group's scan."""
        def partitions(topic: str) -> list[int] | None:
            try:
                return view.partitions(topic)
            except ZnodeDataError as exc:
                self._warnings.report(("topic", topic), "skipping a topic whose registration "
                                      "does not parse", topic=topic, error=str(exc))
                return None
        return partitions

    def _log_ends(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        ends = log_ends_of_each_topic(self._reads.log_ends, partitions)
        if ends.unread_topics:
            self._warnings.report(("log ends", ends.unread_topics), "no log end for some topics "
                                  "this scan", topics=list(ends.unread_topics[:8]),
                                  count=len(ends.unread_topics), error=ends.error)
        return ends.found

    def _kafka_offsets(self, wanted: Mapping[str, list[TopicPartition]],
                       every_offset_of: list[str],
                       every_partition: Callable[[], list[TopicPartition]]
                       ) -> Mapping[str, Mapping[TopicPartition, int]]:
        """Kafka's offsets of every group: of `wanted`'s partitions, and every offset of the
        groups in `every_offset_of` (those only Kafka knows). A group Kafka cannot answer for
        this scan keeps the offsets last read (falling back to ZooKeeper's older copy would
        look like a rewind, and dropping a Kafka-only group would throw its window away); the
        trouble is said when it starts or changes."""
        if not self.settings.kafka_offsets:
            return {}
        asked = {*wanted, *every_offset_of}
        try:
            answer = self._reads.kafka_offsets(wanted)
            found, failed = dict(answer.found), dict(answer.failed)
            if every_offset_of:
                every = self._reads.every_kafka_offset(every_offset_of, every_partition())
                found.update(every.found)
                failed.update(every.failed)
        except KafkaReadError as exc:
            found, failed = {}, dict.fromkeys(asked, str(exc))
        known = {group: offsets for group, offsets in self._kafka_known.items()
                 if group in asked}
        known.update(found)
        self._kafka_known = known
        trouble = tuple(sorted(failed))
        if trouble and trouble != self._kafka_trouble:
            log.warning("the offsets some groups keep in Kafka could not be read; their last "
                        "ones are used", groups=list(trouble[:8]), count=len(trouble),
                        error=next(iter(failed.values())))
        elif not trouble and self._kafka_trouble:
            log.info("reading the offsets groups keep in Kafka again")
        self._kafka_trouble = trouble
        return known

    def _failed(self, started: float, why: str) -> bool:
        log.warning("scan failed; serving the previous one", error=why)
        self._scans.labels("failure").inc()
        self._scan_seconds.set(self._clock() - started)
        return False

"""A member's metrics: the reference consumer's figures, in a Prometheus registry of its own.

Two kinds of figures, so that consuming a message costs nothing more than before:

- events (rebalances, commits, fetch responses, session expirations) happen a few times a
  second at most; prometheus_client's Counter and Histogram count and time them as they happen;
- everything that moves per message (messages and bytes consumed, lag, owned partitions,
  queued chunks) is read at scrape time, by a collector, from state the member keeps anyway:
  tallies the streams and the fetch loop update once per chunk, the consumed positions the
  committer reads, the high watermarks of the fetcher's last answers.

Every connector has its own `CollectorRegistry`, so several members in one process never clash,
and `snapshot()` gives the same figures as a plain dict for the Python API.
"""

from __future__ import annotations

import threading
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from zkconsumer.model import TopicPartition

PREFIX = "zkconsumer_"
RESULTS = ("success", "failure")
# Rebalances take from milliseconds (one member) to minutes (waiting out a crashed owner).
REBALANCE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class StreamFigures(Protocol):
    """What the collector reads of each stream (`KafkaStream`)."""

    def handed_out(self) -> dict[str, int]: ...

    def queued_chunks(self) -> int: ...


@dataclass(frozen=True)
class MemberSources:
    """Where the figures of a running member are read at scrape time, from any thread."""

    streams: Callable[[], Iterable[StreamFigures]]
    owned: Callable[[], Mapping[TopicPartition, str]]  # partition -> consumer thread id
    positions: Callable[[], Mapping[TopicPartition, int]]  # the offsets consumption resumes at
    high_watermark: Callable[[TopicPartition], int | None]
    queued_bytes: Callable[[], Mapping[str, int]]  # key and value bytes per topic


@dataclass(frozen=True)
class ScrapedFigures:
    """The figures read at one scrape, before they become metric families."""

    messages_consumed: Mapping[str, int]
    bytes_consumed: Mapping[str, int]
    partition_lag: Mapping[TopicPartition, int]
    owned_by_topic: Mapping[str, int]
    queued_chunks: int


NO_FIGURES = ScrapedFigures({}, {}, {}, {}, 0)


def partition_lags(owned: Iterable[TopicPartition], positions: Mapping[TopicPartition, int],
                   high_watermark: Callable[[TopicPartition], int | None]
                   ) -> dict[TopicPartition, int]:
    """High watermark minus consumed position, per owned partition for which both are known
    (no fetch answer yet, or a reset still pending, leaves a partition out). Never negative:
    the two are read at different moments, and the position may be the newer."""
    lags = {}
    for tp in owned:
        mark = high_watermark(tp)
        position = positions.get(tp)
        if mark is not None and position is not None:
            lags[tp] = max(0, mark - position)
    return lags


class HighestSeen:
    """Keeps reported totals from going down. A total read while another thread updates it
    may come out low for a moment (never high: see `KafkaStream.handed_out`), and a counter
    that went down would look like a restart to Prometheus."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # scrapes may run at once
        self._highest: dict[str, int] = {}

    def clamp(self, totals: Mapping[str, int]) -> dict[str, int]:
        with self._lock:
            for key, value in totals.items():
                if value > self._highest.get(key, -1):
                    self._highest[key] = value
            return dict(self._highest)


class _ScrapeTimeCollector:
    """The figures that move per message, read from the member when scraped."""

    def __init__(self) -> None:
        self.sources: MemberSources | None = None  # set once the member is wired
        self._consumed = HighestSeen()

    def describe(self) -> Iterator[Metric]:
        """Lets the registry check names without reading the member."""
        return _families(NO_FIGURES)

    def collect(self) -> Iterator[Metric]:
        return _families(self._read())

    def _read(self) -> ScrapedFigures:
        sources = self.sources
        if sources is None:
            return NO_FIGURES
        streams = list(sources.streams())
        consumed: Tally[str] = Tally()
        for stream in streams:
            consumed.update(stream.handed_out())
        owned = dict(sources.owned())
        return ScrapedFigures(
            messages_consumed=self._consumed.clamp(consumed),
            bytes_consumed=dict(sources.queued_bytes()),
            partition_lag=partition_lags(owned, sources.positions(), sources.high_watermark),
            owned_by_topic=dict(Tally(tp.topic for tp in owned)),
            queued_chunks=sum(stream.queued_chunks() for stream in streams))


def _per_topic_counter(name: str, documentation: str, counts: Mapping[str, int]
                       ) -> CounterMetricFamily:
    family = CounterMetricFamily(PREFIX + name, documentation, labels=["topic"])
    for topic, count in sorted(counts.items()):
        family.add_metric([topic], count)
    return family


def _families(figures: ScrapedFigures) -> Iterator[Metric]:
    yield _per_topic_counter(
        "messages_consumed", "Messages handed out to the consuming code, per topic (the "
        "reference's MessagesPerSec).", figures.messages_consumed)
    yield _per_topic_counter(
        "bytes_consumed", "Key and value bytes fetched into the streams, per topic (the "
        "reference's BytesPerSec).", figures.bytes_consumed)
    lag = GaugeMetricFamily(
        PREFIX + "partition_lag", "High watermark in the last fetch answer minus the consumed "
        "position, per owned partition (ConsumerLag).", labels=["topic", "partition"])
    for tp, value in sorted(figures.partition_lag.items()):
        lag.add_metric([tp.topic, str(tp.partition)], value)
    yield lag
    yield GaugeMetricFamily(PREFIX + "max_lag", "The largest partition lag (MaxLag).",
                            value=max(figures.partition_lag.values(), default=0))
    yield GaugeMetricFamily(PREFIX + "owned_partitions", "Partitions the member owns "
                            "(OwnedPartitionsCount).",
                            value=sum(figures.owned_by_topic.values()))
    by_topic = GaugeMetricFamily(PREFIX + "topic_owned_partitions", "Partitions the member "
                                 "owns, per topic (OwnedPartitionsCount).", labels=["topic"])
    for topic, count in sorted(figures.owned_by_topic.items()):
        by_topic.add_metric([topic], count)
    yield by_topic
    yield GaugeMetricFamily(PREFIX + "fetch_queue_chunks", "Fetched chunks waiting in the "
                            "streams' queues (FetchQueueSize).", value=figures.queued_chunks)


class MemberMetrics:
    """The metrics of one member. The connector calls the `observe_*` hooks and `watch`es
    its parts once wired; `registry` is for an embedder's own server, `snapshot()` for code."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._rebalances = Counter(
            PREFIX + "rebalances", "Rebalances of this member, by result.", ["result"],
            registry=self.registry)
        for result in RESULTS:
            self._rebalances.labels(result)
        self._rebalance_seconds = Histogram(
            PREFIX + "rebalance_duration_seconds", "How long each rebalance took, attempts and "
            "waits for other owners included.", buckets=REBALANCE_BUCKETS,
            registry=self.registry)
        self._commits = Counter(
            PREFIX + "commits", "Offset commits that wrote something, by storage (zookeeper, "
            "kafka; both with dual commit) and result.", ["storage", "result"],
            registry=self.registry)
        self._commit_seconds = Histogram(
            PREFIX + "commit_duration_seconds", "How long each offset commit took, retries "
            "included, by storage.", ["storage"], registry=self.registry)
        self._fetch_requests = Counter(
            PREFIX + "fetch_requests", "Fetch responses read, by broker (host:port).",
            ["broker"], registry=self.registry)
        self._fetch_seconds = Histogram(
            PREFIX + "fetch_duration_seconds", "Time from a fetch request sent to its response "
            "read, by broker (host:port).", ["broker"], registry=self.registry)
        self._fetch_children: dict[str, tuple[Any, Any]] = {}
        self._session_expirations = Counter(
            PREFIX + "zookeeper_session_expirations", "ZooKeeper sessions of this member that "
            "expired.", registry=self.registry)
        self._scraped = _ScrapeTimeCollector()
        self.registry.register(self._scraped)

    def watch(self, sources: MemberSources) -> None:
        self._scraped.sources = sources

    def observe_rebalance(self, succeeded: bool, seconds: float) -> None:
        self._rebalances.labels(_result(succeeded)).inc()
        self._rebalance_seconds.observe(seconds)

    def observe_commit(self, storage: str, succeeded: bool, seconds: float) -> None:
        self._commits.labels(storage, _result(succeeded)).inc()
        self._commit_seconds.labels(storage).observe(seconds)

    def observe_fetch(self, broker: str, seconds: float) -> None:
        """Once per fetch response, on the fetch thread: the labelled children are looked up
        once per broker, not per response."""
        children = self._fetch_children.get(broker)
        if children is None:
            children = (self._fetch_requests.labels(broker), self._fetch_seconds.labels(broker))
            self._fetch_children[broker] = children
        requests, duration = children
        requests.inc()
        duration.observe(seconds)

    def observe_session_expired(self) -> None:
        self._session_expirations.inc()

    def snapshot(self) -> dict[str, Any]:
        """Every figure of `/metrics` as a plain dict keyed by the metric's name without its
        `zkconsumer_` prefix (and a counter's `_total`): a number, or per label value a
        nested dict, with `"topic-partition"` keys for partitions, and `{"count", "sum"}`
        for a histogram."""
        return {family.name.removeprefix(PREFIX): _plain(family)
                for family in self.registry.collect()}


def _result(succeeded: bool) -> str:
    return RESULTS[0] if succeeded else RESULTS[1]


def _plain(family: Metric) -> Any:
    wanted: dict[str, str | None]
    if family.type == "histogram":
        wanted = {family.name + "_count": "count", family.name + "_sum": "sum"}
    elif family.type == "counter":
        wanted = {family.name + "_total": None}
    else:
        wanted = {family.name: None}
    figures: dict[str, Any] = {}
    for sample in family.samples:
        if sample.name not in wanted:
            continue
        labels = sample.labels
        path = [f"{labels['topic']}-{labels['partition']}"] \
            if set(labels) == {"topic", "partition"} else list(labels.values())
        leaf = wanted[sample.name]
        value = sample.value if leaf == "sum" else int(sample.value)
        if not path and leaf is None:
            return value
        *parents, last = [*path, leaf] if leaf else path
        node = figures
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return figures

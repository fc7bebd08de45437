"""A member's metrics: the reference consumer's figures, in a Prometheus registry of its own.

Two kinds of figures, so that consuming a message costs nothing more than before:

- events (rebalances, commits, fetch responses, session expirations) happen a few times a
  second at most; they are counted and timed as they happen, in plain tallies that become
  counter and histogram families when scraped;
- everything that moves per message (messages and bytes consumed, lag, owned partitions,
  queued chunks) is read at scrape time, by a collector, from state the member keeps anyway:
  tallies the streams and the fetch loop update once per chunk, the consumed positions the
  committer reads, the high watermarks of the fetcher's last answers.

Every connector has its own `CollectorRegistry`, so several members in one process never clash,
and `snapshot()` gives the same figures as a plain dict for the Python API. The registry (and
prometheus_client with it) is made when first asked for, by a scrape, `snapshot()` or an
embedder: a member's start does not pay for a library it may never use.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from zkconsumer.model import TopicPartition

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import CounterMetricFamily, Metric

PREFIX = "zkconsumer_"
RESULTS = ("success", "failure")
# Rebalances take from milliseconds (one member) to minutes (waiting out a crashed owner).
REBALANCE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
# prometheus_client's default buckets, for the other durations.
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
                   10.0)


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
    from prometheus_client.core import CounterMetricFamily

    family = CounterMetricFamily(PREFIX + name, documentation, labels=["topic"])
    for topic, count in sorted(counts.items()):
        family.add_metric([topic], count)
    return family


def _families(figures: ScrapedFigures) -> Iterator[Metric]:
    from prometheus_client.core import GaugeMetricFamily

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


class _Events:
    """One kind of event, counted (and, with `buckets`, timed) per label values. A child exists
    from its first event, or from the start for the values given in `children`."""

    def __init__(self, name: str, documentation: str, labels: tuple[str, ...] = (),
                 buckets: tuple[float, ...] | None = None,
                 children: Iterable[tuple[str, ...]] = ()) -> None:
        self.name = PREFIX + name
        self.documentation = documentation
        self.labels = labels
        self.buckets = buckets
        # label values -> [count, sum, created, per-bucket counts (not cumulative)]
        self.children: dict[tuple[str, ...], list[Any]] = {}
        for values in children or ([()] if not labels else []):
            self.child(values)

    def child(self, values: tuple[str, ...]) -> list[Any]:
        child = self.children.get(values)
        if child is None:
            child = [0, 0.0, time.time(), [0] * (len(self.buckets) + 1) if self.buckets else None]
            self.children[values] = child
        return child

    def happened(self, values: tuple[str, ...], seconds: float | None = None) -> None:
        child = self.child(values)
        child[0] += 1
        if self.buckets is not None and seconds is not None:
            child[1] += seconds
            child[3][bisect.bisect_left(self.buckets, seconds)] += 1

    def family(self) -> Metric:
        """The family as prometheus_client's own Counter or Histogram would show it."""
        from prometheus_client.core import Metric
        from prometheus_client.utils import floatToGoString

        bounds = None if self.buckets is None else [*self.buckets, float("inf")]
        family = Metric(self.name, self.documentation, "counter" if bounds is None else "histogram")
        for values, (count, total, created, in_bucket) in sorted(self.children.items()):
            labels = dict(zip(self.labels, values, strict=True))
            if bounds is not None:
                below = 0
                for bound, number in zip(bounds, in_bucket, strict=True):
                    below += number
                    family.add_sample(self.name + "_bucket",
                                      {**labels, "le": floatToGoString(bound)}, below)
                family.add_sample(self.name + "_count", labels, count)
                family.add_sample(self.name + "_sum", labels, total)
            else:
                family.add_sample(self.name + "_total", labels, count)
            family.add_sample(self.name + "_created", labels, created)
        return family


class _EventsCollector:
    """The events' families, read under the lock they are counted under."""

    def __init__(self, events: Iterable[_Events], lock: threading.Lock) -> None:
        self._events = list(events)
        self._lock = lock

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            families = [events.family() for events in self._events]
        return iter(families)


class MemberMetrics:
    """The metrics of one member. The connector calls the `observe_*` hooks and `watch`es
    its parts once wired; `registry` is for an embedder's own server, `snapshot()` for code."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the coordination and fetch threads count, scrapes read
        self._rebalances = _Events(
            "rebalances", "Rebalances of this member, by result.", ("result",),
            children=[(result,) for result in RESULTS])
        self._rebalance_seconds = _Events(
            "rebalance_duration_seconds", "How long each rebalance took, attempts and "
            "waits for other owners included.", buckets=REBALANCE_BUCKETS)
        self._commits = _Events(
            "commits", "Offset commits that wrote something, by storage (zookeeper, "
            "kafka; both with dual commit) and result.", ("storage", "result"))
        self._commit_seconds = _Events(
            "commit_duration_seconds", "How long each offset commit took, retries "
            "included, by storage.", ("storage",), buckets=DEFAULT_BUCKETS)
        self._fetch_requests = _Events(
            "fetch_requests", "Fetch responses read, by broker (host:port).", ("broker",))
        self._fetch_seconds = _Events(
            "fetch_duration_seconds", "Time from a fetch request sent to its response "
            "read, by broker (host:port).", ("broker",), buckets=DEFAULT_BUCKETS)
        self._session_expirations = _Events(
            "zookeeper_session_expirations", "ZooKeeper sessions of this member that "
            "expired.")
        self._scraped = _ScrapeTimeCollector()
        self._registry: CollectorRegistry | None = None

    @property
    def registry(self) -> CollectorRegistry:
        """The member's own Prometheus registry, made on first use."""
        with self._lock:
            if self._registry is None:
                from prometheus_client import CollectorRegistry

                registry = CollectorRegistry()
                registry.register(_EventsCollector(
                    [self._rebalances, self._rebalance_seconds, self._commits,
                     self._commit_seconds, self._fetch_requests, self._fetch_seconds,
                     self._session_expirations], self._lock))
                registry.register(self._scraped)
                self._registry = registry
            return self._registry

    def watch(self, sources: MemberSources) -> None:
        self._scraped.sources = sources

    def observe_rebalance(self, succeeded: bool, seconds: float) -> None:
        with self._lock:
            self._rebalances.happened((_result(succeeded),))
            self._rebalance_seconds.happened((), seconds)

    def observe_commit(self, storage: str, succeeded: bool, seconds: float) -> None:
        with self._lock:
            self._commits.happened((storage, _result(succeeded)))
            self._commit_seconds.happened((storage,), seconds)

    def observe_fetch(self, broker: str, seconds: float) -> None:
        """Once per fetch response, on the fetch thread."""
        with self._lock:
            self._fetch_requests.happened((broker,))
            self._fetch_seconds.happened((broker,), seconds)

    def observe_session_expired(self) -> None:
        with self._lock:
            self._session_expirations.happened(())

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

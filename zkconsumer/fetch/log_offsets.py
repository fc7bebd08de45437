"""The log's own offsets (first, end, by time), which lag and resets are measured against, and
the topics and partitions there are to measure.

The project's own cluster client (`kafka.io.cluster`) answers them for any number of
partitions in a few requests (ListOffsets to every leader at once, one Metadata for every
topic), whatever group is being looked at; it speaks each broker's versions, so the same code
serves 0.9 to 4.x. Its connections are opened at the first question, with the user's TLS and
SASL settings. A command or service that needs both topics and offsets asks them of the same
client, so it opens one connection per broker, not two; and a reader of groups' offsets on the
same cluster asks over the same connections, taking turns (`cluster_turn`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from zkconsumer.assignment import INTERNAL_TOPICS
from zkconsumer.errors import ZkConsumerError
from zkconsumer.fetch.kafka_client import client_settings
from zkconsumer.kafka.errors import (
    BrokerError,
    FetchError,
    KafkaConnectionError,
    OffsetsNotAnswered,
)
from zkconsumer.kafka.io.cluster import Cluster, cluster_dialer
from zkconsumer.kafka.io.cluster_calls import list_offsets, read_metadata
from zkconsumer.kafka.protocol.codec import EARLIEST, LATEST
from zkconsumer.kafka.protocol.versions import NoCommonVersion
from zkconsumer.model import TopicPartition


class LogOffsetsError(ZkConsumerError):
    """The brokers could not tell a partition's offsets, or which topics there are. After a
    question that ran out of time for some partitions only, `found` holds the offsets of the
    others and `missing` names those."""

    def __init__(self, message: str, found: dict[TopicPartition, int | None] | None = None,
                 missing: tuple[TopicPartition, ...] = ()) -> None:
        super().__init__(message)
        self.found = found or {}
        self.missing = missing


_TOPICS_FAILED_BEFORE_GIVING_UP = 2


@dataclass(frozen=True)
class LogEnds:
    """Log ends of the partitions asked about, but for those of `unread_topics` (`error`: why
    asking for them all at once failed)."""

    found: dict[TopicPartition, int]
    unread_topics: tuple[str, ...] = ()
    error: str | None = None


def log_ends_of_each_topic(latest: Callable[[list[TopicPartition]], dict[TopicPartition, int]],
                           partitions: Iterable[TopicPartition]) -> LogEnds:
    """`latest` (`LogOffsets.latest`) of all partitions in one go; if that fails, topic by
    topic, so that one topic without a leader (being deleted, say) leaves only its own
    partitions without a lag. Unreachable brokers fail every topic, each after a timeout: once
    `_TOPICS_FAILED_BEFORE_GIVING_UP` topics failed and none answered, the first failure is
    raised rather than waiting out one timeout per topic."""
    wanted = list(partitions)
    try:
        return LogEnds(latest(wanted))
    except ZkConsumerError as whole:
        if isinstance(whole, LogOffsetsError) and whole.missing:
            # The leaders answered for all but these, which had the whole timeout to find
            # one: their topics are left unread without waiting it out again topic by topic.
            leaderless = tuple(dict.fromkeys(tp.topic for tp in whole.missing))
            return LogEnds({tp: offset for tp, offset in whole.found.items()
                            if offset is not None and tp.topic not in leaderless}, leaderless,
                           str(whole))
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp in wanted:
            by_topic.setdefault(tp.topic, []).append(tp)
        found: dict[TopicPartition, int] = {}
        unread = []
        for topic, of_topic in by_topic.items():
            try:
                found.update(latest(of_topic))
            except ZkConsumerError:
                unread.append(topic)
                if not found and len(unread) >= min(len(by_topic), _TOPICS_FAILED_BEFORE_GIVING_UP):
                    raise whole from None
        return LogEnds(found, tuple(unread), str(whole))


class LogOffsets:
    """One cluster client, which is not thread-safe, shared by threads that take turns: a
    topic source reads metadata through it on a thread of its own while a scan or a command
    asks for offsets (see `KafkaTopics`)."""

    def __init__(self, bootstrap_servers: str, api_version: tuple[int, ...] | None,
                 client_options: Mapping[str, Any] | None = None,
                 request_timeout_ms: int = 30000) -> None:
        self._client = LazyLog(client_settings(client_options or {}, bootstrap_servers,
                                               api_version,
                                               request_timeout_ms=request_timeout_ms),
                               api_version)
        self.where = bootstrap_servers
        self._timeout_ms = request_timeout_ms
        self._turn = threading.Lock()  # held for a whole question, broker time included
        self._state = threading.Lock()  # guards the two fields below, never held for a broker
        self._asking = False
        self._closed = False

    def topic_partitions(self) -> dict[str, list[int]]:
        """Every topic's partition numbers, sorted, from one fresh Metadata request. Topics
        the brokers flag as internal are left out but for those a group's filter decides on
        (`exclude.internal.topics`): newer brokers' own (transaction and share-group state)
        stay out. A topic still being created has no partitions yet: it does not exist
        until it has."""
        with self._log("cannot read topic metadata from Kafka at {where}: {error}") as log:
            return log.topic_partitions()

    def earliest(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._ask("earliest offsets", EARLIEST, partitions)

    def latest(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._ask("log-end offsets", LATEST, partitions)

    def at_time(self, partitions: Iterable[TopicPartition], epoch_ms: int
                ) -> dict[TopicPartition, int | None]:
        """The first offset at or after the time; None where no message is that recent."""
        wanted = list(partitions)
        if not wanted:
            return {}
        with self._log("looking up offsets by time at {where}: {error}") as log:
            try:
                return log.offsets(wanted, epoch_ms, by_time=True)
            except NoCommonVersion:
                raise LogOffsetsError(
                    f"the brokers at {self.where} cannot look offsets up by time (that needs "
                    "Kafka 0.10.1 or newer); reset to an offset, earliest or latest instead"
                ) from None

    def close(self) -> None:
        """Now, or when the question under way is answered: never waits for a broker."""
        with self._state:
            self._closed = True
            asking = self._asking
        if not asking:
            self._client.close()

    @contextmanager
    def cluster_turn(self) -> Iterator[Cluster]:
        """The cluster client itself, for one question of another reader of the same cluster
        (the groups' offsets: `offsets.kafka_reader.SharedWire`), in turn with this client's
        own; its errors as they are. LogOffsetsError when closed, or when the turn does not
        come within a request timeout."""
        with self._turn_of_client() as log:
            yield log.cluster

    @contextmanager
    def _log(self, failure: str) -> Iterator[Any]:
        """The client, for one question at a time; the client's errors become one
        LogOffsetsError, worded by `failure`."""
        with self._turn_of_client() as log:
            try:
                yield log
            except OffsetsNotAnswered as exc:
                raise LogOffsetsError(failure.format(where=self.where, error=exc), exc.found,
                                      tuple(exc.missing)) from None
            except KafkaConnectionError as exc:
                if exc.out_of_reach:
                    raise LogOffsetsError(exc.line(self.where)) from None
                raise LogOffsetsError(failure.format(where=self.where, error=exc)) from None
            except BrokerError as exc:
                raise LogOffsetsError(failure.format(where=self.where, error=exc)) from None
            except FetchError as exc:  # a refused login: one line naming the broker already
                raise LogOffsetsError(str(exc)) from None

    @contextmanager
    def _turn_of_client(self) -> Iterator[WireLog]:
        """The client, for one question at a time; a `close` that came meanwhile left the
        client to be closed once the question is answered. A question waits for its turn no
        longer than for an answer: one slow broker costs a caller one request timeout more
        at most, never a queue of them."""
        if not self._turn.acquire(timeout=self._timeout_ms / 1000):
            raise LogOffsetsError(f"the Kafka client for {self.where} is still waiting for "
                                  f"an earlier answer after {self._timeout_ms / 1000:g}s")
        try:
            with self._state:
                if self._closed:
                    raise LogOffsetsError(f"the Kafka client for {self.where} is closed")
                self._asking = True
            try:
                yield self._client.get()
            finally:
                with self._state:
                    self._asking = False
                    closing = self._closed
                if closing:
                    self._client.close()
        finally:
            self._turn.release()

    def _ask(self, what: str, time_ms: int, partitions: Iterable[TopicPartition]
             ) -> dict[TopicPartition, int]:
        wanted = list(partitions)
        if not wanted:
            return {}
        with self._log(f"reading {what} from {{where}}: {{error}}") as log:
            answer = log.offsets(wanted, time_ms)
        return {tp: offset for tp, offset in answer.items() if offset is not None}


class WireLog:
    """Topics and log offsets, asked over one `Cluster`."""

    def __init__(self, cluster: Cluster, timeout_s: float) -> None:
        self.cluster = cluster
        self._timeout_s = timeout_s

    def topic_partitions(self) -> dict[str, list[int]]:
        metadata = read_metadata(self.cluster, None)
        found: dict[str, list[int]] = {}
        for tp in metadata.leaders:
            if tp.topic not in metadata.internal or tp.topic in INTERNAL_TOPICS:
                found.setdefault(tp.topic, []).append(tp.partition)
        return {topic: sorted(numbers) for topic, numbers in found.items()}

    def offsets(self, partitions: list[TopicPartition], time_ms: int, *, by_time: bool = False
                ) -> dict[TopicPartition, int | None]:
        return list_offsets(self.cluster, dict.fromkeys(partitions, time_ms),
                            timeout_s=self._timeout_s, needs_timestamps=by_time)

    def close(self) -> None:
        self.cluster.close()


class LazyLog:
    """A `WireLog`, its connections opened at the first question; after `close`, an error
    rather than new connections nobody would close. Not thread-safe by itself."""

    def __init__(self, settings: Mapping[str, Any], api_version: tuple[int, ...] | None) -> None:
        self._settings = dict(settings)
        self._api_version = api_version
        self.where = settings["bootstrap_servers"]
        self._log: WireLog | None = None
        self._closed = False

    def get(self) -> WireLog:
        if self._closed:
            raise LogOffsetsError(f"the Kafka client for {self.where} is closed")
        if self._log is None:
            try:
                dialer = cluster_dialer(self._settings)
            except (OSError, ValueError) as exc:
                raise LogOffsetsError(f"cannot set up TLS for Kafka: {exc}") from None
            self._log = WireLog(Cluster(dialer, self.where, self._api_version),
                                dialer.timeout_s)
        return self._log

    def close(self) -> None:
        self._closed = True
        if self._log is not None:
            self._log.close()
            self._log = None

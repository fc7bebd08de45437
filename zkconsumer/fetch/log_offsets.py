"""The log's own offsets (first, end, by time), which lag and resets are measured against, and
the topics and partitions there are to measure.

One unsubscribed kafka-python client answers them for any number of partitions in a few
requests (ListOffsets per leader, one Metadata for every topic), whatever group is being looked
at; it negotiates the request versions with each broker, so the same code serves 0.10 to 4.x.
It is opened at the first question (see `LazyConsumer`). A command or service that needs both
topics and offsets asks them of the same client, so it opens one connection per broker, not two.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zkconsumer.assignment import INTERNAL_TOPICS
from zkconsumer.errors import ZkConsumerError
from zkconsumer.fetch.kafka_client import LazyConsumer, client_settings
from zkconsumer.model import TopicPartition

if TYPE_CHECKING:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition


class LogOffsetsError(ZkConsumerError):
    """The brokers could not tell a partition's offsets, or which topics there are."""


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
    """One kafka-python consumer, which is not thread-safe, shared by threads that take turns:
    a topic source reads metadata through it on a thread of its own while a scan or a command
    asks for offsets (see `KafkaTopics`)."""

    def __init__(self, bootstrap_servers: str, api_version: tuple[int, ...] | None,
                 client_options: Mapping[str, Any] | None = None,
                 request_timeout_ms: int = 30000) -> None:
        self._client = LazyConsumer(client_settings(client_options or {}, bootstrap_servers,
                                                    api_version,
                                                    request_timeout_ms=request_timeout_ms),
                                    LogOffsetsError)
        self.where = bootstrap_servers
        self._timeout_ms = request_timeout_ms
        self._turn = threading.Lock()  # held for a whole question, broker time included
        self._state = threading.Lock()  # guards the two fields below, never held for a broker
        self._asking = False
        self._closed = False

    def topic_partitions(self) -> dict[str, list[int]]:
        """Every topic's partition numbers, sorted, from one fresh Metadata request.

        kafka-python's `topics()` asks the brokers anew but leaves out the topics they flag as
        internal, whatever `exclude_internal_topics` says (that setting only steers pattern
        subscriptions); `partitions_for_topic` answers from the metadata just read, and asks
        again only for a topic that is not in it. So the internal topics a group's filter
        decides on (`exclude.internal.topics`) are asked for by name, which costs a second
        request only on a cluster without them; newer brokers' own internal topics
        (transaction and share-group state) stay out, as kafka-python lists them. A topic still
        being created has no partitions yet: it does not exist until it has.
        """
        from kafka.errors import KafkaError

        with self._consumer() as consumer:
            try:
                names = consumer.topics() | INTERNAL_TOPICS
                found = {topic: sorted(consumer.partitions_for_topic(topic)) for topic in names}
            except KafkaError as exc:
                raise LogOffsetsError(f"cannot read topic metadata from Kafka at "
                                      f"{self.where}: {exc}") from exc
        return {topic: numbers for topic, numbers in found.items() if numbers}

    def earliest(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._ask("earliest offsets", "beginning_offsets", partitions)

    def latest(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._ask("log-end offsets", "end_offsets", partitions)

    def at_time(self, partitions: Iterable[TopicPartition], epoch_ms: int
                ) -> dict[TopicPartition, int | None]:
        """The first offset at or after the time; None where no message is that recent."""
        from kafka.errors import KafkaError, UnsupportedVersionError

        wanted = list(partitions)
        if not wanted:
            return {}
        with self._consumer() as consumer:
            try:
                found = consumer.offsets_for_times({_to_kafka(tp): epoch_ms for tp in wanted},
                                                   timeout_ms=self._timeout_ms)
            except UnsupportedVersionError:
                raise LogOffsetsError(
                    f"the brokers at {self.where} cannot look offsets up by time (that needs "
                    "Kafka 0.10.1 or newer); reset to an offset, earliest or latest instead"
                ) from None
            except KafkaError as exc:
                raise LogOffsetsError(f"looking up offsets by time at {self.where}: "
                                      f"{exc}") from exc
        return {tp: (None if found.get(_to_kafka(tp)) is None else found[_to_kafka(tp)].offset)
                for tp in wanted}

    def close(self) -> None:
        """Now, or when the question under way is answered: never waits for a broker."""
        with self._state:
            self._closed = True
            asking = self._asking
        if not asking:
            self._client.close()

    @contextmanager
    def _consumer(self) -> Iterator[KafkaConsumer]:
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

    def _ask(self, what: str, method: str, partitions: Iterable[TopicPartition]
             ) -> dict[TopicPartition, int]:
        from kafka.errors import KafkaError

        wanted = [_to_kafka(tp) for tp in partitions]
        if not wanted:
            return {}
        with self._consumer() as consumer:
            try:
                answer = getattr(consumer, method)(wanted, timeout_ms=self._timeout_ms)
            except KafkaError as exc:
                raise LogOffsetsError(f"reading {what} from {self.where}: {exc}") from exc
            except KeyError as exc:
                # kafka-python's offset lookup meets a partition its metadata lost meanwhile
                # (a broker restarting) as a bare KeyError: a transient gap, not a bug of the
                # caller.
                raise LogOffsetsError(f"reading {what} from {self.where}: no leader known for "
                                      f"{exc.args[0] if exc.args else 'a partition'} yet"
                                      ) from exc
        return {TopicPartition(tp.topic, tp.partition): offset for tp, offset in answer.items()}


def _to_kafka(tp: TopicPartition) -> KafkaTopicPartition:
    from kafka import TopicPartition as KafkaTopicPartition

    return KafkaTopicPartition(tp.topic, tp.partition)

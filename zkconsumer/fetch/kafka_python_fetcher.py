"""Fetching the partitions a member owns with kafka-python in manual-assignment mode: the
backend for settings the wire fetcher does not cover (a kafka-python option it does not know),
or when `fetch.backend=kafka-python` forces it.

kafka-python does the hard parts of fetching: it follows leaders as they move, reconnects after
broker restarts, retries the errors Kafka calls retriable and resolves out-of-range offsets by
its reset policy. What it cannot know is where a partition starts: that is the group's committed
offset, read from ZooKeeper or Kafka by the rebalancer and handed to `assign`.

It raises every other partition error from `poll`, UNKNOWN_SERVER_ERROR included, which the
fetchers' rule (`retry_policy`) retries: that one is backed off and fetched again here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.errors import BrokerResponseError, IllegalStateError, KafkaError

from zkconsumer.kafka.errors import FetchError
from zkconsumer.kafka.protocol.retry_policy import error_name, is_retriable
from zkconsumer.logs import get_logger
from zkconsumer.model import Message, TopicPartition
from zkconsumer.records.columns import RecordColumns, records_of
from zkconsumer.throttled_log import RetryWarnings

log = get_logger(__name__)

# kafka-python's poll cannot be woken from another thread, so a poll is made of short slices and
# `wakeup` ends it at the next slice.
_POLL_SLICE_MS = 20


class KafkaPythonFetcher:
    """One kafka-python consumer for all of a member's partitions. Not thread-safe: the fetch
    loop serialises every call."""

    # Metrics' per-broker fetch observer: kafka-python's own requests are out of sight, so it
    # is never called here (the wire fetcher calls it once per fetch response).
    observe_fetch: Callable[[str, float], None] | None = None
    # kafka-python's poll is asked in slices until records come or the timeout: a reset's
    # answer ends none, so the fetch loop hears of it only at the timeout.
    ends_polls_at_answers = False

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self._reset_to_beginning = settings["auto_offset_reset"] == "earliest"
        self._backoff_s = settings["retry_backoff_ms"] / 1000.0
        self._warnings = RetryWarnings(log)
        try:
            self._consumer = KafkaConsumer(**settings)
        except KafkaError as exc:
            raise FetchError(
                f"cannot connect to Kafka at {settings['bootstrap_servers']}: {exc}") from exc
        self._assigned: set[TopicPartition] = set()
        self._woken = threading.Event()

    def assign(self, positions: Mapping[TopicPartition, int | None],
               restart: Collection[TopicPartition] = ()) -> None:
        """Fetch exactly these partitions. Partitions already assigned keep their position, so
        a rebalance does not rewind what stays; new ones, and those in `restart` (released and
        claimed again since the last call), start at the given offset, or by
        `auto.offset.reset` when it is None (no committed offset)."""
        wanted = set(positions)
        new = (wanted - self._assigned) | (set(restart) & wanted)
        self._consumer.assign([_to_kafka(tp) for tp in sorted(wanted)])
        self._assigned = wanted
        reset = []
        for tp in sorted(new):
            offset = positions[tp]
            if offset is None:
                reset.append(_to_kafka(tp))
            else:
                self._consumer.seek(_to_kafka(tp), offset)
        if reset:
            if self._reset_to_beginning:
                self._consumer.seek_to_beginning(*reset)
            else:
                self._consumer.seek_to_end(*reset)

    def poll(self, timeout_ms: int) -> dict[TopicPartition, RecordColumns]:
        if not self._assigned:
            return {}
        deadline = time.monotonic() + timeout_ms / 1000.0
        while True:
            remaining_ms = max(0, round((deadline - time.monotonic()) * 1000))
            try:
                batches = self._consumer.poll(timeout_ms=min(remaining_ms, _POLL_SLICE_MS))
            except BrokerResponseError as exc:
                if not is_retriable(exc.errno):
                    raise
                self._back_off(exc)
                return {}
            if batches or remaining_ms == 0 or self._woken.is_set():
                self._woken.clear()
                return {TopicPartition(tp.topic, tp.partition):
                        records_of([_to_message(r) for r in records], tp.topic, tp.partition)
                        for tp, records in batches.items() if records}

    def _back_off(self, error: BrokerResponseError) -> None:
        """Wait `refresh.leader.backoff.ms` (or a wake-up) before kafka-python fetches the
        partition again. Its error names no partition, so all of them wait, for that long only."""
        self._warnings.report(error.errno, "Kafka error; fetching again after a backoff",
                              error=f"{error.errno} {error_name(error.errno)}",
                              retry_in_ms=round(self._backoff_s * 1000))
        self._woken.wait(self._backoff_s)
        self._woken.clear()

    def position(self, tp: TopicPartition) -> int | None:
        """None while a reset is still under way: asked from the fetch loop, this must not
        wait for a broker."""
        return self._consumer.position(_to_kafka(tp), timeout_ms=0)

    def high_watermark(self, tp: TopicPartition) -> int | None:
        """The partition's high watermark in the last fetch answer; None before one, or once
        it is no longer assigned. Read from other threads (the metrics): the assignment may
        change under it."""
        try:
            return self._consumer.highwater(_to_kafka(tp))
        except (IllegalStateError, KeyError):
            return None

    def wakeup(self) -> None:
        """End the current `poll` at its next slice; safe from any thread."""
        self._woken.set()

    def close(self) -> None:
        self._consumer.close(autocommit=False)


def _to_kafka(tp: TopicPartition) -> KafkaTopicPartition:
    return KafkaTopicPartition(tp.topic, tp.partition)


def _to_message(record) -> Message:
    # Brokers before 0.10 store no timestamps; kafka-python reports those as -1 or None.
    timestamp = record.timestamp if record.timestamp is not None and record.timestamp >= 0 \
        else None
    headers = record.headers  # a list of (str, bytes) pairs, empty before format v2
    return Message(record.topic, record.partition, record.offset, record.key, record.value,
                   timestamp, tuple(headers) if headers else ())

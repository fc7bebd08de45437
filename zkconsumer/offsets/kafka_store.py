"""Offsets in Kafka (`offsets.storage=kafka`), committed as a group with no Kafka-side members.

The group is coordinated in ZooKeeper, so it never joins a Kafka group: OffsetCommit goes out
with generation -1 and an empty member id, which every broker since 0.8.2 accepts as "this
group manages its own partitions". kafka-python does exactly that from a KafkaConsumer that is
never subscribed, which also gives us coordinator discovery and reconnects for free. Offsets are
read as every other reader of Kafka-stored offsets reads them (`kafka_reader`).

The same commit serves a group on Kafka's group coordinator written from outside it (the Spark
source's commit-back): the coordinator takes it only while the group has no members, and
refuses all of it otherwise (kafka-python's CommitFailedError).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import kafka.errors as kafka_errors
from kafka import KafkaConsumer, OffsetAndMetadata
from kafka import TopicPartition as KafkaTopicPartition

from zkconsumer.fetch.brokers import KafkaAccess
from zkconsumer.fetch.first_contact import checked_options
from zkconsumer.fetch.kafka_client import client_settings
from zkconsumer.kafka.errors import FetchError
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.kafka_reader import (
    GroupOffsetsReader,
    is_transient_kafka_error,
    read_committed,
)
from zkconsumer.offsets.retry import RetryPolicy, call_with_retries, describe_error
from zkconsumer.offsets.store import OffsetStoreError, OwnerCheck


class KafkaOffsetStore:
    """Commits through an unsubscribed kafka-python consumer, opened with the store; fetches
    through a `GroupOffsetsReader`, whose client is opened at the first fetch.

    Each call gets `request_timeout_ms`: a commit's within which kafka-python itself re-finds
    a moved coordinator, a fetch's per request, the reader finding coordinators anew after a
    transient failure. What still fails transiently is retried `retries` more times with
    backoff.
    """

    name = "kafka"

    def __init__(self, group: str, bootstrap_servers: str, *,
                 api_version: tuple[int, ...] | None = None, client_id: str = "zkconsumer",
                 retries: int = 5, backoff_ms: int = 1000, request_timeout_ms: int = 10000,
                 client_properties: Mapping[str, Any] | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._group = group
        self._where = f"Kafka at {bootstrap_servers}"
        self._timeout_ms = request_timeout_ms
        self._policy = RetryPolicy(retries, backoff_ms)
        self._sleep = sleep
        # kafka-python's consumer is not safe to share between threads, and the committer and
        # the rebalancer call us from different ones.
        self._lock = threading.Lock()
        options = client_settings(
            client_properties or {}, bootstrap_servers, api_version, group_id=group,
            client_id=client_id, request_timeout_ms=request_timeout_ms,
            # Never used (nothing is fetched), but kafka-python insists it be below the
            # request timeout, which offsets.channel.socket.timeout.ms may set very low.
            fetch_max_wait_ms=min(500, request_timeout_ms - 1))
        try:
            checked = checked_options(options)
            self._consumer = KafkaConsumer(**checked)
        except FetchError as exc:  # a refused login, no broker reachable: named at once
            raise OffsetStoreError(f"cannot open the offsets client of group {group}: "
                                   f"{exc}") from None
        except kafka_errors.KafkaError as exc:
            raise OffsetStoreError(f"cannot open the offsets client of group {group} on "
                                   f"{self._where}: {describe_error(exc)}") from exc
        # The version the first contact found, so that the reader's own need not wait for a
        # 0.9 broker to leave ApiVersions unanswered again.
        self._reader = GroupOffsetsReader(
            KafkaAccess(bootstrap_servers, checked.get("api_version")),
            client_properties or {}, request_timeout_ms, client_id=client_id)

    def fetch(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        wanted = list(dict.fromkeys(partitions))
        if not wanted:
            return {}
        return read_committed(self._reader, self._group, wanted, self._policy,
                              what=f"fetching offsets of group {self._group} from {self._where}",
                              sleep=self._sleep)

    def commit(self, offsets: Mapping[TopicPartition, int], *,
               refresh: Mapping[TopicPartition, int] | None = None, retry: bool = True,
               owners: Mapping[TopicPartition, OwnerCheck] | None = None) -> None:
        """Writes `refresh` too, as the reference re-commits every owned partition at each
        interval: Kafka drops an offset not written for `offsets.retention.minutes` (a day
        before Kafka 2.0), and the next owner of an idle partition would then reset. `owners`
        is for ZooKeeper; Kafka has no way to make a commit conditional on it."""
        wanted = {**(refresh or {}), **offsets}
        if not wanted:
            return
        request = {KafkaTopicPartition(tp.topic, tp.partition): OffsetAndMetadata(offset, "", -1)
                   for tp, offset in wanted.items()}
        self._call(lambda: self._consumer.commit(request, timeout_ms=self._timeout_ms),
                   f"committing offsets of group {self._group} to {self._where}",
                   self._policy if retry else RetryPolicy(0, 0))

    def close(self) -> None:
        with self._lock:
            self._reader.close()
            self._consumer.close(autocommit=False, timeout_ms=self._timeout_ms)

    def _call(self, operation, what: str, policy: RetryPolicy | None = None):
        with self._lock:
            return call_with_retries(operation, what=what, policy=policy or self._policy,
                                     is_transient=is_transient_kafka_error,
                                     handled=(kafka_errors.KafkaError,), sleep=self._sleep)

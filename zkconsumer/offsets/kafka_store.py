"""Offsets in Kafka (`offsets.storage=kafka`), committed as a group with no Kafka-side members.

The group is coordinated in ZooKeeper, so it never joins a Kafka group: OffsetCommit goes out
with generation -1 and an empty member id, which every broker since 0.8.2 accepts as "this
group manages its own partitions". Commits and fetches go through the same reader every other
reader of Kafka-stored offsets uses (`kafka_reader`), over the project's own cluster client:
one connection per broker, the group's coordinator found once and again after it moved.

The same commit serves a group on Kafka's group coordinator written from outside it (the Spark
source's commit-back): the coordinator takes it only while the group has no members, and
refuses all of it otherwise (ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID, a `BrokerError`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from zkconsumer.fetch.brokers import KafkaAccess
from zkconsumer.kafka.errors import BrokerError, FetchError
from zkconsumer.kafka.protocol.retry_policy import COMMIT_REFUSED_BY_GROUP
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.kafka_reader import (
    KAFKA_ERRORS,
    GroupOffsetsReader,
    KafkaReadError,
    is_transient_kafka_error,
    read_committed,
)
from zkconsumer.offsets.retry import RetryPolicy, call_with_retries
from zkconsumer.offsets.store import OffsetStoreError, OwnerCheck


class KafkaOffsetStore:
    """Commits and fetches through a `GroupOffsetsReader`, whose connections are opened at the
    first call.

    Each request gets `request_timeout_ms`; a coordinator that moved is found anew at the next
    attempt. What fails transiently is retried `retries` more times with backoff.
    """

    name = "kafka"

    def __init__(self, group: str, bootstrap_servers: str, *,
                 api_version: tuple[int, ...] | None = None, client_id: str = "zkconsumer",
                 retries: int = 5, backoff_ms: int = 1000, request_timeout_ms: int = 10000,
                 client_properties: Mapping[str, Any] | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._group = group
        self._where = f"Kafka at {bootstrap_servers}"
        self._policy = RetryPolicy(retries, backoff_ms)
        self._sleep = sleep
        self._reader = GroupOffsetsReader(KafkaAccess(bootstrap_servers, api_version),
                                          client_properties or {}, request_timeout_ms,
                                          client_id=client_id)

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
        what = f"committing offsets of group {self._group} to {self._where}"
        try:
            call_with_retries(lambda: self._reader.commit(self._group, wanted), what=what,
                              policy=self._policy if retry else RetryPolicy(0, 0),
                              is_transient=is_transient_kafka_error, handled=KAFKA_ERRORS,
                              sleep=self._sleep)
        except (FetchError, KafkaReadError) as exc:  # a refused login, TLS files unreadable
            raise OffsetStoreError(f"{what} failed: {exc}") from None

    def close(self) -> None:
        self._reader.close()


def refused_by_group(exc: BaseException | None) -> bool:
    """A commit from outside the group (the Spark source's commit-back) refused, all of it,
    because the group has members on Kafka's group coordinator."""
    return isinstance(exc, BrokerError) and exc.code in COMMIT_REFUSED_BY_GROUP

"""Committed offsets in Kafka, read one way for everyone: a member's store at each rebalance,
the admin commands and the lag exporter, for one group or a cluster's worth.

The way is kafka-python's public admin client (`list_group_offsets`): it asks each group's
coordinator with OffsetFetch (v1 on a 0.9 broker, so Kafka's storage and never ZooKeeper's,
which v0 reads), one request per group before Kafka 3.0's batched version, and one client
serves any number of groups over a connection per broker. A consumer would need one client per
group, and its one-request-for-all-partitions call is internal to kafka-python.

Two things the admin client does not do are done here. It gives up on every group at the first
one that fails, so a failed batch is asked again group by group (`failed` names those Kafka
could not answer for). And it never forgets a coordinator it found, so after a coordinator
moved every read would go on asking the broker that no longer is one: after a transient
failure the client is dropped, and the next read opens one that finds coordinators anew.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import kafka.errors as kafka_errors
from kafka import KafkaAdminClient

from zkconsumer.errors import ZkConsumerError, describe_error
from zkconsumer.fetch.brokers import KafkaAccess
from zkconsumer.fetch.first_contact import KafkaUnreachable, checked_options
from zkconsumer.fetch.kafka_client import client_settings
from zkconsumer.kafka.errors import FetchError
from zkconsumer.kafka.io.connect import parse_servers
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.retry import RetryPolicy, call_with_retries
from zkconsumer.offsets.store import OffsetStoreError

GroupPartitions = Mapping[str, Iterable[TopicPartition]]
# What the admin client is asked for: per group, (topic, partition) pairs, or None for every
# partition the group has an offset for, which brokers before 0.10.2 cannot answer.
_Specs = dict[str, list[tuple[str, int]] | None]

# How long the reachability check waits for one bootstrap broker to accept a connection.
_REACH_TIMEOUT_S = 5.0

T = TypeVar("T")


def is_transient_kafka_error(exc: BaseException) -> bool:
    """Coordinator moves and loads, timeouts and lost connections: kafka-python marks these
    retriable. Its timeout error is listed too because kafka-python 2.x did not mark it."""
    return isinstance(exc, kafka_errors.KafkaTimeoutError) or (
        isinstance(exc, kafka_errors.KafkaError) and exc.retriable)


class KafkaReadError(ZkConsumerError):
    """Kafka could not be asked at all: no broker reachable, a login refused."""


@dataclass(frozen=True)
class GroupOffsets:
    found: dict[str, dict[TopicPartition, int]]
    failed: dict[str, str]  # group -> why Kafka could not give its offsets


class GroupOffsetsReader:
    """The committed offsets of any number of groups, through one admin client opened at the
    first read. Reads are serialized, so that dropping the client never pulls it from under
    another read."""

    def __init__(self, access: KafkaAccess, client_options: Mapping[str, Any],
                 request_timeout_ms: int = 30000, *, client_id: str | None = None,
                 connect: Callable[[Mapping[str, Any]], Any] | None = None) -> None:
        self._where = access.bootstrap_servers
        managed: dict[str, Any] = {"request_timeout_ms": request_timeout_ms}
        if client_id is not None:
            managed["client_id"] = client_id
        settings = client_settings(client_options, access.bootstrap_servers, access.api_version,
                                   **managed)
        # The admin client bootstraps in its constructor, for 30 s unless told: a read must
        # not wait longer than any of its requests may.
        settings = {"bootstrap_timeout_ms": request_timeout_ms, **settings}
        self._settings = {key: value for key, value in settings.items()
                          if key in KafkaAdminClient.DEFAULT_CONFIG}
        self._connect = connect or open_admin
        self._names_partitions = False  # the brokers answer only partitions named (0.9)
        self._admin: Any = None
        self._contacted = False  # the first contact's findings are in `_settings`
        self._closed = False
        self._lock = threading.Lock()

    def read_group(self, group: str, partitions: Iterable[TopicPartition]
                   ) -> dict[TopicPartition, int]:
        """One group's offsets, for a caller with its own retries: raises kafka-python's error
        as it is (see `is_transient_kafka_error`), or FetchError when a first contact found
        what no retry changes (a refused login)."""
        specs = _specs({group: partitions})
        if not specs:
            return {}
        with self._lock:
            admin = self._opened()
            try:
                return _offsets(admin.list_group_offsets(specs)).get(group, {})
            except kafka_errors.KafkaError as exc:
                if is_transient_kafka_error(exc):
                    self._drop()
                raise

    def read(self, wanted: GroupPartitions) -> GroupOffsets:
        """Each group's offsets, for the partitions named; a group Kafka cannot answer for is
        left out and named in `failed`, with the reason. KafkaReadError when Kafka cannot be
        asked at all."""
        return self._read(_specs(wanted))

    def read_every(self, groups: Iterable[str], every_partition: Iterable[TopicPartition]
                   ) -> GroupOffsets:
        """Every offset each group has committed, whatever its partitions: asked as such where
        the brokers can answer that (OffsetFetch v2, Kafka 0.10.2 on), else by naming
        `every_partition` (a 0.9 broker's OffsetFetch v1 answers only partitions named)."""
        groups, every_partition = list(dict.fromkeys(groups)), list(every_partition)
        if not groups:
            return GroupOffsets({}, {})
        if self._names_partitions:
            return self.read(dict.fromkeys(groups, every_partition))
        try:
            return self._read(dict.fromkeys(groups))
        except _CannotListAll:
            self._names_partitions = True
            return self.read(dict.fromkeys(groups, every_partition))

    def ask(self, question: Callable[[Any], T]) -> T:
        """`question` put to the admin client, between reads: KafkaReadError when Kafka
        cannot be asked at all; kafka-python's error as it is, the client dropped after a
        transient one (see the module's doc)."""
        with self._lock:
            admin = self._opened_for_read()
            try:
                return question(admin)
            except kafka_errors.KafkaError as exc:
                if is_transient_kafka_error(exc):
                    self._drop()
                raise

    def _read(self, specs: _Specs) -> GroupOffsets:
        if not specs:
            return GroupOffsets({}, {})
        with self._lock:
            admin = self._opened_for_read()
            try:
                return GroupOffsets(_offsets(admin.list_group_offsets(specs)), {})
            except kafka_errors.KafkaError as exc:
                if isinstance(exc, kafka_errors.IncompatibleBrokerVersion) and None in specs.values():
                    raise _CannotListAll() from None
                found, errors = (_each_alone(admin, specs) if len(specs) > 1
                                 else ({}, dict.fromkeys(specs, exc)))
            if any(map(is_transient_kafka_error, errors.values())):
                self._drop()  # the coordinators it remembers may be why (see the module's doc)
            return GroupOffsets(found, {group: describe_error(error)
                                        for group, error in errors.items()})

    def close(self) -> None:
        """For good: a read after it (a scan outliving its service's stop) opens nothing."""
        with self._lock:
            self._closed = True
            self._drop()

    def _opened_for_read(self) -> Any:
        try:
            return self._opened()
        except FetchError as exc:  # ours, and one line naming the brokers already
            raise KafkaReadError(str(exc)) from None
        except kafka_errors.KafkaError as exc:
            raise KafkaReadError(f"cannot reach Kafka at {self._where}: "
                                 f"{describe_error(exc)}") from exc

    def _opened(self) -> Any:
        if self._closed:
            raise KafkaReadError(f"the offsets reader for Kafka at {self._where} is closed")
        if self._admin is None:
            if not self._contacted:
                # Once: a broker slow to answer ApiVersions while in the trouble that made
                # the client be dropped must not get it taken for a 0.9 broker on reopening.
                self._settings = _first_contact(self._settings)
                self._contacted = True
            self._admin = self._connect(self._settings)
        return self._admin

    def forget_coordinators(self) -> None:
        """Drop the client, and with it the coordinators it remembers: the next read opens a
        new one, which asks where each group's coordinator is now."""
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            admin.close()


def read_committed(reader: GroupOffsetsReader, group: str, partitions: Iterable[TopicPartition],
                   policy: RetryPolicy, *, what: str,
                   sleep: Callable[[float], None] = time.sleep) -> dict[TopicPartition, int]:
    """One group's committed offsets with transient failures retried by `policy`: how a
    member's store and the admin commands ask. OffsetStoreError, one line, when that fails;
    at once for a refused login, which no retry changes."""
    try:
        return call_with_retries(lambda: reader.read_group(group, partitions), what=what,
                                 policy=policy, is_transient=is_transient_kafka_error,
                                 handled=(kafka_errors.KafkaError,), sleep=sleep)
    except FetchError as exc:
        raise OffsetStoreError(f"{what} failed: {exc}") from None


def _first_contact(settings: Mapping[str, Any]) -> dict[str, Any]:
    """`checked_options`: nothing it would hide (a refused login), the version of a 0.9
    broker found. Out of reach is a lost connection to kafka-python, transient, however it
    was found."""
    try:
        return checked_options(settings)
    except KafkaUnreachable as exc:
        raise kafka_errors.KafkaConnectionError(str(exc)) from None


def open_admin(settings: Mapping[str, Any],
               admin_class: type[KafkaAdminClient] = KafkaAdminClient) -> KafkaAdminClient:
    """An admin client, once a bootstrap broker accepts connections: kafka-python 3 starts a
    client's I/O thread before bootstrapping and leaves it running when bootstrapping fails,
    so every read of a cluster that cannot be reached would otherwise leave a thread behind."""
    if not (settings.get("proxy_url") or settings.get("socks5_proxy")):
        _check_reachable(settings["bootstrap_servers"], settings["request_timeout_ms"] / 1000)
    return admin_class(**settings)


class _CannotListAll(Exception):
    """The brokers cannot be asked for every offset of a group without naming partitions."""


def _each_alone(admin: Any, specs: _Specs
                ) -> tuple[dict[str, dict[TopicPartition, int]], dict[str, Exception]]:
    found: dict[str, dict[TopicPartition, int]] = {}
    errors: dict[str, Exception] = {}
    for group, partitions in specs.items():
        try:
            found.update(_offsets(admin.list_group_offsets({group: partitions})))
        except kafka_errors.KafkaError as exc:
            errors[group] = exc
    return found, errors


def _check_reachable(bootstrap_servers: str, timeout_s: float) -> None:
    failures = []
    for host, port in parse_servers(bootstrap_servers):
        try:
            socket.create_connection((host, port), min(timeout_s, _REACH_TIMEOUT_S)).close()
            return
        except OSError as exc:
            failures.append(f"{host}:{port}: {describe_error(exc)}")
    raise kafka_errors.KafkaConnectionError(
        f"no bootstrap broker accepts connections ({'; '.join(failures)})")


def _specs(wanted: GroupPartitions) -> _Specs:
    specs = {group: [(tp.topic, tp.partition) for tp in dict.fromkeys(partitions)]
             for group, partitions in wanted.items()}
    return {group: partitions for group, partitions in specs.items() if partitions}


def _offsets(answer: Mapping[str, Mapping[Any, Any]]) -> dict[str, dict[TopicPartition, int]]:
    """kafka-python's answer as ours; an offset below zero is Kafka's "none committed"."""
    return {group: {TopicPartition(tp.topic, tp.partition): committed.offset
                    for tp, committed in offsets.items()
                    if committed is not None and committed.offset >= 0}
            for group, offsets in answer.items()}

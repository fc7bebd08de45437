"""Committed offsets in Kafka, read one way for everyone: a member's store at each rebalance,
the admin commands and the lag exporter, for one group or a cluster's worth.

The way is the project's own cluster client (`kafka.io.cluster_calls`): FindCoordinator for
each group not yet located, then OffsetFetch at each coordinator (v1 on a 0.9 broker, so
Kafka's storage and never ZooKeeper's, which v0 reads), one request per group, pipelined per
coordinator and every coordinator asked at once, over a connection per broker kept between
reads. A group that fails is left out and named in `failed`, the others read. A coordinator
that moved (or whose connection failed) is forgotten and the group asked again once, at its new
coordinator, within the same read: kafka-python's admin client, used before, never forgot one.

Describing groups (`coordinator_groups`) still goes through kafka-python's admin client,
opened by `ask` on first use only.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from zkconsumer.errors import ZkConsumerError, describe_error
from zkconsumer.fetch.brokers import KafkaAccess
from zkconsumer.fetch.first_contact import KafkaUnreachable, checked_options
from zkconsumer.fetch.kafka_client import client_settings
from zkconsumer.kafka.errors import BrokerError, FetchError, KafkaConnectionError
from zkconsumer.kafka.io.cluster import Cluster
from zkconsumer.kafka.io.cluster_calls import (
    Coordinators,
    GroupSpecs,
    commit_offsets,
    fetch_offsets,
)
from zkconsumer.kafka.io.connect import parse_servers
from zkconsumer.kafka.io.opener import Dialer
from zkconsumer.kafka.protocol.versions import NoCommonVersion
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.retry import RetryPolicy, call_with_retries
from zkconsumer.offsets.store import OffsetStoreError

GroupPartitions = Mapping[str, Iterable[TopicPartition]]
# What is asked: per group, its partitions, or None for every partition the group has an
# offset for, which brokers before 0.10.2 cannot answer.
_Specs = dict[str, list[TopicPartition] | None]
# The errors of the cluster client a retry may cure (`is_transient_kafka_error`).
KAFKA_ERRORS = (KafkaConnectionError, BrokerError)

# How long the reachability check waits for one bootstrap broker to accept a connection.
_REACH_TIMEOUT_S = 5.0

T = TypeVar("T")


def is_transient_kafka_error(exc: BaseException) -> bool:
    """Coordinator moves and loads, timeouts and lost connections: the cluster client's
    errors say so (`retriable`), as kafka-python's do, whose timeout error is listed too
    because kafka-python 2.x did not mark it."""
    if isinstance(exc, KAFKA_ERRORS):
        return exc.retriable
    kafka_errors = sys.modules.get("kafka.errors")  # only kafka-python raises its own
    return kafka_errors is not None and (
        isinstance(exc, kafka_errors.KafkaTimeoutError)
        or (isinstance(exc, kafka_errors.KafkaError) and exc.retriable))


class KafkaReadError(ZkConsumerError):
    """Kafka could not be asked at all: no broker reachable, a login refused."""


@dataclass(frozen=True)
class GroupOffsets:
    found: dict[str, dict[TopicPartition, int]]
    failed: dict[str, str]  # group -> why Kafka could not give its offsets


class GroupsWire(Protocol):
    """What the reader and the Kafka offset store ask of the cluster (`WireGroups`)."""

    def fetch(self, specs: GroupSpecs
              ) -> tuple[dict[str, dict[TopicPartition, int]], dict[str, Exception]]: ...

    def commit(self, group: str, offsets: Mapping[TopicPartition, int]) -> None: ...

    def forget_coordinators(self) -> None: ...

    def close(self) -> None: ...


class WireGroups:
    """Groups' offsets over one `Cluster`, their coordinators remembered."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._coordinators = Coordinators(cluster)

    def fetch(self, specs: GroupSpecs
              ) -> tuple[dict[str, dict[TopicPartition, int]], dict[str, Exception]]:
        return fetch_offsets(self._cluster, self._coordinators, specs)

    def commit(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        commit_offsets(self._cluster, self._coordinators, group, offsets)

    def forget_coordinators(self) -> None:
        self._coordinators.forget()

    def close(self) -> None:
        self._cluster.close()


def open_wire(access: KafkaAccess, settings: Mapping[str, Any]) -> WireGroups:
    """KafkaReadError when the TLS files cannot be read. No connection is made yet."""
    try:
        dialer = Dialer.from_settings(settings)
    except (OSError, ValueError) as exc:
        raise KafkaReadError(f"cannot set up TLS for Kafka: {exc}") from None
    return WireGroups(Cluster(dialer, access.bootstrap_servers, access.api_version))


class GroupOffsetsReader:
    """The committed offsets of any number of groups, over connections opened at the first
    read. Reads are serialized: the cluster client is not thread-safe."""

    def __init__(self, access: KafkaAccess, client_options: Mapping[str, Any],
                 request_timeout_ms: int = 30000, *, client_id: str | None = None,
                 connect: Callable[[Mapping[str, Any]], Any] | None = None,
                 wire: Callable[[], GroupsWire] | None = None) -> None:
        """`connect` opens the kafka-python admin client `ask` puts its questions to; `wire`
        the cluster client every read goes through."""
        self._where = access.bootstrap_servers
        managed: dict[str, Any] = {"request_timeout_ms": request_timeout_ms}
        if client_id is not None:
            managed["client_id"] = client_id
        settings = client_settings(client_options, access.bootstrap_servers, access.api_version,
                                   **managed)
        self._open_wire = wire or (lambda: open_wire(access, settings))
        # The admin client bootstraps in its constructor, for 30 s unless told: a question
        # must not wait longer than any of its requests may.
        self._admin_settings = {"bootstrap_timeout_ms": request_timeout_ms, **settings}
        self._connect = connect or open_admin
        self._names_partitions = False  # the brokers answer only partitions named (0.9)
        self._wire: GroupsWire | None = None
        self._admin: Any = None
        self._contacted = False  # the first contact's findings are in `_admin_settings`
        self._closed = False
        self._lock = threading.Lock()

    def read_group(self, group: str, partitions: Iterable[TopicPartition]
                   ) -> dict[TopicPartition, int]:
        """One group's offsets, for a caller with its own retries: raises the cluster
        client's error as it is (see `is_transient_kafka_error`), or FetchError when the login
        is refused, which no retry changes."""
        specs = _specs({group: partitions})
        if not specs:
            return {}
        with self._lock:
            found, errors = self._opened().fetch(specs)
        if group in errors:
            raise errors[group]
        return found.get(group, {})

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
        except NoCommonVersion:
            self._names_partitions = True
            return self.read(dict.fromkeys(groups, every_partition))

    def commit(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit as a group with no Kafka-side members (see `kafka_store`): the cluster
        client's error as it is, for a caller with its own retries."""
        with self._lock:
            self._opened().commit(group, offsets)

    def ask(self, question: Callable[[Any], T]) -> T:
        """`question` put to kafka-python's admin client, between reads: KafkaReadError when
        Kafka cannot be asked at all; kafka-python's error as it is, the client dropped after
        a transient one (it never forgets a coordinator that moved)."""
        from kafka.errors import KafkaError

        with self._lock:
            admin = self._opened_admin()
            try:
                return question(admin)
            except KafkaError as exc:
                if is_transient_kafka_error(exc):
                    self._drop_admin()
                raise

    def _read(self, specs: _Specs) -> GroupOffsets:
        if not specs:
            return GroupOffsets({}, {})
        with self._lock:
            wire = self._opened()
            try:
                found, errors = wire.fetch(specs)
                # The coordinator-moved rule: a group whose coordinator moved or failed has
                # it forgotten; asking once more finds the new one.
                again = {group: specs[group] for group, error in errors.items()
                         if is_transient_kafka_error(error)}
                if again:
                    more, errors_again = wire.fetch(again)
                    found.update(more)
                    errors = {**{g: e for g, e in errors.items() if g not in again},
                              **errors_again}
            except FetchError as exc:  # a refused login, one line naming the broker already
                raise KafkaReadError(str(exc)) from None
            except KafkaConnectionError as exc:
                raise KafkaReadError(f"cannot reach Kafka at {self._where}: "
                                     f"{describe_error(exc)}") from None
        return GroupOffsets(found, {group: describe_error(error)
                                    for group, error in errors.items()})

    def close(self) -> None:
        """For good: a read after it (a scan outliving its service's stop) opens nothing."""
        with self._lock:
            self._closed = True
            wire, self._wire = self._wire, None
            if wire is not None:
                wire.close()
            self._drop_admin()

    def _opened(self) -> GroupsWire:
        if self._closed:
            raise KafkaReadError(f"the offsets reader for Kafka at {self._where} is closed")
        if self._wire is None:
            self._wire = self._open_wire()
        return self._wire

    def _opened_admin(self) -> Any:
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError

        if self._closed:
            raise KafkaReadError(f"the offsets reader for Kafka at {self._where} is closed")
        if self._admin is None:
            try:
                if not self._contacted:
                    # Once: a broker slow to answer ApiVersions while in the trouble that
                    # made the client be dropped must not get it taken for a 0.9 broker on
                    # reopening.
                    self._admin_settings = {
                        key: value for key, value in _first_contact(self._admin_settings).items()
                        if key in KafkaAdminClient.DEFAULT_CONFIG}
                    self._contacted = True
                self._admin = self._connect(self._admin_settings)
            except FetchError as exc:  # ours, and one line naming the brokers already
                raise KafkaReadError(str(exc)) from None
            except (KafkaError, KafkaConnectionError) as exc:
                raise KafkaReadError(f"cannot reach Kafka at {self._where}: "
                                     f"{describe_error(exc)}") from exc
        return self._admin

    def forget_coordinators(self) -> None:
        """Forget the coordinators found (the admin client's with the client itself): the
        next read asks where each group's coordinator is now."""
        with self._lock:
            self._drop_admin()
            if self._wire is not None:
                self._wire.forget_coordinators()

    def _drop_admin(self) -> None:
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
                                 handled=KAFKA_ERRORS, sleep=sleep)
    except FetchError as exc:
        raise OffsetStoreError(f"{what} failed: {exc}") from None


def _first_contact(settings: Mapping[str, Any]) -> dict[str, Any]:
    """`checked_options`: nothing it would hide (a refused login), the version of a 0.9
    broker found. Out of reach is a lost connection, transient, however it was found."""
    try:
        return checked_options(settings)
    except KafkaUnreachable as exc:
        raise KafkaConnectionError(str(exc)) from None


def open_admin(settings: Mapping[str, Any], admin_class: type | None = None) -> Any:
    """An admin client, once a bootstrap broker accepts connections: kafka-python 3 starts a
    client's I/O thread before bootstrapping and leaves it running when bootstrapping fails,
    so every read of a cluster that cannot be reached would otherwise leave a thread behind."""
    if admin_class is None:
        from kafka import KafkaAdminClient

        admin_class = KafkaAdminClient
    if not (settings.get("proxy_url") or settings.get("socks5_proxy")):
        _check_reachable(settings["bootstrap_servers"], settings["request_timeout_ms"] / 1000)
    return admin_class(**settings)


def _check_reachable(bootstrap_servers: str, timeout_s: float) -> None:
    failures = []
    for host, port in parse_servers(bootstrap_servers):
        try:
            socket.create_connection((host, port), min(timeout_s, _REACH_TIMEOUT_S)).close()
            return
        except OSError as exc:
            failures.append(f"{host}:{port}: {describe_error(exc)}")
    raise KafkaConnectionError(
        f"no bootstrap broker accepts connections ({'; '.join(failures)})")


def _specs(wanted: GroupPartitions) -> _Specs:
    specs: _Specs = {group: list(dict.fromkeys(partitions))
                     for group, partitions in wanted.items()}
    return {group: partitions for group, partitions in specs.items() if partitions}

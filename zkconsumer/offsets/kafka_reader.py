"""Committed offsets in Kafka, read one way for everyone: a member's store at each rebalance,
the admin commands and the lag exporter, for one group or a cluster's worth.

The way is the project's own cluster client (`kafka.io.cluster_calls`): FindCoordinator for
each group not yet located, then OffsetFetch at each coordinator (v1 on a 0.9 broker, so
Kafka's storage and never ZooKeeper's, which v0 reads), one request per group, pipelined per
coordinator and every coordinator asked at once, over a connection per broker kept between
reads. A group that fails is left out and named in `failed`, the others read. A coordinator
that moved (or whose connection failed) is forgotten and the group asked again once, at its new
coordinator, within the same read: kafka-python's admin client, used before, never forgot one.

Listing the groups the brokers coordinate and describing them (`coordinator_groups`) go the
same way: ListGroups to every broker at once, DescribeGroups at each group's coordinator.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from zkconsumer.errors import ZkConsumerError, describe_error
from zkconsumer.fetch.brokers import KafkaAccess
from zkconsumer.fetch.kafka_client import client_settings
from zkconsumer.fetch.log_offsets import LogOffsets, LogOffsetsError
from zkconsumer.kafka.errors import BrokerError, FetchError, KafkaConnectionError
from zkconsumer.kafka.io.cluster import Cluster, cluster_dialer
from zkconsumer.kafka.io.cluster_calls import (
    Coordinators,
    GroupSpecs,
    commit_offsets,
    describe_groups,
    fetch_offsets,
    list_groups,
)
from zkconsumer.kafka.protocol.group_codec import DescribedGroupAnswer, ListedGroup
from zkconsumer.kafka.protocol.retry_policy import finds_coordinator_anew
from zkconsumer.kafka.protocol.versions import NoCommonVersion
from zkconsumer.logs import get_logger
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.retry import RetryPolicy, call_with_retries
from zkconsumer.offsets.store import OffsetStoreError

log = get_logger(__name__)

GroupPartitions = Mapping[str, Iterable[TopicPartition]]
# What is asked: per group, its partitions, or None for every partition the group has an
# offset for, which brokers before 0.10.2 cannot answer.
_Specs = dict[str, list[TopicPartition] | None]
# The errors of the cluster client a retry may cure (`is_transient_kafka_error`).
KAFKA_ERRORS = (KafkaConnectionError, BrokerError)

T = TypeVar("T")


def is_transient_kafka_error(exc: BaseException) -> bool:
    """Coordinator moves and loads, timeouts and lost connections: the cluster client's
    errors say so (`retriable`, Kafka's judgement of each error code: `retry_policy`)."""
    return isinstance(exc, KAFKA_ERRORS) and exc.retriable


class KafkaReadError(ZkConsumerError):
    """Kafka could not be asked at all: no broker reachable, a login refused."""


@dataclass(frozen=True)
class GroupOffsets:
    found: dict[str, dict[TopicPartition, int]]
    failed: dict[str, str]  # group -> why Kafka could not give its offsets
    # the failed groups whose failure a retry may cure (`is_transient_kafka_error`): a
    # coordinator still loading the offsets topic of a new cluster, or moving
    retriable: frozenset[str] = frozenset()


def with_retries(read: Callable[[list[str]], GroupOffsets], groups: Iterable[str],
                 policy: RetryPolicy, *, sleep: Callable[[float], None] = time.sleep
                 ) -> GroupOffsets:
    """`read(groups)`, the groups whose failure is retriable asked again after each of the
    policy's pauses, until none is left or the pauses are spent; what still fails stays in
    `failed`."""
    answer = read(list(groups))
    found, failed = dict(answer.found), dict(answer.failed)
    retriable = answer.retriable
    for delay in policy.delays_s():
        if not retriable:
            break
        log.warning("reading groups' Kafka offsets failed, retrying", groups=len(retriable),
                    error=failed[min(retriable)], retry_in_s=delay)
        sleep(delay)
        again = read(sorted(retriable))
        for group in retriable:
            failed.pop(group, None)
        found.update(again.found)
        failed.update(again.failed)
        retriable = again.retriable
    return GroupOffsets(found, failed, retriable)


class GroupsWire(Protocol):
    """What the reader and the Kafka offset store ask of the cluster (`WireGroups`)."""

    def fetch(self, specs: GroupSpecs
              ) -> tuple[dict[str, dict[TopicPartition, int]], dict[str, Exception]]: ...

    def commit(self, group: str, offsets: Mapping[TopicPartition, int]) -> None: ...

    def list_groups(self) -> list[ListedGroup]: ...

    def describe(self, names: Iterable[str]) -> dict[str, DescribedGroupAnswer]: ...

    def close(self) -> None: ...


class WireGroups:
    """Groups' offsets over one `Cluster`, their coordinators remembered."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._coordinators = Coordinators(cluster)

    def fetch(self, specs: GroupSpecs
              ) -> tuple[dict[str, dict[TopicPartition, int]], dict[str, Exception]]:
        return fetch_offsets(self.cluster, self._coordinators, specs)

    def commit(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        commit_offsets(self.cluster, self._coordinators, group, offsets)

    def list_groups(self) -> list[ListedGroup]:
        return list_groups(self.cluster)

    def describe(self, names: Iterable[str]) -> dict[str, DescribedGroupAnswer]:
        return describe_groups(self.cluster, self._coordinators, names)

    def close(self) -> None:
        self.cluster.close()


class SharedWire:
    """Groups' offsets over the connections of a log-offsets client of the same cluster
    (`LogOffsets.cluster_turn`), each question in turn with its own: a command or the exporter
    that reads both log ends and groups' offsets opens one connection per broker, not two.
    Closing it leaves the connections to the log-offsets client."""

    def __init__(self, log_offsets: LogOffsets) -> None:
        self._log_offsets = log_offsets
        self._groups: WireGroups | None = None

    def _asked(self, question: Callable[[WireGroups], T]) -> T:
        try:
            with self._log_offsets.cluster_turn() as cluster:
                if self._groups is None or self._groups.cluster is not cluster:
                    self._groups = WireGroups(cluster)
                return question(self._groups)
        except LogOffsetsError as exc:  # closed, or its turn did not come
            raise KafkaReadError(str(exc)) from None

    def fetch(self, specs: GroupSpecs
              ) -> tuple[dict[str, dict[TopicPartition, int]], dict[str, Exception]]:
        return self._asked(lambda wire: wire.fetch(specs))

    def commit(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        self._asked(lambda wire: wire.commit(group, offsets))

    def list_groups(self) -> list[ListedGroup]:
        return self._asked(lambda wire: wire.list_groups())

    def describe(self, names: Iterable[str]) -> dict[str, DescribedGroupAnswer]:
        return self._asked(lambda wire: wire.describe(names))

    def close(self) -> None:
        self._groups = None


def open_wire(access: KafkaAccess, settings: Mapping[str, Any]) -> WireGroups:
    """KafkaReadError when the TLS files cannot be read. No connection is made yet."""
    try:
        dialer = cluster_dialer(settings)
    except (OSError, ValueError) as exc:
        raise KafkaReadError(f"cannot set up TLS for Kafka: {exc}") from None
    return WireGroups(Cluster(dialer, access.bootstrap_servers, access.api_version))


class GroupOffsetsReader:
    """The committed offsets of any number of groups, over connections opened at the first
    read. Reads are serialized: the cluster client is not thread-safe."""

    def __init__(self, access: KafkaAccess, client_options: Mapping[str, Any],
                 request_timeout_ms: int = 30000, *, client_id: str | None = None,
                 wire: Callable[[], GroupsWire] | None = None) -> None:
        """`wire` opens the cluster client every question goes through: a `SharedWire` over
        a log-offsets client's connections, or a fake's in tests."""
        self._where = access.bootstrap_servers
        managed: dict[str, Any] = {"request_timeout_ms": request_timeout_ms}
        if client_id is not None:
            managed["client_id"] = client_id
        settings = client_settings(client_options, access.bootstrap_servers, access.api_version,
                                   **managed)
        self._open_wire = wire or (lambda: open_wire(access, settings))
        self._names_partitions = False  # the brokers answer only partitions named (0.9)
        self._wire: GroupsWire | None = None
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

    def list_groups(self) -> list[ListedGroup]:
        """Every group every broker coordinates: KafkaReadError when Kafka cannot be asked at
        all; the cluster client's error as it is when a broker cannot answer."""
        return self._asked(lambda wire: wire.list_groups())

    def describe_groups(self, names: Iterable[str]) -> dict[str, DescribedGroupAnswer]:
        """Each group as its coordinator describes it; errors as `list_groups`'."""
        return self._asked(lambda wire: wire.describe(names))

    def _asked(self, question: Callable[[GroupsWire], T]) -> T:
        with self._lock:
            wire = self._opened()
            try:
                return question(wire)
            except FetchError as exc:  # a refused login, one line naming the broker already
                raise KafkaReadError(str(exc)) from None
            except KafkaConnectionError as exc:
                if not exc.out_of_reach:
                    raise
                raise KafkaReadError(exc.line(self._where)) from None

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
                         if finds_coordinator_anew(error)}
                if again:
                    more, errors_again = wire.fetch(again)
                    found.update(more)
                    errors = {**{g: e for g, e in errors.items() if g not in again},
                              **errors_again}
            except FetchError as exc:  # a refused login, one line naming the broker already
                raise KafkaReadError(str(exc)) from None
            except KafkaConnectionError as exc:  # no broker could be asked where the groups are
                raise KafkaReadError(exc.line(self._where)) from None
        return GroupOffsets(found, {group: describe_error(error)
                                    for group, error in errors.items()},
                            frozenset(group for group, error in errors.items()
                                      if is_transient_kafka_error(error)))

    def close(self) -> None:
        """For good: a read after it (a scan outliving its service's stop) opens nothing."""
        with self._lock:
            self._closed = True
            wire, self._wire = self._wire, None
            if wire is not None:
                wire.close()

    def _opened(self) -> GroupsWire:
        if self._closed:
            raise KafkaReadError(f"the offsets reader for Kafka at {self._where} is closed")
        if self._wire is None:
            self._wire = self._open_wire()
        return self._wire


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


def _specs(wanted: GroupPartitions) -> _Specs:
    specs: _Specs = {group: list(dict.fromkeys(partitions))
                     for group, partitions in wanted.items()}
    return {group: partitions for group, partitions in specs.items() if partitions}

"""What every administration operation needs: one ZooKeeper session, the brokers found through
it (or given), and the offset stores the group consumer itself uses.

Looking at groups needs no ZooKeeper when brokers are given: `group list` and `group describe`
then show the groups on Kafka's group coordinator alone (as the exporter does, for KRaft
clusters). Every operation on ZooKeeper's groups says, in one line, that it needs `--zookeeper`.

The operations run under a command line but never print: what they have to say along the way
(progress over many groups, notes on figures they could not get) goes to the `Reporter` the
caller hands in, so the same operations serve a test, a script or the CLI.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from typing import Protocol, TypeVar

from kazoo.client import KazooClient

from zkconsumer.admin.plans import BOTH, STORAGES
from zkconsumer.config import ConsumerConfig, Setting, kafka_only_settings, load_config
from zkconsumer.config.keys import ZOOKEEPER_TLS_KEYS
from zkconsumer.config.loading import env_variable
from zkconsumer.errors import ConfigError, ZkConsumerError, describe_error
from zkconsumer.fetch import KafkaAccess, LogOffsets, resolve_kafka_access
from zkconsumer.fetch.kafka_client import kafka_client_options
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import (
    GroupOffsets,
    GroupOffsetsReader,
    KafkaOffsetStore,
    RetryPolicy,
    ZookeeperOffsetStore,
    read_committed,
)
from zkconsumer.offsets.coordinator_groups import (
    CoordinatorGroup,
    read_coordinator_group,
    read_coordinator_groups,
)
from zkconsumer.offsets.kafka_reader import (
    KAFKA_ERRORS,
    SharedWire,
    is_transient_kafka_error,
    with_retries,
)
from zkconsumer.offsets.retry import call_with_retries
from zkconsumer.topology import KafkaTopics, TopicSource, TopicView, open_topic_source
from zkconsumer.zk.group_state import committed_partitions, group_topics
from zkconsumer.zk.registry import read_brokers
from zkconsumer.zk.session import connect_for

T = TypeVar("T")
ADMIN_ZOOKEEPER_KEYS = ("zookeeper.auth.digest", "zookeeper.sasl.mechanism",
                        "zookeeper.sasl.username", "zookeeper.sasl.password",
                        "zookeeper.acl.world.read", *ZOOKEEPER_TLS_KEYS)
# Groups are independent and each Kafka round trip mostly waits on the network, so operations
# over many groups work on several at once; eight keeps the broker and ZooKeeper comfortable.
GROUP_WORKERS = 8
# Reads of Kafka-stored offsets ride out a coordinator moving or loading as a member's store
# does, with the reference's defaults (offsets.commit.max.retries, offsets.channel.backoff.ms).
KAFKA_READ_RETRIES = RetryPolicy(retries=5, backoff_ms=1000)

Step = Callable[[int], None]


def storages_named(choice: str) -> tuple[str, ...]:
    """`both` is every storage, as a member with dual commit uses them."""
    return STORAGES if choice == BOTH else (choice,)


class Reporter(Protocol):
    """Where an operation's asides go; `note` may be called from the group workers."""

    def note(self, text: str) -> None:
        """A figure the result lacks, and why: the result is still worth having."""

    def progress(self, total: int, label: str) -> AbstractContextManager[Step]:
        """Entered around `total` steps of work; the step callable is told of each one done."""


class Silent:
    """A reporter for callers with no one to tell (tests, scripts): notes are dropped."""

    def note(self, text: str) -> None:
        return None

    def progress(self, total: int, label: str) -> AbstractContextManager[Step]:
        return nullcontext(lambda _steps: None)


class AdminContext:
    """Opened by `admin_context(...)`; closes every client it opened on exit. Safe to use
    from `for_each_group` workers: kazoo is thread-safe, the Kafka readers (offsets, log
    offsets) take one question at a time, and each group writes through a store of its own."""

    def __init__(self, zk: KazooClient | None, bootstrap_override: str | None,
                 api_version: tuple[int, ...] | None, client_options: dict, stack: ExitStack,
                 reporter: Reporter) -> None:
        self._zk = zk
        self.reporter = reporter
        self._bootstrap_override = bootstrap_override
        self._stack = stack
        self._api_version = api_version
        self._client_options = client_options
        self._access: KafkaAccess | None = None
        self._kafka_stores: dict[str, KafkaOffsetStore] = {}
        self._log_offsets: LogOffsets | None = None
        self._topic_source: TopicSource | None = None
        self._topic_view: TopicView | None = None
        self._partitions: dict[str, list[int] | None] = {}  # per topic, as `_topic_view` says
        self._group_offsets: GroupOffsetsReader | None = None
        self._lock = threading.Lock()  # stores are opened from the group workers

    @property
    def has_zookeeper(self) -> bool:
        return self._zk is not None

    @property
    def zk(self) -> KazooClient:
        """The ZooKeeper session; a one-line error for a command run with brokers alone."""
        if self._zk is None:
            raise ZkConsumerError("this needs the groups' ZooKeeper: give --zookeeper")
        return self._zk

    @property
    def topics_from(self) -> str:
        """Where topics are known from, for messages about a topic that is not there."""
        return "Kafka metadata" if self._bootstrap_override else "ZooKeeper (/brokers/topics)"

    @property
    def kafka_access(self) -> KafkaAccess:
        with self._lock:
            if self._access is None:
                if self._bootstrap_override:
                    self._access = KafkaAccess(self._bootstrap_override, self._api_version)
                else:
                    self._access = kafka_access_for(self.zk, self._client_options,
                                                    self._api_version, None)
            return self._access

    def for_each_group(self, groups: list[str], work: Callable[[str], T], label: str
                       ) -> dict[str, T]:
        """`work(group)` for every group, several at a time, each one done reported as progress.
        The first failure is raised once the others have finished."""
        results: dict[str, T] = {}
        with ThreadPoolExecutor(GROUP_WORKERS) as pool, \
                self.reporter.progress(len(groups), label) as step:
            futures = {pool.submit(work, group): group for group in groups}
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                step(1)
        return {group: results[group] for group in groups}

    def store(self, storage: str, group: str) -> ZookeeperOffsetStore | KafkaOffsetStore:
        return ZookeeperOffsetStore(self.zk, group) if storage == "zookeeper" \
            else self.kafka_store(group)

    def kafka_store(self, group: str) -> KafkaOffsetStore:
        access = self.kafka_access
        with self._lock:
            store = self._kafka_stores.get(group)
        if store is None:
            store = KafkaOffsetStore(group, access.bootstrap_servers,
                                     api_version=access.api_version,
                                     client_properties=self._client_options)
            with self._lock:
                self._kafka_stores[group] = store
                self._stack.callback(store.close)
        return store

    def log_offsets(self) -> LogOffsets:
        """The one client for log offsets and, with `--bootstrap-server`, topic metadata."""
        access = self.kafka_access
        with self._lock:
            if self._log_offsets is None:
                self._log_offsets = LogOffsets(access.bootstrap_servers, access.api_version,
                                               self._client_options)
                self._stack.callback(self._log_offsets.close)
            return self._log_offsets

    def read_offsets(self, storage: str, group: str,
                     extra_topics: Iterable[str] = ()) -> dict[TopicPartition, int]:
        """The group's committed offsets in one storage. ZooKeeper lists what it holds; Kafka
        (before 0.10.2) can only be asked about named partitions: those of every topic the group
        has anything for in ZooKeeper, plus `extra_topics`."""
        if storage == "zookeeper":
            return ZookeeperOffsetStore(self.zk, group).fetch(committed_partitions(self.zk, group))
        topics = group_topics(self.zk, group) | set(extra_topics)
        return self.kafka_offsets(group, self.partitions_of(topics))

    def kafka_offsets(self, group: str, partitions: Iterable[TopicPartition]
                      ) -> dict[TopicPartition, int]:
        """The group's Kafka offsets of these partitions, through the one reader every group
        of the command shares (a client per group would be hundreds for `--all`). No client is
        opened to ask about none: kafka-python 3 logs errors when one is closed before it
        finished bootstrapping."""
        wanted = list(partitions)
        if not wanted:
            return {}
        return read_committed(self._offsets_reader(), group, wanted, KAFKA_READ_RETRIES,
                              what=f"reading the Kafka offsets of group {group} from "
                                   f"{self.kafka_access.bootstrap_servers}")

    def kafka_offsets_of_groups(self, wanted: Mapping[str, Iterable[TopicPartition]]
                                ) -> GroupOffsets:
        """Kafka's offsets of many groups, as many at once as the brokers answer for."""
        return self._offsets_reader().read(wanted)

    def every_kafka_offset(self, groups: Iterable[str]) -> GroupOffsets:
        """Every offset these groups committed in Kafka, whatever the partition (a 0.9
        broker is asked about every partition of the cluster, as it answers only those named)."""
        groups = list(groups)
        if not groups:
            return GroupOffsets({}, {})
        every_partition = self.partitions_of(self._view().all_topics)
        reader = self._offsets_reader()
        return with_retries(lambda some: reader.read_every(some, every_partition), groups,
                            KAFKA_READ_RETRIES)

    def coordinator_groups(self) -> dict[str, CoordinatorGroup]:
        """Every consumer group on Kafka's group coordinator, with its members."""
        return self._on_coordinator(read_coordinator_groups)

    def coordinator_group(self, name: str) -> CoordinatorGroup | None:
        """The group as its coordinator describes it; None if the coordinator does not know
        it. A coordinator moving or still loading (the offsets topic of a new cluster) is
        retried as offset reads are; a broker out of reach is not (KafkaReadError at once)."""
        return self._on_coordinator(lambda reader: call_with_retries(
            lambda: read_coordinator_group(reader, name),
            what=f"asking Kafka's group coordinator at {self.kafka_access.bootstrap_servers} "
                 f"about group {name}",
            policy=KAFKA_READ_RETRIES, is_transient=is_transient_kafka_error,
            handled=KAFKA_ERRORS))

    def _on_coordinator(self, read: Callable[[GroupOffsetsReader], T]) -> T:
        """The cluster client's errors as one line, naming the brokers asked."""
        try:
            return read(self._offsets_reader())
        except KAFKA_ERRORS as exc:
            raise ZkConsumerError(f"asking Kafka's group coordinator at "
                                  f"{self.kafka_access.bootstrap_servers} failed: "
                                  f"{describe_error(exc)}") from None

    def _offsets_reader(self) -> GroupOffsetsReader:
        """One reader of groups' offsets and of the coordinator's groups, over the
        connections of the log-offsets client (one connection per broker for both)."""
        access = self.kafka_access
        log_offsets = self.log_offsets()
        with self._lock:
            if self._group_offsets is None:
                self._group_offsets = GroupOffsetsReader(
                    access, self._client_options, wire=lambda: SharedWire(log_offsets))
                self._stack.callback(self._group_offsets.close)
            return self._group_offsets

    def group_partitions(self, group: str, topics: Iterable[str] = ()
                         ) -> tuple[set[str], list[TopicPartition]]:
        """The named topics (default: every topic the group has anything for) and their
        partitions; an error when none of them is registered."""
        chosen = set(topics) or group_topics(self.zk, group)
        partitions = self.partitions_of(chosen)
        if not partitions:
            raise ZkConsumerError(f"no registered topic for group {group} "
                                  f"(asked: {', '.join(sorted(chosen)) or 'none'})")
        return chosen, partitions

    def partitions_of(self, topics: Iterable[str]) -> list[TopicPartition]:
        """Partitions per the topic registry, or Kafka metadata with `--bootstrap-server`
        (read once per command, so every group of it sees the same moment; the topics not read
        yet all at once); topics it does not know are skipped."""
        view = self._view()
        wanted = sorted(set(topics))
        with self._lock:
            unread = [topic for topic in wanted if topic not in self._partitions]
        if unread:
            read = view.partitions_of(unread)
            with self._lock:
                for topic in unread:
                    self._partitions.setdefault(topic, read[topic])
        with self._lock:
            return [TopicPartition(topic, partition) for topic in wanted
                    for partition in self._partitions[topic] or ()]

    def _view(self) -> TopicView:
        client = self.log_offsets() if self._bootstrap_override else None
        with self._lock:
            if self._topic_view is None:
                if self._topic_source is None:
                    self._topic_source = (
                        KafkaTopics(client, owns_client=False)
                        if self._zk is None and client is not None
                        else open_topic_source(self.zk, self._bootstrap_override,
                                               self._api_version, self._client_options,
                                               client=client))
                    self._stack.callback(self._topic_source.close)
                self._topic_view = self._topic_source.view()
            return self._topic_view


@contextmanager
def admin_context(zookeeper_connect: str | None, bootstrap_server: str | None,
                  properties: Iterable[str], reporter: Reporter | None = None
                  ) -> Iterator[AdminContext]:
    """An `AdminContext` on a new ZooKeeper session, or on the brokers alone when no ZooKeeper
    is given (`--property` then takes only `kafka.*` keys); every client is closed
    afterwards."""
    with ExitStack() as stack:
        if zookeeper_connect:
            config = admin_config(zookeeper_connect, properties)
            session = connect_for(config.zookeeper)
            stack.callback(session.close)
            stack.callback(session.stop)
            zk: KazooClient | None = session
            api_version = config.kafka_api_version
            client_options = kafka_client_options(config.kafka_client_properties)
        elif bootstrap_server:
            zk = None
            api_version, kafka_properties = kafka_only_settings(properties)
            client_options = kafka_client_options(kafka_properties)
        else:
            raise ZkConsumerError("give --zookeeper, or --bootstrap-server for the groups on "
                                  "Kafka's group coordinator alone")
        yield AdminContext(zk, bootstrap_server, api_version, client_options, stack,
                           reporter or Silent())


def admin_config(zookeeper_connect: str, properties: Iterable[str],
                 environ: Mapping[str, str] | None = None,
                 connection_timeout_ms: int = 10000) -> ConsumerConfig:
    """`--property` takes the Kafka client's `kafka.*` keys and the ZooKeeper credentials and
    TLS keys (`ADMIN_ZOOKEEPER_KEYS`), which may also come from their variables
    (`ZKCONSUMER_ZOOKEEPER_SSL_KEYSTORE_PASSWORD`, ...); group keys make no sense here."""
    properties = tuple(properties)
    for item in properties:
        key, equals, _value = item.partition("=")
        key = key.strip()
        if not equals or not (key.startswith("kafka.") or key in ADMIN_ZOOKEEPER_KEYS):
            raise ConfigError(key or item, "<hidden>",
                              "expected kafka.<key>=<value> or zookeeper.auth.digest=user:password",
                              "--property")
    environ = os.environ if environ is None else environ
    variables = {name: environ[name] for name in map(env_variable, ADMIN_ZOOKEEPER_KEYS)
                 if name in environ}
    fixed = {"group.id": "zkconsumer-admin", "zookeeper.connect": zookeeper_connect,
             "zookeeper.connection.timeout.ms": str(connection_timeout_ms)}
    return load_config(None, properties, environ=variables,
                       options={key: Setting(value, "--zookeeper") for key, value in fixed.items()})


def kafka_access_for(zk: KazooClient, client_options: dict, api_version: tuple[int, ...] | None,
                     bootstrap_override: str | None) -> KafkaAccess:
    """The brokers to ask: `--bootstrap-server` if given, else the registry in ZooKeeper."""
    return resolve_kafka_access(lambda: read_brokers(zk).values(),
                                client_options.get("security_protocol", "PLAINTEXT"),
                                api_version, bootstrap_override)

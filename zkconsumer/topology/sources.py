"""The two sources of topics and partitions: the ZooKeeper registry, and Kafka metadata.

A rebalance, a `group describe` or a Spark plan takes one `TopicView` and reads everything from
it, so one decision never mixes two moments of the cluster.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from zkconsumer.errors import ZkConsumerError
from zkconsumer.fetch.log_offsets import LogOffsets
from zkconsumer.logs import get_logger
from zkconsumer.throttled_log import RetryWarnings
from zkconsumer.zk.registry import decode_topic, list_topics, read_topics

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = get_logger(__name__)


class TopicMetadataError(ZkConsumerError):
    """Kafka could not be asked which topics and partitions exist."""


class TopicView(Protocol):
    @property
    def all_topics(self) -> Sequence[str]: ...

    def partitions(self, topic: str) -> list[int] | None:
        """The topic's partition numbers, sorted; None for a topic that does not exist."""

    def partitions_of(self, topics: Iterable[str]) -> dict[str, list[int] | None]:
        """`partitions` of each topic, asked together."""


class TopicSource(Protocol):
    watched_in_zookeeper: bool  # False: changes are found by a `MetadataRefresher`

    def view(self, known: Mapping[str, bytes | None] | None = None) -> TopicView:
        """`known`: topics' znode data a watch of them just read (None: no znode), which a view
        of the registry takes instead of reading them again; other sources ignore it."""

    def close(self) -> None: ...


class _RegistryView:
    """Topics listed when first asked for, once; each topic's znode read when first asked
    for, since a group usually cares about a few of many topics. Topics asked for together are
    read together (`partitions_of`), in one pipelined round. A view is the registry as it was
    read: a topic asked for again is not read again (a member keeps its view until a watch says
    the registry changed; a 5,000-partition topic's znode is 50 kB). A group whose members all
    name their topics never lists them: on a cluster of thousands of topics, that listing was
    the biggest answer each member of a deploy asked for."""

    def __init__(self, zk: KazooClient, known: Mapping[str, bytes | None] | None = None
                 ) -> None:
        self._zk = zk
        self._all_topics: list[str] | None = None
        self._read: dict[str, list[int] | None] = {}
        self._known = known or {}  # the caller's copy (the membership's, taken under its lock)

    @property
    def all_topics(self) -> list[str]:
        if self._all_topics is None:
            self._all_topics = list_topics(self._zk)
        return self._all_topics

    def partitions(self, topic: str) -> list[int] | None:
        return self.partitions_of([topic])[topic]

    def partitions_of(self, topics: Iterable[str]) -> dict[str, list[int] | None]:
        topics = list(topics)
        unread = [topic for topic in topics if topic not in self._read]
        if unread:
            found = {topic: decode_topic(topic, self._known[topic])
                     for topic in unread if topic in self._known}
            if len(found) < len(unread):
                found.update(read_topics(self._zk, [topic for topic in unread
                                                    if topic not in found]))
            self._read.update({topic: None if registered is None
                               else registered.partition_numbers()
                               for topic, registered in found.items()})
        return {topic: self._read[topic] for topic in topics}


class ZookeeperTopics:
    """The brokers' registry in the group's ZooKeeper, as the legacy consumer read it."""

    watched_in_zookeeper = True

    def __init__(self, zk: KazooClient) -> None:
        self._zk = zk

    def view(self, known: Mapping[str, bytes | None] | None = None) -> TopicView:
        return _RegistryView(self._zk, known)

    def close(self) -> None:
        return None


class _MetadataView:
    def __init__(self, partitions: Mapping[str, list[int]]) -> None:
        self._partitions = dict(partitions)
        self.all_topics = sorted(self._partitions)

    def partitions(self, topic: str) -> list[int] | None:
        return self._partitions.get(topic)

    def partitions_of(self, topics: Iterable[str]) -> dict[str, list[int] | None]:
        return {topic: self._partitions.get(topic) for topic in topics}


# Once a view was read, a caller waits this long for a fresh answer before it decides from the
# last one. A broker that accepts connections but does not answer would otherwise hold a
# rebalance for a whole request timeout with the member's partitions still claimed, long enough
# for the members waiting on them to give up.
STALE_VIEW_AFTER_S = 3.0


class _Reading:
    """One metadata read on a thread of its own, which callers may stop waiting for."""

    def __init__(self, read: Callable[[], _MetadataView]) -> None:
        self._read = read
        self._done = threading.Event()
        self.view: _MetadataView | None = None
        self.error: Exception | None = None
        threading.Thread(target=self._run, name="zkconsumer-topic-metadata", daemon=True).start()

    def _run(self) -> None:
        try:
            self.view = self._read()
        except Exception as exc:  # handed to every caller waiting for this read
            self.error = exc
        finally:
            self._done.set()

    def wait(self, timeout_s: float | None) -> bool:
        return self._done.wait(timeout_s)


class KafkaTopics:
    """Every topic and its partitions from one Kafka metadata request.

    `__consumer_offsets` is listed too (kafka-python's listing leaves internal topics out, see
    `LogOffsets.topic_partitions`): the group's own `exclude.internal.topics` decides, as it
    does with the registry. While the brokers cannot be reached, kafka-python answers from the
    metadata it last had, and a request that fails or is slower than `stale_after_s` gives the
    last view again with a (throttled) warning, as a registry member keeps its last state while
    a broker is away; the next check that gets through rebalances if anything changed. Only a
    source that never answered fails (after the client's own request timeout). One read at a
    time, on a thread of its own that callers share: safe from any thread. `client` may be
    shared with whoever asks the same brokers for log offsets (it serializes its users, and a
    view waits no longer for its turn than for an answer); its owner closes it.
    """

    watched_in_zookeeper = False

    def __init__(self, client: LogOffsets, stale_after_s: float = STALE_VIEW_AFTER_S,
                 owns_client: bool = True) -> None:
        self.client = client
        self._owns_client = owns_client
        self._stale_after_s = stale_after_s
        self._lock = threading.Lock()  # guards the fields below
        self._last: _MetadataView | None = None
        self._reading: _Reading | None = None
        self._read_under_way = False
        self._closed = False
        self._warnings = RetryWarnings(log)

    def view(self, known: Mapping[str, bytes | None] | None = None) -> TopicView:
        with self._lock:
            if self._closed:
                raise TopicMetadataError(f"the topic source for {self.client.where} is closed")
            if self._reading is None or not self._read_under_way:
                self._read_under_way = True
                self._reading = _Reading(self._read)
            reading, last = self._reading, self._last
        if last is None:
            reading.wait(None)
        elif not reading.wait(self._stale_after_s):
            self._warnings.report("metadata", "topic metadata slow to answer; using the last "
                                  "known", waited_s=self._stale_after_s)
            return last
        if reading.view is not None:
            return reading.view
        exc = reading.error
        if not isinstance(exc, ZkConsumerError):
            raise TopicMetadataError(f"cannot read topic metadata from Kafka at "
                                     f"{self.client.where}: {exc!r}") from exc
        if last is None:
            raise TopicMetadataError(str(exc)) from exc
        self._warnings.report("metadata", "topic metadata unreadable; using the last known",
                              error=str(exc))
        return last

    def _read(self) -> _MetadataView:
        try:
            fresh = _MetadataView(self.client.topic_partitions())
            with self._lock:
                self._last = fresh
            return fresh
        finally:
            with self._lock:
                self._read_under_way = False

    def close(self) -> None:
        """Never waits for a broker: the client closes once a read under way ends."""
        with self._lock:
            self._closed = True
        if self._owns_client:
            self.client.close()


def open_topic_source(zk: KazooClient | None, bootstrap_override: str | None,
                      api_version: tuple[int, ...] | None = None,
                      client_options: Mapping[str, Any] | None = None,
                      request_timeout_ms: int = 30000,
                      client: LogOffsets | None = None) -> TopicSource:
    """Kafka metadata when brokers are given explicitly (they need not be registered in this
    ZooKeeper), the ZooKeeper registry otherwise. A caller that also asks those brokers for
    log offsets passes its `client` for the topics to be read through it too. `zk` is None for
    a caller with brokers and no ZooKeeper (a group on Kafka's group coordinator)."""
    if not bootstrap_override:
        if zk is None:
            raise ValueError("topics are read from ZooKeeper or from brokers given: neither was")
        return ZookeeperTopics(zk)
    if client is not None:
        return KafkaTopics(client, owns_client=False)
    return KafkaTopics(LogOffsets(bootstrap_override, api_version, client_options,
                                  request_timeout_ms))

"""Three clients in one group on Kafka's coordinator: a zkconsumer member
(`group.coordination=kafka`), a kafka-python consumer and a confluent-kafka (librdkafka)
consumer, all with the range assignor; once on the fixture's 0.9 broker, once on Tansu (a
modern, ZooKeeper-less broker whose versions every client negotiates).

They join one after another, then the zkconsumer member leaves cleanly. After each change every
partition has exactly one owner and the split is Java's RangeAssignor over the sorted member
ids, whichever member led the group (on 0.9 the coordinator keeps the first to join, zkconsumer,
as the leader until it leaves). Each stable group consumes a batch of its own: every member gets
exactly its partitions' messages, once, so a partition that changed hands was resumed from its
previous owner's commit (taken before it rejoined, or as it left) and nothing is lost or seen
twice. Skipped where confluent-kafka is not installed (the test extra has it, from its wheel).

Tansu needs nothing of the clients' settings: kafka-python and zkconsumer negotiate their
versions, librdkafka asks ApiVersions. It answers a rebalance's JoinGroups only about half a
session timeout after the rebalance began, the session of the member that formed the group
(zkconsumer's here), even after that member left: 15 s each with a 30 s session, 4 to 5 s with
zkconsumer's 8 s; so the Tansu case takes 23 to 27 s (among the `long` runs), 0.9's about
7 s."""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from support.coordinator_members import PollingMember, PollingThread
from support.kafka import produce
from support.waiting import wait_until

from zkconsumer import ConsumerConnector, ConsumerTimeout

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.integration

PARTITIONS = 7
# A member id is its client id and a suffix, so these order the members.
KAFKA_PYTHON, LIBRDKAFKA, ZKCONSUMER = "a-kafka-python", "b-librdkafka", "c-zkconsumer"
# Java's RangeAssignor over 7 partitions for each group the test forms, members in that order.
ZKCONSUMER_ALONE = {ZKCONSUMER: {0, 1, 2, 3, 4, 5, 6}}
WITH_KAFKA_PYTHON = {KAFKA_PYTHON: {0, 1, 2, 3}, ZKCONSUMER: {4, 5, 6}}
ALL_THREE = {KAFKA_PYTHON: {0, 1, 2}, LIBRDKAFKA: {3, 4}, ZKCONSUMER: {5, 6}}
AFTER_ZKCONSUMER_LEFT = {KAFKA_PYTHON: {0, 1, 2, 3}, LIBRDKAFKA: {4, 5, 6}, ZKCONSUMER: set()}
# The others own zkconsumer's partitions within this many seconds of its stop, which only its
# LeaveGroup can do: its session's end would come later. Tansu's rebalances are what bound it
# from below (see the test's docstring), and what it costs the Tansu case, four times.
ZKCONSUMER_SESSION_S = 8
CONSUMER_TIMEOUT_MS = 1000


@dataclass(frozen=True)
class GroupBroker:
    """A broker whose coordinator the group uses, shaped like the `cluster` fixture for the
    kafka-python helpers: `kafka_api_version` is pinned for kafka-python and zkconsumer, or
    None where they negotiate; `librdkafka_needs_fallback` where the broker predates
    ApiVersions, so librdkafka must be told what it speaks."""

    bootstrap_servers: str
    kafka_api_version: tuple[int, ...] | None
    librdkafka_needs_fallback: bool
    create_topic: Callable[..., str]  # a topic factory fixture: partitions=N


# Tansu's case takes four of its slow rebalances: among the long runs (`scripts/test -m long`).
@pytest.fixture(params=["kafka-0.9", pytest.param("tansu", marks=pytest.mark.long)])
def group_broker(request) -> GroupBroker:
    """The session's 0.9 broker, then Tansu: each starts only for the case that uses it."""
    if request.param == "tansu":
        tansu = request.getfixturevalue("modern_broker")
        return GroupBroker(tansu.bootstrap_servers, None, False,
                           request.getfixturevalue("modern_topic_factory"))
    cluster = request.getfixturevalue("cluster")
    version = cluster.kafka_api_version
    return GroupBroker(cluster.bootstrap_servers, version, version is None or version < (0, 10),
                       request.getfixturevalue("topic_factory"))


class LibrdkafkaMember(PollingThread):
    """A confluent-kafka consumer of one topic with the range assignor, keeping its latest
    assignment and every value it consumed; it commits automatically, and on every revocation,
    as librdkafka does with auto commit."""

    def __init__(self, broker: GroupBroker, group: str, topic: str, client_id: str) -> None:
        super().__init__()
        self._consumer = confluent_kafka.Consumer({
            "bootstrap.servers": broker.bootstrap_servers, "group.id": group,
            "client.id": client_id, "partition.assignment.strategy": "range",
            "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            **({"api.version.request": False, "broker.version.fallback": "0.9.0.1"}
               if broker.librdkafka_needs_fallback else {})})
        self.assigned: set[int] = set()
        self._consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self._start()

    def _on_assign(self, _consumer, partitions) -> None:
        self.assigned = {tp.partition for tp in partitions}

    def _on_revoke(self, _consumer, _partitions) -> None:
        self.assigned = set()

    def _poll(self) -> list[bytes]:
        message = self._consumer.poll(0.1)
        return [message.value()] if message is not None and message.error() is None else []

    def _close_client(self) -> None:
        self._consumer.close()


def _take(stream, count: int) -> list[bytes]:
    """`count` messages, then nothing more for consumer.timeout.ms: coming back for one more
    also marks the last as consumed, so a commit covers it."""
    values = [message.value for message in itertools.islice(stream, count)]
    with pytest.raises(ConsumerTimeout):
        next(stream)
    return values


def test_zkconsumer_kafka_python_and_librdkafka_members_split_a_group_by_range(
        group_broker, unique_name):
    topic = group_broker.create_topic(partitions=PARTITIONS)
    group = unique_name("three-clients")
    consumed: dict[str, list[bytes]] = {ZKCONSUMER: []}  # member -> every value, in order
    produced: list[bytes] = []
    others: dict[str, PollingThread] = {}
    connector = ConsumerConnector({
        "group.id": group, "group.coordination": "kafka",
        "bootstrap.servers": group_broker.bootstrap_servers, "client.id": ZKCONSUMER,
        "auto.offset.reset": "smallest", "consumer.timeout.ms": str(CONSUMER_TIMEOUT_MS),
        "session.timeout.ms": str(ZKCONSUMER_SESSION_S * 1000), "heartbeat.interval.ms": "300",
        **({"kafka.api.version": ".".join(map(str, group_broker.kafka_api_version))}
           if group_broker.kafka_api_version else {})})

    def owned() -> dict[str, set[int]]:
        """Each member's partitions now, as its own client reports them (none, once gone)."""
        now = {name: member.assigned if isinstance(member, LibrdkafkaMember)
               else set(member.rebalances.assigned[-1]) if member.rebalances.assigned else set()
               for name, member in others.items()}
        return {ZKCONSUMER: {tp.partition for tp in connector.owned_partitions()}, **now}

    def consume_a_batch_split(expected: dict[str, set[int]], batch: str, *,
                              settled_within: float = 60) -> None:
        """Wait for the group to settle on `expected`, then produce a batch round-robin and
        check that each member consumed exactly its partitions' messages, once."""
        wait_until(lambda: owned() == expected, timeout=settled_within,
                   message=f"the split {expected} (range over the sorted member ids)")
        already = {name: len(consumed[name]) for name in expected}
        values = [f"{batch}-{i:03d}".encode() for i in range(3 * PARTITIONS)]
        produce(group_broker, topic, values, partitions=PARTITIONS)
        produced.extend(values)
        owed = {name: [v for i, v in enumerate(values) if i % PARTITIONS in partitions]
                for name, partitions in expected.items()}
        if expected[ZKCONSUMER]:
            consumed[ZKCONSUMER].extend(_take(stream, len(owed[ZKCONSUMER])))
        for name in others:
            wait_until(lambda name=name: len(consumed[name]) >= already[name] + len(owed[name]),
                       timeout=30, message=f"{name} to consume its share of {batch}")
        assert {name: sorted(seen[already[name]:]) for name, seen in consumed.items()} == owed
        assert owned() == expected  # no rebalance meanwhile

    try:
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        consume_a_batch_split(ZKCONSUMER_ALONE, "alone")
        others[KAFKA_PYTHON] = PollingMember(group_broker, group, topic, KAFKA_PYTHON,
                                             auto_offset_reset="earliest")
        consumed[KAFKA_PYTHON] = others[KAFKA_PYTHON].values
        consume_a_batch_split(WITH_KAFKA_PYTHON, "two")
        others[LIBRDKAFKA] = LibrdkafkaMember(group_broker, group, topic, LIBRDKAFKA)
        consumed[LIBRDKAFKA] = others[LIBRDKAFKA].values
        consume_a_batch_split(ALL_THREE, "three")

        connector.shutdown()  # commits, then leaves the group
        consume_a_batch_split(AFTER_ZKCONSUMER_LEFT, "after-leave",
                              settled_within=ZKCONSUMER_SESSION_S)
        # Nothing lost, nothing consumed twice, over every change of owner.
        assert collections.Counter(itertools.chain(*consumed.values())) == \
            collections.Counter(produced)
    finally:
        connector.shutdown()
        for member in others.values():
            member.close()

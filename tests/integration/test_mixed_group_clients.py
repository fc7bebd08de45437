"""Three clients in one group on Kafka's coordinator (the fixture's 0.9 broker): a zkconsumer
member (`group.coordination=kafka`), a kafka-python consumer and a confluent-kafka (librdkafka)
consumer, all with the range assignor. The zkconsumer member joins first, so the coordinator
keeps it as the group's leader: the others take the assignment it computes, which is Java's
RangeAssignor over the member ids in order; every partition has one owner, and every message
is consumed once. Skipped where confluent-kafka is not installed (the test extra has it, from
its wheel)."""

from __future__ import annotations

import collections

import pytest
from support.coordinator_members import PollingMember, PollingThread
from support.kafka import produce
from support.waiting import wait_until

from zkconsumer import ConsumerConnector, ConsumerTimeout

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.integration

PARTITIONS = 7
# A member id is its client id and a suffix, so these order the members; Java's RangeAssignor
# over 7 partitions and 3 members: 3, 2, 2 in that order.
KAFKA_PYTHON, LIBRDKAFKA, ZKCONSUMER = "a-kafka-python", "b-librdkafka", "c-zkconsumer"
EXPECTED = {KAFKA_PYTHON: {0, 1, 2}, LIBRDKAFKA: {3, 4}, ZKCONSUMER: {5, 6}}


class LibrdkafkaMember(PollingThread):
    """A confluent-kafka consumer of one topic with the range assignor, keeping its latest
    assignment and every value it consumed."""

    def __init__(self, cluster, group: str, topic: str, client_id: str) -> None:
        super().__init__()
        legacy = cluster.kafka_api_version is None or cluster.kafka_api_version < (0, 10)
        self._consumer = confluent_kafka.Consumer({
            "bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
            "client.id": client_id, "partition.assignment.strategy": "range",
            "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            # 0.9 predates ApiVersions: librdkafka must be told which protocol it speaks.
            **({"api.version.request": False, "broker.version.fallback": "0.9.0.1"}
               if legacy else {})})
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


def test_zkconsumer_kafka_python_and_librdkafka_members_split_a_group_by_range(
        cluster, topic_factory, unique_name):
    topic = topic_factory(partitions=PARTITIONS)
    group = unique_name("three-clients")
    members: list = []
    connector = ConsumerConnector({
        "group.id": group, "group.coordination": "kafka",
        "bootstrap.servers": cluster.bootstrap_servers, "client.id": ZKCONSUMER,
        "auto.offset.reset": "smallest", "consumer.timeout.ms": "1500",
        "session.timeout.ms": "10000", "heartbeat.interval.ms": "300",
        **({"kafka.api.version": ".".join(map(str, cluster.kafka_api_version))}
           if cluster.kafka_api_version else {})})
    try:
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        kafka_python = PollingMember(cluster, group, topic, KAFKA_PYTHON,
                                     auto_offset_reset="earliest")
        librdkafka = LibrdkafkaMember(cluster, group, topic, LIBRDKAFKA)
        members += [kafka_python, librdkafka]

        def owned() -> dict[str, set[int]]:
            last = kafka_python.rebalances.assigned
            return {KAFKA_PYTHON: set(last[-1]) if last else set(),
                    LIBRDKAFKA: librdkafka.assigned,
                    ZKCONSUMER: {tp.partition for tp in connector.owned_partitions()}}

        wait_until(lambda: owned() == EXPECTED, timeout=60,
                   message="the three members to split the partitions by range")
        assert connector.wait_until_stable(timeout=10)

        values = [f"v-{i:03d}".encode() for i in range(10 * PARTITIONS)]
        produce(cluster, topic, values, partitions=PARTITIONS)
        ours = []
        with pytest.raises(ConsumerTimeout):
            ours.extend(message.value for message in stream)
        wait_until(lambda: len(ours) + len(kafka_python.values) + len(librdkafka.values)
                   >= len(values), timeout=30, message="every message to be consumed")
        assert owned() == EXPECTED  # no rebalance meanwhile
        # Each member consumed its own partitions' messages (produced round-robin), once.
        assert [len(ours), len(kafka_python.values), len(librdkafka.values)] == [20, 30, 20]
        assert collections.Counter(ours + kafka_python.values + librdkafka.values) == \
            collections.Counter(values)
    finally:
        connector.shutdown()
        for member in members:
            member.close()

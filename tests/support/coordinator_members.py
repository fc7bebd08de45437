"""Members of groups on Kafka's group coordinator, as a kafka-python application runs them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from kafka import KafkaConsumer, OffsetAndMetadata
from kafka import TopicPartition as KafkaTopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.coordinator.assignors.range import RangePartitionAssignor

from support.waiting import wait_until


@contextmanager
def member_at(bootstrap_servers: str, api_version, group: str, topic: str, offset: int,
              **options) -> Iterator[KafkaConsumer]:
    """A member of `group` on Kafka's coordinator, owning the topic's one partition, that
    committed `offset` and commits nothing more: its lag grows with every message produced."""
    consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=bootstrap_servers,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             **({"api_version": api_version} if api_version else {}), **options)
    try:
        wait_until(lambda: consumer.poll(200) is not None and consumer.assignment(),
                   timeout=60, message="the member's assignment")
        consumer.commit({KafkaTopicPartition(topic, 0): OffsetAndMetadata(offset, "", -1)})
        yield consumer
    finally:
        consumer.close()


class _Recorded(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.assigned: list[frozenset[int]] = []
        self.assigned_at: list[float] = []  # time.monotonic() of each

    def on_partitions_revoked(self, revoked):
        pass

    def on_partitions_assigned(self, assigned):
        self.assigned.append(frozenset(tp.partition for tp in assigned))
        self.assigned_at.append(time.monotonic())


class PollingThread:
    """A client polled on a thread of its own (the only thread touching it) until closed,
    keeping every value it consumed: `_poll` gives the values of one poll, `_close_client`
    closes the client on that thread. A subclass makes its client, then calls `_start`."""

    def __init__(self) -> None:
        self.values: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15)

    def _start(self) -> None:
        self._thread.start()

    def _poll(self) -> list[bytes]:
        raise NotImplementedError

    def _close_client(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.values.extend(self._poll())
        finally:
            self._close_client()


class PollingMember(PollingThread):
    """A kafka-python consumer of one topic with the range assignor (or `assignor`), recording
    each assignment and every value it consumed."""

    def __init__(self, cluster, group: str, topic: str, client_id: str,
                 assignor: type = RangePartitionAssignor, **options) -> None:
        super().__init__()
        self.rebalances = _Recorded()
        self.delivery_times: list[tuple[int, int, float]] = []  # (partition, offset, time.time())
        version = {"api_version": cluster.kafka_api_version} if cluster.kafka_api_version else {}
        self._consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers, group_id=group, client_id=client_id,
            session_timeout_ms=6000, heartbeat_interval_ms=300,
            partition_assignment_strategy=[assignor], **version, **options)
        self._consumer.subscribe([topic], listener=self.rebalances)
        self._start()

    def owns(self, partitions: set[int]) -> bool:
        return bool(self.rebalances.assigned) and self.rebalances.assigned[-1] == partitions

    def _poll(self) -> list[bytes]:
        records = [record for batch in self._consumer.poll(timeout_ms=100).values()
                   for record in batch]
        now = time.time()
        self.delivery_times.extend((record.partition, record.offset, now) for record in records)
        return [record.value for record in records]

    def _close_client(self) -> None:
        self._consumer.close(autocommit=False)

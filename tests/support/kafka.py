"""Producing test data and reading log-end offsets with plain kafka-python, independent of our code."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition


def _version(cluster) -> dict:
    return {"api_version": cluster.kafka_api_version} if cluster.kafka_api_version else {}


def produce(cluster, topic: str, values: list[bytes], partitions: int,
            keys: list[bytes] | None = None, compression: str | None = None) -> None:
    """Send values round-robin over the partitions and wait until all are acknowledged."""
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks=1, linger_ms=5,
                             compression_type=compression, **_version(cluster))
    try:
        futures = [producer.send(topic, value=value, key=keys[i] if keys else None,
                                 partition=i % partitions)
                   for i, value in enumerate(values)]
        producer.flush(timeout=60)
        for future in futures:
            future.get(timeout=60)
    finally:
        producer.close(timeout=10)


def end_offsets(cluster, topic: str, partitions: int) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, **_version(cluster))
    try:
        tps = [KafkaTopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: offset for tp, offset in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def committed_in_kafka(cluster, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                             enable_auto_commit=False, **_version(cluster))
    try:
        return {p: consumer.committed(KafkaTopicPartition(topic, p)) for p in range(partitions)}
    finally:
        consumer.close()


@contextmanager
def steady_producer(cluster, topic: str, partitions: int) -> Iterator[list[bytes]]:
    """Messages round-robin over the partitions every 20 ms until the block ends; yields the
    list of those acknowledged."""
    acknowledged: list[bytes] = []
    stop = threading.Event()
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks=1,
                             **_version(cluster))

    def run() -> None:
        n = 0
        while not stop.wait(0.02):
            value = b"m-%05d" % n
            producer.send(topic, value, partition=n % partitions).get(timeout=30)
            acknowledged.append(value)
            n += 1

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield acknowledged
    finally:
        stop.set()
        thread.join(timeout=30)
        producer.close(timeout=10)


def log_positions(cluster, topic: str, partitions: int, timeout_s: float = 60.0
                  ) -> dict[bytes, tuple[int, int]]:
    """Where each value of the topic sits in its log, (partition, offset), read from the
    beginning to the ends as they are now (the values must be unique)."""
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers,
                             enable_auto_commit=False, **_version(cluster))
    try:
        tps = [KafkaTopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(tps)
        found: dict[bytes, tuple[int, int]] = {}
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise AssertionError(f"topic {topic} not read to its end in {timeout_s:.0f}s")
            for records in consumer.poll(timeout_ms=500).values():
                found.update((r.value, (r.partition, r.offset)) for r in records)
        return found
    finally:
        consumer.close()

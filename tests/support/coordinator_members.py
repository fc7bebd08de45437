"""Members of groups on Kafka's group coordinator, as a kafka-python application runs them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kafka import KafkaConsumer, OffsetAndMetadata
from kafka import TopicPartition as KafkaTopicPartition

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

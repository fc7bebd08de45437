"""Test messages for a topic of the local cluster (or any other): what `zkconsumer cluster
produce` sends, so that a newcomer never needs the bundle's `kafka-console-producer.sh`.

Which messages is decided here, without I/O (`playground_messages`); sending them is kafka-python's
producer, at the edge (`send_messages`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from zkconsumer.errors import ZkConsumerError

Message = tuple[bytes | None, bytes]  # key (None: no key), value


class ProduceError(ZkConsumerError):
    """Messages could not be sent, or lines could not be split into key and value."""


def playground_messages(count: int | None, lines: Iterable[str], key: str | None,
                  key_separator: str | None) -> Iterator[Message]:
    """`count` generated messages (`message 0`, `message 1`, ...), or else one per line (its
    newline removed, empty lines kept out). Each has `key`; or, with `key_separator`, a line's
    key is what comes before the first separator (as the console producer's
    `parse.key=true`), and a line without one is an error naming it."""
    values: Iterable[str] = (f"message {n}" for n in range(count)) if count is not None \
        else (line.rstrip("\r\n") for line in lines)
    for number, text in enumerate(values, 1):
        if count is None and not text:
            continue
        if key_separator is not None:
            line_key, found, value = text.partition(key_separator)
            if not found:
                raise ProduceError(f"line {number} has no key separator {key_separator!r}: "
                                   f"{text[:80]!r}")
            yield line_key.encode(), value.encode()
        else:
            yield (None if key is None else key.encode()), text.encode()


def send_messages(bootstrap_servers: str, topic: str, messages: Iterable[Message],
                  api_version: tuple[int, ...] | None = None) -> dict[int, int]:
    """Sends the messages and waits until each is acknowledged; returns how many went to each
    partition. Messages without a key go round the partitions in turn (an even spread to
    consume from); keyed ones go where Kafka's partitioner sends their key."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaError, KafkaTimeoutError

    version = {"api_version": api_version} if api_version else {}
    try:
        producer = KafkaProducer(bootstrap_servers=bootstrap_servers, acks=1, linger_ms=5,
                                 max_block_ms=10_000, **version)
    except KafkaError as exc:
        raise ProduceError(f"cannot reach Kafka at {bootstrap_servers}: {exc}") from None
    try:
        try:
            partitions = sorted(producer.partitions_for(topic) or ())
        except KafkaTimeoutError:  # the brokers never named the topic in their metadata
            partitions = []
        if not partitions:
            raise ProduceError(f"no topic {topic} on {bootstrap_servers}; create it first "
                               "(zkconsumer cluster create-topic)")
        futures = [producer.send(topic, key=key, value=value,
                                 partition=None if key is not None
                                 else partitions[n % len(partitions)])
                   for n, (key, value) in enumerate(messages)]
        producer.flush(timeout=60)
        return dict(sorted(Counter(future.get(timeout=60).partition
                                   for future in futures).items()))
    except KafkaError as exc:
        raise ProduceError(f"producing to {topic} failed: {type(exc).__name__} {exc}") from None
    finally:
        producer.close(timeout=10)

"""Small value types shared by every layer."""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """One partition of one topic; orders by topic name, then partition number as an integer."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class Message(NamedTuple):
    """One consumed record; a tuple because millions are made per second on the hot path."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int | None  # epoch millis; None where the broker keeps none (before 0.10)
    # (key, value) pairs in the order written; only format v2 (Kafka 0.11+) carries any
    headers: tuple[tuple[str, bytes | None], ...] = ()


def format_address(host: str, port: int) -> str:
    """`host:port`, with an IPv6 address in brackets so that its own colons stay unambiguous."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

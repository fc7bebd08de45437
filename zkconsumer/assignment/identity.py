"""Consumer ids and thread ids, spelled and ordered exactly as the reference consumer does.

Every member sorts the group's thread ids itself; if one member ordered them differently from
the others, two members would claim the same partitions. Java compares strings by UTF-16 code
units, which differs from Python's code-point order only beyond the Basic Multilingual Plane.
"""

from __future__ import annotations

import socket
import time
import uuid


def make_consumer_id(group_id: str, consumer_id: str | None = None, *,
                     hostname: str | None = None, now_ms: int | None = None,
                     random_hex: str | None = None) -> str:
    """`<group>_<hostname>-<epoch millis>-<8 hex chars>`, or `<group>_<consumer.id>` if given."""
    if consumer_id:
        return f"{group_id}_{consumer_id}"
    host = hostname if hostname is not None else socket.gethostname()
    millis = now_ms if now_ms is not None else int(time.time() * 1000)
    suffix = random_hex if random_hex is not None else uuid.uuid4().hex[:8]
    return f"{group_id}_{host}-{millis}-{suffix}"


def thread_id(consumer_id: str, n: int) -> str:
    return f"{consumer_id}-{n}"


def thread_ids(consumer_id: str, streams: int) -> list[str]:
    return [thread_id(consumer_id, n) for n in range(streams)]


def consumer_of_thread(thread: str) -> str:
    """The consumer id a thread id belongs to (everything before the last `-<n>`)."""
    consumer, dash, number = thread.rpartition("-")
    if not dash or not consumer or not number.isdigit():
        raise ValueError(f"{thread!r} is not a consumer thread id (<consumer id>-<n>)")
    return consumer


def java_string_sort_key(text: str) -> bytes:
    """Sort key giving Java's `String.compareTo` order (UTF-16 code units)."""
    return text.encode("utf-16-be")

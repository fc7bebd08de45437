"""How `zkconsumer consume` prints messages: pure functions from a message to bytes."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

from zkconsumer.model import Message

FORMATS = ("jsonl", "value", "none")


def _text_or_base64(record: dict, field: str, data: bytes | None) -> None:
    """UTF-8 text as is; anything else as base64, flagged so a reader can tell them apart."""
    if data is None:
        record[field] = None
        return
    try:
        record[field] = data.decode("utf-8")
    except UnicodeDecodeError:
        record[field] = base64.b64encode(data).decode("ascii")
        record[f"{field}_encoding"] = "base64"


def jsonl(message: Message) -> bytes:
    record = {"topic": message.topic, "partition": message.partition, "offset": message.offset}
    _text_or_base64(record, "key", message.key)
    _text_or_base64(record, "value", message.value)
    if message.timestamp is not None:
        record["timestamp"] = message.timestamp
    return json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n"


def value_line(message: Message) -> bytes:
    return (message.value or b"") + b"\n"


def formatter(name: str) -> Callable[[Message], bytes] | None:
    """The line writer for a format; None for `none` (count only, print nothing)."""
    return {"jsonl": jsonl, "value": value_line, "none": None}[name]

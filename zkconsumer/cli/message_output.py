"""How `zkconsumer consume` prints messages: pure functions from a message to bytes."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

from zkconsumer.model import Message

FORMATS = ("jsonl", "value", "none")
FORMAT_HELP = ("How each message is printed on standard output: jsonl, one JSON object per "
               "message; value, its raw value and a newline; none, nothing.")


def _text(data: bytes) -> tuple[str, bool]:
    """UTF-8 text as is; anything else as base64, and whether it is."""
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), True


def _text_or_base64(record: dict, field: str, data: bytes | None) -> None:
    """Base64 flagged by a `<field>_encoding` field, so a reader can tell it from text."""
    if data is None:
        record[field] = None
        return
    record[field], is_base64 = _text(data)
    if is_base64:
        record[f"{field}_encoding"] = "base64"


def _header(key: str, value: bytes | None) -> list:
    """[key, value], the value written as `value` is; base64 flagged by a third element."""
    if value is None:
        return [key, None]
    text, is_base64 = _text(value)
    return [key, text, "base64"] if is_base64 else [key, text]


def jsonl(message: Message) -> bytes:
    record = {"topic": message.topic, "partition": message.partition, "offset": message.offset}
    _text_or_base64(record, "key", message.key)
    _text_or_base64(record, "value", message.value)
    if message.timestamp is not None:
        record["timestamp"] = message.timestamp
    if message.headers:
        record["headers"] = [_header(key, value) for key, value in message.headers]
    return json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n"


def value_line(message: Message) -> bytes:
    return (message.value or b"") + b"\n"


def formatter(name: str) -> Callable[[Message], bytes] | None:
    """The line writer for a format; None for `none` (count only, print nothing)."""
    return {"jsonl": jsonl, "value": value_line, "none": None}[name]

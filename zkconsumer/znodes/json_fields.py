"""Strict readers for the JSON objects stored in znodes.

Znode data is written by other processes (brokers, the reference consumer, operators' tools),
so every read is checked and every failure becomes a `ZnodeDataError` naming the znode and the
offending field; callers never see a bare KeyError, TypeError or JSONDecodeError.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, NoReturn

from zkconsumer.errors import ZnodeDataError

# The reference parses every JSON number as a Java Int, so nothing wider is valid znode data.
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", float: "number"}
# A JSON escape of a UTF-16 surrogate: the only way a lone one gets into a parsed string, since
# the text itself was decoded from UTF-8, which cannot hold one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def describe(value: object) -> str:
    """A short rendering of a bad value for an error message; znode data can be huge."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def decode_text(path: str, data: bytes | None) -> str:
    if not data:
        raise ZnodeDataError(path, "znode has no data")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ZnodeDataError(
            path, f"data is not UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


class JsonObject:
    """A JSON object read from a znode; remembers the path and its own position for errors."""

    def __init__(self, path: str, value: dict[str, Any], where: str = "") -> None:
        self.path = path
        self.value = value
        self._where = where

    @classmethod
    def load(cls, path: str, data: bytes | None) -> JsonObject:
        text = decode_text(path, data)
        try:
            value = json.loads(text, parse_constant=_reject_constant)
        except ValueError as exc:
            raise ZnodeDataError(path, f"not valid JSON ({exc})") from None
        except RecursionError:  # arrays or objects nested thousands deep
            raise ZnodeDataError(path, "JSON nested too deeply") from None
        if not isinstance(value, dict):
            raise ZnodeDataError(path, f"expected a JSON object, got {_kind(value)}")
        if _SURROGATE_ESCAPE.search(text) and _holds_lone_surrogate(value):
            raise ZnodeDataError(path, "a string holds an escaped lone UTF-16 surrogate "
                                       "(\\ud800-\\udfff), which is no character")
        return cls(path, value)

    def fail(self, reason: str) -> ZnodeDataError:
        return ZnodeDataError(self.path, reason)

    def field_name(self, key: str) -> str:
        return f"'{self._where}{key}'"

    def has(self, key: str) -> bool:
        return self.value.get(key) is not None

    def items(self) -> Iterator[tuple[str, Any]]:
        return iter(self.value.items())

    def _required(self, key: str) -> Any:
        value = self.value.get(key)
        if value is None:
            raise self.fail(f"field {self.field_name(key)} is missing")
        return value

    def integer(self, key: str, *, minimum: int = INT32_MIN, maximum: int = INT32_MAX) -> int:
        return self.check_int(key, self._required(key), minimum=minimum, maximum=maximum)

    def optional_integer(
        self, key: str, *, minimum: int = INT32_MIN, maximum: int = INT32_MAX
    ) -> int | None:
        """Missing and null both read as None: writers differ in which they use for "absent"."""
        value = self.value.get(key)
        if value is None:
            return None
        return self.check_int(key, value, minimum=minimum, maximum=maximum)

    def string(self, key: str) -> str:
        return self.check_str(key, self._required(key))

    def optional_string(self, key: str) -> str | None:
        value = self.value.get(key)
        return None if value is None else self.check_str(key, value)

    def obj(self, key: str) -> JsonObject:
        value = self._required(key)
        if not isinstance(value, dict):
            raise self.fail(
                f"field {self.field_name(key)} must be an object, got {describe(value)}"
            )
        return JsonObject(self.path, value, f"{self._where}{key}.")

    def optional_obj(self, key: str) -> JsonObject | None:
        return self.obj(key) if self.has(key) else None

    def integer_list(self, key: str, *, minimum: int = INT32_MIN) -> tuple[int, ...]:
        return self.check_int_list(key, self._required(key), minimum=minimum)

    def string_list(self, key: str) -> tuple[str, ...]:
        value = self._required(key)
        if not isinstance(value, list):
            raise self.fail(f"field {self.field_name(key)} must be an array, got {describe(value)}")
        return tuple(self.check_str(key, item) for item in value)

    def check_int(
        self, key: str, value: object, *, minimum: int = INT32_MIN, maximum: int = INT32_MAX
    ) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(
                f"field {self.field_name(key)} must be an integer, got {describe(value)}"
            )
        if not minimum <= value <= maximum:
            raise self.fail(
                f"field {self.field_name(key)} must be between {minimum} and {maximum}, got {value}"
            )
        return value

    def check_int_list(
        self, key: str, value: object, *, minimum: int = INT32_MIN
    ) -> tuple[int, ...]:
        if not isinstance(value, list):
            raise self.fail(f"field {self.field_name(key)} must be an array, got {describe(value)}")
        return tuple(self.check_int(key, item, minimum=minimum) for item in value)

    def check_str(self, key: str, value: object) -> str:
        if not isinstance(value, str):
            raise self.fail(f"field {self.field_name(key)} must be a string, got {describe(value)}")
        return value


def _holds_lone_surrogate(value: object) -> bool:
    """Whether any key or string in a parsed document is a surrogate without its pair (a pair
    escaped as two escapes is read as the one character it encodes). Such a string is refused
    here, once, rather than carried to every renderer: no UTF-8 encoder, the CLI's, `--json`'s,
    the exporter's labels or Burrow's JSON, can write it. Walked without recursion: the parser
    has already bounded the nesting."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return _JSON_TYPES.get(type(value), "number")


def dump_json(value: object) -> bytes:
    """Compact JSON as Kafka's own tools write it (no spaces, UTF-8, keys in given order)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

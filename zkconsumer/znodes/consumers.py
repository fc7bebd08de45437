"""A consumer group's znodes: member registrations, partition owners and committed offsets.

Reference consumers in the same group read what we write and vice versa, so encoding follows
the reference byte for byte where it is observable: registrations keep its key order, spacing,
string timestamp and its own JSON escaping of filter regexes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from zkconsumer.errors import ZnodeDataError
from zkconsumer.znodes.json_fields import JsonObject, decode_text, describe
from zkconsumer.znodes.paths import check_name


class SubscriptionPattern:
    """The `pattern` values of a registration: a topic list, or one whitelist/blacklist regex."""

    STATIC: Final = "static"
    WHITE_LIST: Final = "white_list"
    BLACK_LIST: Final = "black_list"


_PATTERNS = (
    SubscriptionPattern.STATIC,
    SubscriptionPattern.WHITE_LIST,
    SubscriptionPattern.BLACK_LIST,
)

# The reference's JSONEscapeString: the JSON escapes plus "/", and every C0/C1 control character
# (and DEL) as a lower-case \uXXXX. Reproduced so our bytes equal the reference's.
_NAMED_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "/": "\\/",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_ESCAPES = {
    **{code: f"\\u{code:04x}" for code in [*range(0x20), *range(0x7F, 0xA0)]},
    **{ord(char): escaped for char, escaped in _NAMED_ESCAPES.items()},
}

LONG_MAX = 2**63 - 1
# Every member lists every other member's thread ids to assign partitions, so a registration's
# stream count is memory in each of them: 2^31-1 written by one member would exhaust them all.
# `zkconsumer consume` allows 1024 streams; no process runs more threads than this, per topic
# or, for a static registration, in all.
MAX_STREAMS = 10_000
# The reference's "invalid offset"; a stored -1 makes its fetcher fall back to auto.offset.reset,
# so callers should treat it like a missing offsets znode.
NO_OFFSET = -1
_OFFSET = re.compile(r"-?[0-9]+")


def json_escape(text: str) -> str:
    return text.translate(_ESCAPES)


@dataclass(frozen=True)
class ConsumerRegistration:
    """A member's registration under /consumers/<group>/ids. `subscription` maps topics (or, for
    a wildcard, the one filter regex) to stream counts, in the order they are written."""

    version: int
    subscription: Mapping[str, int]
    pattern: str
    timestamp: str | None

    @classmethod
    def static(cls, subscription: Mapping[str, int], timestamp_ms: int) -> ConsumerRegistration:
        for topic, streams in subscription.items():
            check_name("topic", topic)
            _check_streams(streams)
        if sum(subscription.values()) > MAX_STREAMS:
            raise ValueError(f"{sum(subscription.values())} streams in all, more than "
                             f"{MAX_STREAMS}")
        return cls(1, dict(subscription), SubscriptionPattern.STATIC, str(timestamp_ms))

    @classmethod
    def wildcard(
        cls, pattern: str, regex: str, streams: int, timestamp_ms: int
    ) -> ConsumerRegistration:
        if pattern not in (SubscriptionPattern.WHITE_LIST, SubscriptionPattern.BLACK_LIST):
            raise ValueError(f"a wildcard pattern is white_list or black_list, got {describe(pattern)}")
        return cls(1, {regex: _check_streams(streams)}, pattern, str(timestamp_ms))

    @property
    def is_wildcard(self) -> bool:
        return self.pattern != SubscriptionPattern.STATIC

    @property
    def filter_regex(self) -> str | None:
        """The whitelist/blacklist regex, as the member wrote it; None for a static member."""
        return next(iter(self.subscription)) if self.is_wildcard else None

    @classmethod
    def decode(cls, path: str, data: bytes) -> ConsumerRegistration:
        """Accepts what the reference accepts, but refuses what would only fail later or be
        silently misread: stream counts below 1 (the reference fails mid-rebalance), an unknown
        pattern (read as static) and a wildcard with several regexes (all but one ignored).
        A missing version reads as 1; the reference never looks at it."""
        fields = JsonObject.load(path, data)
        version = fields.optional_integer("version", minimum=1)
        pattern = fields.string("pattern")
        if pattern not in _PATTERNS:
            raise fields.fail(
                f"field 'pattern' must be one of {', '.join(_PATTERNS)}, got {describe(pattern)}"
            )
        counts = fields.obj("subscription")
        subscription = {
            name: counts.check_int(name, value, minimum=1, maximum=MAX_STREAMS)
            for name, value in counts.items()
        }
        if not subscription:
            pattern = SubscriptionPattern.STATIC  # as the reference reads it, whatever it says
        elif pattern != SubscriptionPattern.STATIC and len(subscription) != 1:
            raise fields.fail(
                f"a {pattern} registration needs exactly one regex in 'subscription', "
                f"got {len(subscription)}"
            )
        if pattern == SubscriptionPattern.STATIC:
            _check_topic_names(fields, subscription)
            if sum(subscription.values()) > MAX_STREAMS:  # the thread ids every member lists
                raise fields.fail(f"'subscription' asks for {sum(subscription.values())} "
                                  f"streams in all, more than {MAX_STREAMS}")
        return cls(
            1 if version is None else version, subscription, pattern, _read_timestamp(fields)
        )

    def encode(self) -> bytes:
        """Byte-identical to the reference's registration. It escapes only the wildcard regex,
        but escaping is the identity on every legal topic name, so escaping all keys is the same
        bytes and can never produce broken JSON."""
        subscription = ",".join(
            f'"{json_escape(name)}":{streams}' for name, streams in self.subscription.items()
        )
        text = (
            f'{{"version":{self.version},"subscription":{{{subscription}}},'
            f'"pattern":"{self.pattern}"'
        )
        if self.timestamp is not None:
            text += f',"timestamp":"{json_escape(self.timestamp)}"'
        return (text + "}").encode("utf-8")


def _check_streams(streams: int) -> int:
    if not isinstance(streams, int) or isinstance(streams, bool) or not 1 <= streams <= MAX_STREAMS:
        raise ValueError(f"a stream count must be an integer from 1 to {MAX_STREAMS}, "
                         f"got {describe(streams)}")
    return streams


def _check_topic_names(fields: JsonObject, subscription: Mapping[str, int]) -> None:
    """Subscribed topics become znode paths in every member and tool reading the group; a name
    no topic can have ("", "a/b") would fail there, far from the registration that holds it."""
    for topic in subscription:
        try:
            check_name("topic", topic)
        except ValueError as exc:
            raise fields.fail(f"subscription: {exc}") from None


def _read_timestamp(fields: JsonObject) -> str | None:
    """The reference writes a string but never reads it back, so a number is accepted too:
    refusing it would only lock out a non-reference member over a field nobody uses."""
    value = fields.value.get("timestamp")
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise fields.fail(f"field 'timestamp' must be a string or an integer, got {describe(value)}")


def decode_owner(path: str, data: bytes) -> str:
    """The owning thread id, exactly as written: ids are compared as strings, so nothing is
    stripped or normalised."""
    return decode_text(path, data)


def encode_owner(thread_id: str) -> bytes:
    if not thread_id:
        raise ValueError("an owner znode needs a non-empty thread id")
    return thread_id.encode("utf-8")


def decode_offset(path: str, data: bytes) -> int:
    """The committed offset, >= NO_OFFSET. Surrounding whitespace is tolerated because
    operators edit these znodes by hand (zkCli.sh, ImportZkOffsets files)."""
    text = decode_text(path, data).strip(" \t\r\n")
    if not _OFFSET.fullmatch(text):
        raise ZnodeDataError(path, f"offset must be a decimal integer, got {describe(text)}")
    if len(text) > 20 or not NO_OFFSET <= int(text) <= LONG_MAX:
        raise ZnodeDataError(
            path, f"offset must be between {NO_OFFSET} and {LONG_MAX}, got {describe(text)}"
        )
    return int(text)


def encode_offset(offset: int) -> bytes:
    if (
        not isinstance(offset, int)
        or isinstance(offset, bool)
        or not NO_OFFSET <= offset <= LONG_MAX
    ):
        raise ValueError(
            f"an offset must be an integer between {NO_OFFSET} and {LONG_MAX}, got {describe(offset)}"
        )
    return str(offset).encode("ascii")

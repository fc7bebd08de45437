"""Parsers of single config values. Each raises `Invalid` with the reason alone: the caller
knows the key, the value and where it came from, so the one error line names all four."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

from zkconsumer.assignment.topic_filter import Whitelist, normalize_filter_regex
from zkconsumer.errors import TopicFilterError

# The reference reads every number as a Java int.
INT_MAX = 2**31 - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")
_LEGAL_NAME = re.compile(r"[A-Za-z0-9._-]+")
_MAX_TOPIC_LENGTH = 249


class Invalid(Exception):
    """Why a value is rejected; the caller knows the key, the value and the source."""


def non_empty(text: str) -> str:
    if not text:
        raise Invalid("must not be empty")
    return text


def integer(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not _INTEGER.fullmatch(text):
            raise Invalid("must be an integer")
        value = int(text)
        if not minimum <= value <= INT_MAX:
            raise Invalid(f"must be between {minimum} and {INT_MAX}")
        return value
    return parse


def boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise Invalid("must be true or false")
    return text.lower() == "true"


def one_of(*choices: str, aliases: Mapping[str, str] = MappingProxyType({})
            ) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = aliases.get(text.lower(), text.lower())
        if value not in choices:
            raise Invalid(f"must be one of {', '.join(choices + tuple(aliases))}")
        return value
    return parse


def legal_name(text: str) -> str:
    """The reference's rule for group and client ids, which become znode names and metric tags."""
    if not _LEGAL_NAME.fullmatch(text):
        raise Invalid("may contain only ASCII alphanumerics, '.', '_' and '-'")
    return text


def consumer_id(text: str) -> str:
    if "/" in text:
        raise Invalid("must not contain '/', it becomes part of a znode name")
    return text


def topic_list(text: str) -> tuple[str, ...]:
    topics = [topic.strip() for topic in text.split(",")]
    for topic in topics:
        if not _LEGAL_NAME.fullmatch(topic) or topic in (".", "..") \
                or len(topic) > _MAX_TOPIC_LENGTH:
            raise Invalid(f"{topic!r} is not a legal topic name")
    return tuple(dict.fromkeys(topics))


def topic_filter(text: str) -> str:
    """The reason names the regex: a command-line option's error shows no value otherwise."""
    if not normalize_filter_regex(text):
        raise Invalid(f"{text!r} is empty once quotes and spaces are removed")
    try:
        return Whitelist(text).regex
    except TopicFilterError as exc:
        raise Invalid(f"{text!r} is not a valid regular expression: {exc.reason}") from None


def api_version(text: str) -> tuple[int, ...] | None:
    if text.lower() == "auto":
        return None
    parts = text.split(".")
    if not 2 <= len(parts) <= 4 or not all(part.isascii() and part.isdigit() for part in parts):
        raise Invalid("must be 'auto' or a version such as 0.9, 0.10.2 or 2.8")
    return tuple(int(part) for part in parts)


def port(text: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise Invalid("must be an integer")
    number = int(text)
    if not 0 <= number <= 65535:
        raise Invalid("must be a port (1-65535), or 0 for none")
    return number


def digest_credentials(text: str) -> str:
    user, colon, password = text.partition(":")
    if not colon or not user or not password:
        raise Invalid("must be user:password")
    return text

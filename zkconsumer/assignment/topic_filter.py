"""Whitelists and blacklists of topics, with the reference's normalisation and matching.

Registrations store the normalised regex, and every member applies it to the same topic list;
matching must be whole-name (Java's `String.matches`), or members would disagree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from zkconsumer.errors import TopicFilterError

INTERNAL_TOPICS = frozenset({"__consumer_offsets"})


def normalize_filter_regex(raw: str) -> str:
    """Trim, `,` to `|`, drop spaces, strip surrounding quotes (properties files bring them)."""
    return raw.strip().replace(",", "|").replace(" ", "").lstrip("\"'").rstrip("\"'")


@dataclass(frozen=True)
class TopicFilter:
    raw: str
    regex: str = field(init=False)
    _compiled: re.Pattern = field(init=False, repr=False, compare=False)

    pattern_name = ""

    def __post_init__(self) -> None:
        regex = normalize_filter_regex(self.raw)
        try:
            compiled = re.compile(regex)
        except re.error as exc:
            raise TopicFilterError(self.raw, str(exc)) from None
        object.__setattr__(self, "regex", regex)
        object.__setattr__(self, "_compiled", compiled)

    def matches(self, topic: str) -> bool:
        return self._compiled.fullmatch(topic) is not None

    def allows(self, topic: str, exclude_internal_topics: bool = True) -> bool:
        raise NotImplementedError


@dataclass(frozen=True)
class Whitelist(TopicFilter):
    pattern_name = "white_list"

    def allows(self, topic: str, exclude_internal_topics: bool = True) -> bool:
        return self.matches(topic) and not (exclude_internal_topics and topic in INTERNAL_TOPICS)


@dataclass(frozen=True)
class Blacklist(TopicFilter):
    pattern_name = "black_list"

    def allows(self, topic: str, exclude_internal_topics: bool = True) -> bool:
        return not self.matches(topic) and not (exclude_internal_topics
                                                and topic in INTERNAL_TOPICS)


def topic_filter_for(pattern_name: str, regex: str) -> TopicFilter:
    """Rebuild the filter a wildcard registration describes."""
    if pattern_name == Whitelist.pattern_name:
        return Whitelist(regex)
    if pattern_name == Blacklist.pattern_name:
        return Blacklist(regex)
    raise ValueError(f"{pattern_name!r} is not a topic filter pattern")


def wildcard_filter(whitelist: str | None, blacklist: str | None) -> TopicFilter:
    """The filter of a subscription by pattern, where the caller already checked that exactly
    one of `whitelist` and `blacklist` is set."""
    if whitelist:
        return Whitelist(whitelist)
    if blacklist:
        return Blacklist(blacklist)
    raise ValueError("a subscription by pattern needs a whitelist or a blacklist")

"""The znode paths shared with brokers and the reference consumer.

Names that become path elements (topics, groups, consumer ids) are checked before use: a group
id containing "/" would otherwise silently address another group's znodes. Such names come from
configuration or code, not from znode data, so a bad one raises ValueError (the config layer
turns it into a ConfigError via `check_name`); a bad child name *read from ZooKeeper* raises
ZnodeDataError instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zkconsumer.errors import ZnodeDataError
from zkconsumer.znodes.json_fields import describe

BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CONSUMERS = "/consumers"
# A group's cutover fence, a child of its znode beside ids/owners/offsets (not the reference's).
FENCE = "fence"
TOPIC_CONFIGS = "/config/topics"

# Characters ZooKeeper refuses in a path element (PathUtils.validatePath), plus the separator.
# Java sees characters beyond U+FFFF as surrogates, which ZooKeeper also refuses.
_FORBIDDEN_CHARS = re.compile(r"[/\x00-\x1f\x7f-\x9f\ud800-\uf8ff\ufff0-\U0010ffff]")
# Canonical decimal only: a child named "01" must not alias partition 1's znode.
_CANONICAL_NUMBER = re.compile(r"0|[1-9][0-9]{0,9}")
_INT32_MAX = 2**31 - 1


def check_name(kind: str, name: str) -> str:
    """Return `name` if it can be one path element; `kind` ("topic", "group", ...) is for errors."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"{kind} name must be a non-empty string, got {describe(name)}")
    if name in (".", ".."):
        raise ValueError(f"{kind} name {describe(name)} is not allowed in a ZooKeeper path")
    bad = _FORBIDDEN_CHARS.search(name)
    if bad:
        raise ValueError(
            f"{kind} name {describe(name)} contains {bad.group()!r}, not allowed in a znode name"
        )
    return name


def _check_number(kind: str, number: int) -> int:
    if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number <= _INT32_MAX:
        raise ValueError(f"{kind} must be a non-negative 32-bit integer, got {describe(number)}")
    return number


def _parse_number(kind: str, name: str, path: str) -> int:
    if not isinstance(name, str) or not _CANONICAL_NUMBER.fullmatch(name) or int(name) > _INT32_MAX:
        raise ZnodeDataError(path, f"{describe(name)} is not a {kind} (a non-negative decimal integer)")
    return int(name)


def parse_broker_id(name: str, path: str) -> int:
    """The broker id a child of /brokers/ids stands for; `path` is named in the error."""
    return _parse_number("broker id", name, path)


def parse_partition_number(name: str, path: str) -> int:
    """The partition a child znode (or a JSON key) stands for; `path` is named in the error."""
    return _parse_number("partition number", name, path)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{_check_number('broker id', broker_id)}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{check_name('topic', topic)}"


def topic_config_path(topic: str) -> str:
    return f"{TOPIC_CONFIGS}/{check_name('topic', topic)}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{topic_path(topic)}/partitions/{_check_number('partition', partition)}/state"


@dataclass(frozen=True)
class GroupPaths:
    """Every znode of one consumer group, under /consumers/<group>."""

    group: str

    def __post_init__(self) -> None:
        check_name("group", self.group)

    @property
    def root(self) -> str:
        return f"{CONSUMERS}/{self.group}"

    @property
    def ids(self) -> str:
        return f"{self.root}/ids"

    @property
    def owners(self) -> str:
        return f"{self.root}/owners"

    @property
    def offsets(self) -> str:
        return f"{self.root}/offsets"

    @property
    def fence(self) -> str:
        """The cutover fence (see `zkconsumer.znodes.fence`); not one of the reference's."""
        return f"{self.root}/{FENCE}"

    @property
    def fence_aware(self) -> str:
        return f"{self.root}/fence-aware"

    def fence_aware_member(self, consumer_id: str) -> str:
        return f"{self.fence_aware}/{check_name('consumer id', consumer_id)}"

    def member(self, consumer_id: str) -> str:
        return f"{self.ids}/{check_name('consumer id', consumer_id)}"

    def owners_topic(self, topic: str) -> str:
        return f"{self.owners}/{check_name('topic', topic)}"

    def owner(self, topic: str, partition: int) -> str:
        return f"{self.owners_topic(topic)}/{_check_number('partition', partition)}"

    def offsets_topic(self, topic: str) -> str:
        return f"{self.offsets}/{check_name('topic', topic)}"

    def offset(self, topic: str, partition: int) -> str:
        return f"{self.offsets_topic(topic)}/{_check_number('partition', partition)}"

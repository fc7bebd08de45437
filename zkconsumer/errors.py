"""The typed errors zkconsumer raises.

Every error a user can cause (bad config, malformed znode data, bad CLI input) is a subclass of
`ZkConsumerError`, so the CLI can turn any of them into one clear line and a non-zero exit
instead of a traceback.
"""

from __future__ import annotations


class ZkConsumerError(Exception):
    """Base of every error zkconsumer raises on purpose."""


def describe_error(exc: BaseException) -> str:
    """One line naming the error type, never empty and never ending in a dangling colon:
    kazoo's ConnectionLoss and friends have no message at all, and kafka-python appends
    ': None' or ': ' (an empty error message of the broker's) to its own."""
    name = type(exc).__name__
    text = " ".join(str(exc).split())
    text = text.removesuffix(": None").rstrip(": ")
    if not text or text == "None":
        return name
    return text if name in text else f"{name}: {text}"


class ConfigError(ZkConsumerError):
    """A configuration value is missing or invalid; names the key, the value and where it came from."""

    def __init__(self, key: str, value: object, reason: str, source: str | None = None) -> None:
        self.key = key
        self.value = value
        self.reason = reason
        self.source = source
        where = f" (from {source})" if source else ""
        super().__init__(f"invalid config {key}={value!r}{where}: {reason}")


class ZnodeDataError(ZkConsumerError):
    """A znode holds data zkconsumer cannot decode; names the znode path."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"malformed data in znode {path}: {reason}")


class AssignmentError(ZkConsumerError):
    """The group's subscriptions do not allow the requested assignment strategy."""


class TopicFilterError(ZkConsumerError):
    """A whitelist or blacklist regex is not a valid pattern."""

    def __init__(self, raw: str, reason: str) -> None:
        self.raw = raw
        self.reason = reason
        super().__init__(f"invalid topic filter regex {raw!r}: {reason}")


class OffsetsDifferError(ZkConsumerError):
    """`offsets diff` found ZooKeeper and Kafka disagreeing: not a failure but an answer, so
    scripts get their own exit status for it."""

    exit_code = 3

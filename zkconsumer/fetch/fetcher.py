"""Choosing the fetch backend for a member: the wire fetcher where it can serve, else kafka-python.

Both take the same kafka-python settings, built once from the legacy keys and `kafka.*`
properties, and offer the same interface (`Fetcher`) to the fetch loop and Spark's reader. The
wire fetcher is more than twice as fast, SASL (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER, GSSAPI)
and TLS included; kafka-python covers what it does not (a kafka-python option it does not know
that a user passes through). `fetch.backend` forces either one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol

from zkconsumer.config import ConsumerConfig
from zkconsumer.errors import ConfigError
from zkconsumer.fetch.settings import kafka_consumer_settings
from zkconsumer.fetch.wire_fetcher import WireFetcher, wire_unsupported_reason
from zkconsumer.logs import get_logger
from zkconsumer.model import TopicPartition
from zkconsumer.records.columns import RecordColumns

log = get_logger(__name__)


class Fetcher(Protocol):
    """What a fetch backend offers. Not thread-safe but for `wakeup`: one thread (the fetch
    loop's, or a Spark task's) makes every other call."""

    # Told (broker "host:port", seconds from request to answer) of each fetch, where the
    # backend can time them: the member's metrics set it.
    observe_fetch: Callable[[str, float], None] | None
    # Whether a poll returns as each answer arrives (and a pending reset's position is known by
    # then), so that the fetch loop may let it wait as long as an answer may take.
    ends_polls_at_answers: bool

    def assign(self, positions: Mapping[TopicPartition, int | None],
               restart: Collection[TopicPartition] = ()) -> None:
        """Fetch exactly these partitions, from the offsets given (None: by
        `auto.offset.reset`); those already assigned keep their position unless in `restart`."""

    def poll(self, timeout_ms: int) -> Mapping[TopicPartition, RecordColumns]:
        """What arrived within the timeout, per partition, in offset order."""

    def position(self, tp: TopicPartition) -> int | None:
        """The next offset to fetch; None while a reset is pending."""

    def high_watermark(self, tp: TopicPartition) -> int | None:
        """The partition's high watermark as last seen; None before any."""

    def wakeup(self) -> None:
        """End the current `poll` early; safe from any thread."""

    def close(self) -> None: ...


def open_fetcher(config: ConsumerConfig, bootstrap_servers: str,
                 api_version: tuple[int, ...] | None) -> Fetcher:
    return fetcher_for(kafka_consumer_settings(config, bootstrap_servers, api_version),
                       config.fetch_backend)


def fetcher_for(settings: Mapping[str, Any], backend: str = "auto"
                ) -> Fetcher:
    """The backend for these kafka-python settings (also what Spark executors read with)."""
    unsupported = wire_unsupported_reason(settings)
    if backend == "wire" and unsupported:
        raise ConfigError("fetch.backend", "wire", f"cannot be used with {unsupported}; "
                          "use auto or kafka-python")
    if backend == "kafka-python" or unsupported:
        log.info("fetching with kafka-python", reason=unsupported or "fetch.backend")
        from zkconsumer.fetch.kafka_python_fetcher import KafkaPythonFetcher  # its import only here

        return KafkaPythonFetcher(settings)
    return WireFetcher(settings)

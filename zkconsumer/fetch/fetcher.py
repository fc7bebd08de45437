"""Choosing the fetch backend for a member: the wire fetcher where it can serve, else kafka-python.

Both take the same kafka-python settings, built once from the legacy keys and `kafka.*`
properties, and offer the same three calls (`assign`, `poll`, `close`) to the fetch loop. The
wire fetcher is more than twice as fast, SASL (PLAIN, SCRAM-SHA-256/512) and TLS included;
kafka-python covers what it does not (GSSAPI, OAUTHBEARER, and any other kafka-python option a
user passes through). `fetch.backend` forces either one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zkconsumer.config import ConsumerConfig
from zkconsumer.errors import ConfigError
from zkconsumer.fetch.kafka_python_fetcher import KafkaPythonFetcher
from zkconsumer.fetch.settings import kafka_consumer_settings
from zkconsumer.fetch.wire_fetcher import WireFetcher, wire_unsupported_reason
from zkconsumer.logs import get_logger

log = get_logger(__name__)


def open_fetcher(config: ConsumerConfig, bootstrap_servers: str,
                 api_version: tuple[int, ...] | None) -> WireFetcher | KafkaPythonFetcher:
    return fetcher_for(kafka_consumer_settings(config, bootstrap_servers, api_version),
                       config.fetch_backend)


def fetcher_for(settings: Mapping[str, Any], backend: str = "auto"
                ) -> WireFetcher | KafkaPythonFetcher:
    """The backend for these kafka-python settings (also what Spark executors read with)."""
    unsupported = wire_unsupported_reason(settings)
    if backend == "wire" and unsupported:
        raise ConfigError("fetch.backend", "wire", f"cannot be used with {unsupported}; "
                          "use auto or kafka-python")
    if backend == "kafka-python" or unsupported:
        log.info("fetching with kafka-python", reason=unsupported or "fetch.backend")
        return KafkaPythonFetcher(settings)
    return WireFetcher(settings)

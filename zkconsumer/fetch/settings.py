"""kafka-python consumer options from the legacy consumer keys (pure: no client is created).

The legacy consumer tuned its fetchers with its own keys; users keep their properties files,
so each key is translated to the kafka-python option that does the same job. Offsets are never
managed by kafka-python here (no group id, no auto commit): the group lives in ZooKeeper.
"""

from __future__ import annotations

from typing import Any

from zkconsumer.config import ConsumerConfig
from zkconsumer.fetch.kafka_client import client_settings, kafka_client_options

RESET_POLICY = {"smallest": "earliest", "largest": "latest"}
# kafka-python closes idle connections after this long, and insists it exceed the request
# timeout, which `socket.timeout.ms` may set high.
_IDLE_MARGIN_MS = 60_000
# A fetch may wait up to fetch.wait.max.ms at the broker (the reference asks socket.timeout.ms
# to be at least that): its answer is due within that and this margin, a broker being well.
ANSWER_MARGIN_MS = 1000


def answer_due_ms(config: ConsumerConfig) -> int:
    """How long a fetch's answer may take at most, a broker being well."""
    return config.fetch_wait_max_ms + ANSWER_MARGIN_MS


def poll_timeout_ms(config: ConsumerConfig, ends_polls_at_answers: bool) -> int:
    """How long the fetch loop lets one poll wait. Where each answer ends a poll, as long as an
    answer may take: a poll that ended at the broker's wait ended just before the answer came,
    and an idle member's CPU went on a second, empty poll per answer (a routing change and a
    stop wake a poll at once). Elsewhere the broker's wait, as the reference's fetchers poll."""
    return answer_due_ms(config) if ends_polls_at_answers else config.fetch_wait_max_ms


def kafka_consumer_settings(config: ConsumerConfig, bootstrap_servers: str,
                            api_version: tuple[int, ...] | None) -> dict[str, Any]:
    request_timeout_ms = max(config.socket_timeout_ms, answer_due_ms(config))
    settings: dict[str, Any] = {
        "max_partition_fetch_bytes": config.fetch_message_max_bytes,
        "fetch_min_bytes": config.fetch_min_bytes,
        "fetch_max_wait_ms": config.fetch_wait_max_ms,
        "request_timeout_ms": request_timeout_ms,
        "connections_max_idle_ms": max(540_000, request_timeout_ms + _IDLE_MARGIN_MS),
        "retry_backoff_ms": config.refresh_leader_backoff_ms,
        "auto_offset_reset": RESET_POLICY[config.auto_offset_reset],
        "client_id": config.client_id,
        "isolation_level": config.isolation_level,
    }
    if config.socket_receive_buffer_bytes > 0:
        settings["receive_buffer_bytes"] = config.socket_receive_buffer_bytes
    return client_settings({**settings, **kafka_client_options(config.kafka_client_properties)},
                           bootstrap_servers, api_version, group_id=None)

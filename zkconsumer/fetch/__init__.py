"""Fetching owned partitions from their leaders, found through the ZooKeeper broker registry."""

from zkconsumer.fetch.brokers import (
    KafkaAccess,
    NoBrokersError,
    api_version_from_registrations,
    bootstrap_servers,
    resolve_kafka_access,
)
from zkconsumer.fetch.fetcher import fetcher_for, open_fetcher
from zkconsumer.fetch.log_offsets import LogOffsets, LogOffsetsError
from zkconsumer.fetch.settings import kafka_consumer_settings
from zkconsumer.kafka.errors import FetchError

__all__ = [
    "FetchError",
    "KafkaAccess",
    "LogOffsets",
    "LogOffsetsError",
    "NoBrokersError",
    "api_version_from_registrations",
    "bootstrap_servers",
    "fetcher_for",
    "kafka_consumer_settings",
    "open_fetcher",
    "resolve_kafka_access",
]

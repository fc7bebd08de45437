"""Fetching owned partitions from their leaders, found through the ZooKeeper broker registry."""

from zkconsumer.fetch.brokers import (
    NoBrokersError,
    api_version_from_registrations,
    bootstrap_servers,
)
from zkconsumer.fetch.fetcher import FetchError, PartitionFetcher
from zkconsumer.fetch.settings import kafka_consumer_settings

__all__ = [
    "FetchError",
    "NoBrokersError",
    "PartitionFetcher",
    "api_version_from_registrations",
    "bootstrap_servers",
    "kafka_consumer_settings",
]

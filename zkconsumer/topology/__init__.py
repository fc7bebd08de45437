"""Where a group learns which topics exist and how many partitions each has.

The legacy consumer read both from the brokers' ZooKeeper registry (`/brokers/topics`) and
watched it. Brokers that do not register in the group's ZooKeeper (KRaft clusters, or a cluster
whose own ZooKeeper is not the group's) are asked instead, through Kafka metadata, and a
`MetadataRefresher` turns the registry watches into a periodic comparison.
"""

from zkconsumer.topology.refresh import MetadataRefresher, interest_fingerprint
from zkconsumer.topology.sources import (
    KafkaTopics,
    TopicMetadataError,
    TopicSource,
    TopicView,
    ZookeeperTopics,
    open_topic_source,
)

__all__ = [
    "KafkaTopics",
    "MetadataRefresher",
    "TopicMetadataError",
    "TopicSource",
    "TopicView",
    "ZookeeperTopics",
    "interest_fingerprint",
    "open_topic_source",
]

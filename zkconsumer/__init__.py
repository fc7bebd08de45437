"""zkconsumer: Kafka's ZooKeeper-coordinated high-level consumer, reimplemented in Python.

Groups whose membership, partition ownership and offsets live in ZooKeeper can be joined by
zkconsumer members side by side with the original Scala consumer.
"""

from zkconsumer.aio import AsyncConsumerConnector
from zkconsumer.assignment import Blacklist, Whitelist
from zkconsumer.config import ConsumerConfig, load_config
from zkconsumer.member.connector import ConsumerConnector
from zkconsumer.member.streams import ConsumerTimeout
from zkconsumer.model import Message, TopicPartition

__version__ = "0.1.0"

__all__ = ["AsyncConsumerConnector", "Blacklist", "ConsumerConfig", "ConsumerConnector", "ConsumerTimeout", "Message",
           "TopicPartition", "Whitelist", "__version__", "load_config"]

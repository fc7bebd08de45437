"""zkconsumer: Kafka's ZooKeeper-coordinated high-level consumer, reimplemented in Python.

Groups whose membership, partition ownership and offsets live in ZooKeeper can be joined by
zkconsumer members side by side with the original Scala consumer.
"""

__version__ = "0.1.0"

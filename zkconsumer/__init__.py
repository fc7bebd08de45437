"""zkconsumer: Kafka's ZooKeeper-coordinated high-level consumer, reimplemented in Python.

Groups whose membership, partition ownership and offsets live in ZooKeeper can be joined by
zkconsumer members side by side with the original Scala consumer.

The public names below are imported on first use (PEP 562), so that `import zkconsumer`, and
every command line run that needs none of them, does not pay for the member's modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zkconsumer.aio import AsyncConsumerConnector
    from zkconsumer.assignment import Blacklist, Whitelist
    from zkconsumer.config import ConsumerConfig, load_config
    from zkconsumer.member.connector import ConsumerConnector
    from zkconsumer.member.streams import ConsumerTimeout
    from zkconsumer.model import Message, TopicPartition

__version__ = "0.1.0"

# Each public name and the module it comes from.
_PUBLIC = {
    "AsyncConsumerConnector": "zkconsumer.aio",
    "Blacklist": "zkconsumer.assignment",
    "ConsumerConfig": "zkconsumer.config",
    "ConsumerConnector": "zkconsumer.member.connector",
    "ConsumerTimeout": "zkconsumer.member.streams",
    "Message": "zkconsumer.model",
    "TopicPartition": "zkconsumer.model",
    "Whitelist": "zkconsumer.assignment",
    "load_config": "zkconsumer.config",
}

__all__ = ["AsyncConsumerConnector", "Blacklist", "ConsumerConfig", "ConsumerConnector", "ConsumerTimeout", "Message",
           "TopicPartition", "Whitelist", "__version__", "load_config"]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'zkconsumer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

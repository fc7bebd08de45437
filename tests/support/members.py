"""zkconsumer members run in the test process, collecting what they consume."""

from __future__ import annotations

import threading
import time

from zkconsumer.assignment import Whitelist
from zkconsumer.errors import ZkConsumerError
from zkconsumer.member.connector import ConsumerConnector
from zkconsumer.member.streams import ConsumerTimeout
from zkconsumer.model import TopicPartition


def consume_until_quiet(stream) -> list[bytes]:
    """The values a stream hands out until it has had nothing for consumer.timeout.ms."""
    values = []
    try:
        for message in stream:
            values.append(message.value)
    except ConsumerTimeout:
        return values
    raise AssertionError("the stream ended without consumer.timeout.ms passing")


class CollectingMember:
    """A connector whose streams are drained by threads into `self.messages`, each also noted
    in `self.arrivals` with the time it was handed out (`time.monotonic()`)."""

    def __init__(self, cluster, group: str, *, topics: dict[str, int] | None = None,
                 whitelist: str | None = None, streams: int = 1, **properties: str) -> None:
        config = {"group.id": group, "zookeeper.connect": cluster.zookeeper_connect,
                  "auto.offset.reset": "smallest", "consumer.timeout.ms": "-1",
                  "rebalance.backoff.ms": "2000", "rebalance.max.retries": "10"}
        api_version = getattr(cluster, "kafka_api_version", None)
        if api_version:
            config["kafka.api.version"] = ".".join(map(str, api_version))
        config.update(properties)
        self.connector = ConsumerConnector(config)
        self.messages: list = []
        self.arrivals: list[tuple[float, TopicPartition]] = []
        self.failure: ZkConsumerError | None = None
        self._lock = threading.Lock()
        if topics is not None:
            by_topic = self.connector.create_message_streams(topics)
            self.streams = [s for ss in by_topic.values() for s in ss]
        else:
            self.streams = self.connector.create_message_streams_by_filter(Whitelist(whitelist),
                                                                           streams)
        self._threads = [threading.Thread(target=self._drain, args=(s,), daemon=True)
                         for s in self.streams]
        for thread in self._threads:
            thread.start()

    @property
    def consumer_id(self) -> str:
        return self.connector.consumer_id

    def _drain(self, stream) -> None:
        try:
            for message in stream:
                handed_out = time.monotonic()
                with self._lock:
                    self.messages.append(message)
                    self.arrivals.append((handed_out,
                                          TopicPartition(message.topic, message.partition)))
        except ConsumerTimeout:
            return
        except ZkConsumerError as exc:  # the member failed; tests read it from the connector
            self.failure = exc

    def delivered(self) -> list[tuple[float, TopicPartition]]:
        """`arrivals` as it stands now."""
        with self._lock:
            return list(self.arrivals)

    def values(self) -> list[bytes]:
        with self._lock:
            return [m.value for m in self.messages]

    def stop(self) -> None:
        self.connector.shutdown()
        for thread in self._threads:
            thread.join(timeout=30)

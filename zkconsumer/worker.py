"""A worker's run: a member's streams, each consumed on a thread of its own until stopped.

`zkconsumer consume` and `zkconsumer demo` run members this way, and so does the Python-API
worker of the tests and the fault runner (`zkconsumer.testing.api_worker`); the command line
only parses options and renders messages around it.

A run given a `FenceFollower` follows its group when `group cutover` moves it: once the
member drained for the fence, the run goes on with the member the follower opens on the
group's new coordination (same handler, same counters), or ends (`cutover.on.fence=exit`).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from zkconsumer.assignment.topic_filter import TopicFilter
from zkconsumer.config import ConsumerConfig
from zkconsumer.errors import ZkConsumerError
from zkconsumer.member.connector import ConsumerConnector
from zkconsumer.member.fence_follow import FenceFollower
from zkconsumer.member.rebalancer import PartitionCallback
from zkconsumer.member.streams import ConsumerTimeout, KafkaStream
from zkconsumer.metrics import MemberMetrics
from zkconsumer.model import Message

# Once a run is asked to stop, the streams' threads get this many seconds to finish the
# message in hand before the connector commits and leaves.
STREAMS_STOP_S = 3.0


class HandlerError(ZkConsumerError):
    """The user's handler raised; the message it failed on is not committed."""


def start_streams(connector: ConsumerConnector, selection: tuple[str, ...] | TopicFilter,
                  streams: int) -> list[KafkaStream]:
    """`streams` streams per topic named in `selection`, or in all for a filter."""
    if isinstance(selection, TopicFilter):
        return connector.create_message_streams_by_filter(selection, streams)
    by_topic = connector.create_message_streams({topic: streams for topic in selection})
    return [stream for topic in selection for stream in by_topic[topic]]


def open_member(config: ConsumerConfig, selection: tuple[str, ...] | TopicFilter, streams: int,
                metrics: MemberMetrics | None = None, *,
                on_partitions_assigned: PartitionCallback | None = None
                ) -> tuple[ConsumerConnector, list[KafkaStream]]:
    """A connector (counting in `metrics`) and its streams; a connector that fails to start
    is shut down again."""
    connector = ConsumerConnector(config, metrics=metrics,
                                  on_partitions_assigned=on_partitions_assigned)
    try:
        return connector, start_streams(connector, selection, streams)
    except BaseException:
        connector.shutdown()
        raise


class ConsumeRun:
    """Consumes every stream on its own thread until stopped, `max_messages`, or a failure;
    with `follower`, also across the group's cutover to another coordination."""

    def __init__(self, connector: ConsumerConnector, streams: list[KafkaStream],
                 write: Callable[[Message], bytes] | None,
                 handler: Callable[[Message], object] | None, max_messages: int | None,
                 stop_requested: threading.Event,
                 follower: FenceFollower | None = None) -> None:
        self.connector = connector
        self.streams = streams
        self._follower = follower
        self.consumed = 0
        self._write = write
        self._handler = handler
        self._max = max_messages
        self._lock = threading.Lock()
        self._done = stop_requested
        self._errors: list[BaseException] = []

    def stop(self) -> None:
        self._done.set()

    def run(self) -> None:
        while True:
            self._consume_member()
            moved = self.connector.moved
            if moved is None or self._follower is None or self._errors or self._done.is_set():
                break
            following = self._follower.after(moved, self.connector.member_metrics)
            if following is None:
                break
            self.connector, self.streams = following
        if self._errors:
            raise self._errors[0]

    def _consume_member(self) -> None:
        """Until stopped, or the member's streams all ended (a fence ends them); then the
        member leaves (and, fenced, drains)."""
        threads = [threading.Thread(target=self._consume, args=(s,), daemon=True,
                                    name=f"zkconsumer-stream-{i}")
                   for i, s in enumerate(self.streams)]
        for thread in threads:
            thread.start()
        while not self._done.wait(0.2):
            if not any(t.is_alive() for t in threads):
                break
        # A message counts as delivered once a stream hands it out, so every message in hand
        # must be written before the final commit: stop the streams, let the threads finish
        # what they hold, and only then commit and leave.
        for stream in self.streams:
            stream.close()
        streams_deadline = time.monotonic() + STREAMS_STOP_S
        for thread in threads:
            thread.join(timeout=max(0.0, streams_deadline - time.monotonic()))
        handler_failed = any(isinstance(e, HandlerError) for e in self._errors)
        self.connector.shutdown(commit=not handler_failed)

    def _consume(self, stream: KafkaStream) -> None:
        out = sys.stdout.buffer
        try:
            for message in stream:
                if self._handler is not None:
                    try:
                        self._handler(message)
                    except Exception as exc:
                        raise HandlerError(
                            f"handler failed on {message.topic}-{message.partition} offset "
                            f"{message.offset}: {type(exc).__name__}: {exc}") from exc
                with self._lock:
                    if self._write is not None:
                        out.write(self._write(message))
                        out.flush()
                    self.consumed += 1
                    if self._max is not None and self.consumed >= self._max:
                        self._done.set()
                if self._done.is_set():
                    # Handled and written: commit it, though the loop asks for no next one.
                    stream.mark_consumed()
                    return
        except ConsumerTimeout:
            self._done.set()
        except ZkConsumerError as exc:
            self._errors.append(exc)
            self._done.set()

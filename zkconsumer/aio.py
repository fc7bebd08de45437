"""`AsyncConsumerConnector`: a group member for asyncio applications.

The connector's own work (ZooKeeper, rebalances, fetching, auto-commits) already runs in threads
of its own; what would block an event loop is only the calls that wait for it: joining the group,
creating streams, a commit, the shutdown. Those run in a thread here and are awaited. Streams are
the synchronous ones, which `async for` iterates without blocking (see
`zkconsumer.member.async_streams`).

A cancelled task must not leave a member half made. A call cut short by a cancellation is still
waited for before the cancellation goes on (a member being created is then shut down, streams
being created are there for the shutdown to stop); leaving `async with` for any reason, a
cancellation included, commits what was consumed (every message handed out before the one in
hand), releases the partitions and leaves the group, once, however often it is asked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from zkconsumer.assignment import TopicFilter
from zkconsumer.config import ConsumerConfig
from zkconsumer.member.connector import ConsumerConnector
from zkconsumer.member.rebalancer import PartitionCallback
from zkconsumer.member.streams import KafkaStream
from zkconsumer.model import TopicPartition

T = TypeVar("T")


async def _to_its_end(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` in a thread, waited for to its end even if the caller is cancelled
    meanwhile (the cancellation is raised after it)."""
    future = asyncio.ensure_future(asyncio.to_thread(function, *args))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait([future])
        raise


class AsyncConsumerConnector:
    """`ConsumerConnector` with coroutines for what waits. Use it as `async with`:

        async with AsyncConsumerConnector(config) as connector:
            (stream,) = (await connector.create_message_streams({"orders": 1}))["orders"]
            async for message in stream:
                await handle(message)
    """

    def __init__(self, config: ConsumerConfig | Mapping[str, str], *,
                 on_partitions_revoked: PartitionCallback | None = None,
                 on_partitions_assigned: PartitionCallback | None = None) -> None:
        self._config = config
        self._on_partitions_revoked = on_partitions_revoked
        self._on_partitions_assigned = on_partitions_assigned
        self._connector: ConsumerConnector | None = None
        self._streams: list[KafkaStream] = []
        self._shutdown: asyncio.Future | None = None

    async def __aenter__(self) -> AsyncConsumerConnector:
        future = asyncio.ensure_future(asyncio.to_thread(
            ConsumerConnector, self._config, on_partitions_revoked=self._on_partitions_revoked,
            on_partitions_assigned=self._on_partitions_assigned))
        try:
            self._connector = await asyncio.shield(future)
        except asyncio.CancelledError:
            await asyncio.wait([future])
            if not future.cancelled() and future.exception() is None:
                self._connector = future.result()
                await self.shutdown()
            raise
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.shutdown()

    @property
    def connector(self) -> ConsumerConnector:
        """The synchronous connector underneath, for what does not wait (`owned_partitions`,
        `metrics`, `state`)."""
        if self._connector is None:
            raise RuntimeError("use AsyncConsumerConnector in `async with` first")
        return self._connector

    async def create_message_streams(self, topic_count: Mapping[str, int]
                                     ) -> dict[str, list[KafkaStream]]:
        streams = await _to_its_end(self.connector.create_message_streams, topic_count)
        self._streams.extend(s for topic_streams in streams.values() for s in topic_streams)
        return streams

    async def create_message_streams_by_filter(self, topic_filter: TopicFilter,
                                               num_streams: int = 1) -> list[KafkaStream]:
        streams = await _to_its_end(self.connector.create_message_streams_by_filter,
                                    topic_filter, num_streams)
        self._streams.extend(streams)
        return streams

    async def commit_offsets(self) -> dict[TopicPartition, int]:
        """Commit what was consumed, counting the message each stream's coroutine has in hand
        as done with; not a message a pending `async for` wait took and no coroutine has seen."""
        for stream in self._streams:
            stream.mark_consumed_unless_waiting()
        return await _to_its_end(self.connector.commit_offsets, False)

    async def wait_until_stable(self, timeout: float | None = None) -> bool:
        return await asyncio.to_thread(self.connector.wait_until_stable, timeout)

    async def shutdown(self, commit: bool = True) -> None:
        """`ConsumerConnector.shutdown`, started once: a second call (or a cancelled first one)
        waits for the same shutdown."""
        if self._connector is None:
            return
        if self._shutdown is None:
            self._shutdown = asyncio.ensure_future(
                asyncio.to_thread(self._connector.shutdown, commit))
        await asyncio.shield(self._shutdown)

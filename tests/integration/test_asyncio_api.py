"""The asyncio API on the real cluster: streams consumed by coroutines without holding up the
event loop, and a cancelled consumer that commits what it consumed and nothing more."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from support.kafka import produce
from support.offsets import zookeeper_offsets

from zkconsumer import AsyncConsumerConnector, TopicPartition

pytestmark = pytest.mark.integration


def _config(cluster, group: str) -> dict[str, str]:
    """Auto-commits only on leaving (the interval is longer than any test): what is committed
    is what the shutdown found consumed."""
    return {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group,
            "auto.offset.reset": "smallest", "auto.commit.interval.ms": "600000"}


# Messages per topic produced before the streams start, and as many again once they have
# consumed those and waited IDLE_S on empty topics (each wait a long poll of the broker's).
HALF = 1000
IDLE_S = 1.0
LONG_POLL = {"fetch.wait.max.ms": "1000"}
# A stream that waited on the event loop's thread would hold every tick up for about IDLE_S;
# one that does not leaves them late only by what a busy machine adds (tens of ms).
LATE_S = 0.25


def test_two_streams_consumed_by_coroutines_while_a_timer_keeps_ticking(
        cluster, zk, topic_factory, unique_name):
    topics = [topic_factory(partitions=2), topic_factory(partitions=2)]

    def produce_half(topic: str, first: int) -> None:
        produce(cluster, topic, [b"%s-%d" % (topic.encode(), i) for i in range(first, first + HALF)],
                partitions=2)

    halfway = {topic: threading.Event() for topic in topics}
    producer_failed: list[BaseException] = []

    def produce_second_halves() -> None:
        """On a thread of its own: a stream holding up the event loop cannot hold this up."""
        for half in halfway.values():
            half.wait(timeout=30)
        time.sleep(IDLE_S)  # the streams wait on empty topics meanwhile: the case judged
        try:
            for topic in topics:
                produce_half(topic, HALF)
        except Exception as exc:  # noqa: BLE001 - reported by the test, which then fails
            producer_failed.append(exc)

    for topic in topics:
        produce_half(topic, 0)
    producer = threading.Thread(target=produce_second_halves, daemon=True)
    producer.start()

    async def scenario() -> tuple[dict[str, int], float]:
        lateness: list[float] = []
        done = asyncio.Event()

        async def tick() -> None:
            due = time.monotonic() + 0.01
            while not done.is_set():
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                lateness.append(time.monotonic() - due)
                due += 0.01

        async def consume(stream, topic: str) -> int:
            count = 0
            async for message in stream:
                assert message.topic == topic
                count += 1
                if count == HALF:
                    halfway[topic].set()
                if count == 2 * HALF:
                    return count
            return count

        ticker = asyncio.ensure_future(tick())
        config = {**_config(cluster, unique_name("aio")), **LONG_POLL}
        async with AsyncConsumerConnector(config) as connector:
            streams = await connector.create_message_streams({topic: 1 for topic in topics})
            try:
                counts = await asyncio.wait_for(
                    asyncio.gather(*(consume(streams[t][0], t) for t in topics)), timeout=120)
            except asyncio.TimeoutError:
                raise AssertionError(f"the streams stopped short; the second halves' "
                                     f"production: {producer_failed or 'done'}") from None
        done.set()
        await ticker
        return dict(zip(topics, counts, strict=True)), max(lateness)

    counts, worst_lateness = asyncio.run(scenario())
    producer.join(timeout=60)
    assert counts == dict.fromkeys(topics, 2 * HALF)
    assert worst_lateness < LATE_S, f"a tick was {worst_lateness * 1000:.0f} ms late"


def test_a_cancelled_consumer_commits_what_it_consumed_and_not_the_message_in_hand(
        cluster, zk, topic_factory, unique_name):
    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"m%d" % i for i in range(50)], partitions=1)
    group = unique_name("aio-cancel")

    async def scenario() -> int:
        handling = asyncio.Event()
        seen: list[int] = []

        async def consume() -> None:
            async with AsyncConsumerConnector(_config(cluster, group)) as connector:
                (stream,) = (await connector.create_message_streams({topic: 1}))[topic]
                async for message in stream:
                    seen.append(message.offset)
                    if message.offset == 9:
                        handling.set()
                        await asyncio.Event().wait()  # handling it when cancelled

        task = asyncio.ensure_future(consume())
        await handling.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen[-1]

    assert asyncio.run(scenario()) == 9
    # Offsets 0-8 were consumed; 9 was being handled: the next member starts there.
    assert zookeeper_offsets(zk, group) == {TopicPartition(topic, 0): 9}

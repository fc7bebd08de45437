"""`async for` over a stream: the same messages and the same at-least-once rule as `for`, waits
off the event loop, and a cancelled wait that loses nothing."""

from __future__ import annotations

import asyncio
import time

import pytest
from support.record_columns import fetched

from zkconsumer.member import async_streams
from zkconsumer.member.claims import Claim, DeliveryGate
from zkconsumer.member.streams import Chunk, ConsumerTimeout, KafkaStream
from zkconsumer.model import Message, TopicPartition

TP = TopicPartition("t", 0)


def messages(first: int, count: int) -> list[Message]:
    return [Message(TP.topic, TP.partition, offset, None, b"v%d" % offset, None)
            for offset in range(first, first + count)]


def claimed_stream(*chunks: list[Message], timeout_ms: int = -1) -> tuple[KafkaStream, Claim]:
    claim = Claim(TP, "c-0")
    stream = KafkaStream("s", max_chunks=10, timeout_ms=timeout_ms, claims={TP: claim},
                         gate=DeliveryGate())
    claim.stream = stream  # the partition is delivered to it
    for chunk in chunks:
        assert stream.offer(Chunk(TP, fetched(chunk), claim), lambda: True)
    return stream, claim


async def _take(iterator, count: int) -> list:
    return [await anext(iterator) for _ in range(count)]


def test_async_for_hands_out_every_message_in_order_counting_each_when_the_next_is_asked():
    stream, _claim = claimed_stream(messages(0, 300), messages(300, 5))

    async def consume() -> list[int]:
        offsets = []
        async for message in stream:
            assert stream.positions[TP] == message.offset  # the one before is consumed
            offsets.append(message.offset)
            if message.offset == 304:
                return offsets
        return offsets

    assert asyncio.run(consume()) == list(range(305))


def test_a_cancelled_wait_keeps_the_message_it_brings_for_the_next_ask():
    stream, claim = claimed_stream(messages(0, 1))

    async def scenario() -> tuple[int, dict]:
        iterator = aiter(stream)
        assert (await anext(iterator)).offset == 0
        waiting = asyncio.ensure_future(anext(iterator))  # no chunk queued: it waits
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert stream.offer(Chunk(TP, fetched(messages(1, 3)), claim), lambda: True)
        # The cancelled wait took offset 1 in its thread; nobody saw it, so it is not consumed.
        again = await anext(aiter(stream))
        return again.offset, dict(stream.positions)

    offset, positions = asyncio.run(scenario())
    assert offset == 1
    assert positions == {TP: 1}, "offset 1 is in hand, not consumed"


def test_async_for_over_batches_and_the_end_of_the_stream():
    stream, _claim = claimed_stream(messages(0, 3), messages(3, 2))

    async def consume() -> list[list[int]]:
        seen = []
        async for batch in stream.batches():
            seen.append([m.offset for m in batch])
            if len(seen) == 2:
                stream.close()
        return seen

    assert asyncio.run(consume()) == [[0, 1, 2], [3, 4]]


def test_a_wait_does_not_block_the_event_loop():
    stream, claim = claimed_stream()

    async def scenario() -> int:
        consumer = asyncio.ensure_future(anext(aiter(stream)))
        ticks = 0
        while ticks < 5:  # the loop runs while the stream waits for a chunk
            await asyncio.sleep(0.01)
            ticks += 1
        assert not consumer.done()
        stream.offer(Chunk(TP, fetched(messages(7, 1)), claim), lambda: True)
        return (await consumer).offset

    # A wait on the loop's thread would hold the loop, and this, for ever: fail instead.
    assert asyncio.run(asyncio.wait_for(scenario(), timeout=30)) == 7


def test_iterating_again_after_a_consumer_timeout_resumes():
    stream, claim = claimed_stream(messages(0, 1), timeout_ms=50)

    async def scenario() -> list[int]:
        iterator = aiter(stream)
        offsets = [(await anext(iterator)).offset]
        with pytest.raises(ConsumerTimeout):
            await anext(iterator)
        stream.offer(Chunk(TP, fetched(messages(1, 2)), claim), lambda: True)
        offsets += [(await anext(iterator)).offset, (await anext(iterator)).offset]
        return offsets

    assert asyncio.run(scenario()) == [0, 1, 2]


def test_a_cancellation_where_the_loop_is_yielded_to_takes_no_message():
    every = async_streams._YIELD_EVERY
    stream, _claim = claimed_stream(messages(0, every + 10))

    async def scenario() -> tuple[int, dict]:
        iterator = aiter(stream)
        for _ in range(every + 1):  # the first from a thread (the chunk came with it), then
            await anext(iterator)   # `every` from the chunk in hand, without suspending
        at_the_yield = asyncio.ensure_future(anext(iterator))
        await asyncio.sleep(0)  # it runs up to its yield to the loop
        at_the_yield.cancel()
        with pytest.raises(asyncio.CancelledError):
            await at_the_yield
        positions = dict(stream.positions)
        return (await anext(iterator)).offset, positions

    offset, positions = asyncio.run(scenario())
    assert offset == every + 1, "the message after the yield is still to come"
    assert positions == {TP: every}, "and the one before it is not yet consumed"


def test_a_commit_does_not_count_what_a_pending_wait_took():
    stream, claim = claimed_stream(messages(0, 1))

    async def scenario() -> tuple[int, int]:
        iterator = aiter(stream)
        await anext(iterator)
        waiting = asyncio.ensure_future(anext(iterator))
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        stream.offer(Chunk(TP, fetched(messages(1, 3)), claim), lambda: True)
        stream.mark_consumed_unless_waiting()  # what AsyncConsumerConnector.commit_offsets does
        counted = stream.positions[TP]
        return counted, (await anext(iterator)).offset

    counted, next_offset = asyncio.run(scenario())
    assert next_offset == 1
    assert counted <= 1, "offset 1 reached no coroutine: it cannot be committed past"


def test_a_lapsed_lease_stops_the_event_loop_s_hand_out_of_the_message_in_hand():
    """The loop thread's fast path checks the lease as the synchronous one does: with the rest
    of a chunk in hand and the deadline passed, `async for` waits instead of handing it out."""
    stream, _claim = claimed_stream(messages(0, 5), timeout_ms=50)
    gate = stream._gate

    async def scenario() -> list[int]:
        iterator = aiter(stream)
        offsets = [(await anext(iterator)).offset]
        gate.lease(time.monotonic() - 0.001)
        with pytest.raises(ConsumerTimeout):
            await anext(iterator)
        gate.lease(time.monotonic() + 60.0)
        offsets.append((await anext(iterator)).offset)
        return offsets

    assert asyncio.run(scenario()) == [0, 1]
    assert stream.positions == {TP: 1}

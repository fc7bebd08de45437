"""KafkaStream: one iterator per stream, nothing in a chunk abandoned, a message counted as
consumed only once the consumer comes back for the next one."""

from __future__ import annotations

import itertools
import sys
import threading
import time

import pytest
from support.record_columns import columns_of, fetched

from zkconsumer.errors import ZkConsumerError
from zkconsumer.member import streams
from zkconsumer.member.claims import Claim, DeliveryGate
from zkconsumer.member.streams import Chunk, ConsumerTimeout, KafkaStream
from zkconsumer.model import Message, TopicPartition
from zkconsumer.records import columns

TP = TopicPartition("t", 0)


def messages(first: int, count: int, tp: TopicPartition = TP) -> list[Message]:
    return [Message(tp.topic, tp.partition, offset, None, b"v%d" % offset, None)
            for offset in range(first, first + count)]


def as_fetched(chunk: list[Message]):
    """A chunk in the form a fetcher hands it over: set per test by `chunk_form`."""
    return fetched(chunk)


class PythonCursorStream(KafkaStream):
    """The stream with the Python per-message fast path, the one used where the C extension
    was not built."""

    __next__ = streams._PythonCursor.__next__


stream_class = KafkaStream


@pytest.fixture(autouse=True, params=["C cursor", "Python cursor"])
def cursor(request, monkeypatch):
    """Every test runs with each per-message fast path."""
    if request.param == "Python cursor":
        monkeypatch.setattr(sys.modules[__name__], "stream_class", PythonCursorStream)
    elif streams._Cursor is streams._PythonCursor:
        pytest.skip("the C cursor was not built")
    return request.param


@pytest.fixture(autouse=True, params=["tuples", "columns"])
def chunk_form(request, monkeypatch):
    """Every test runs with chunks of tuples (what aiokafka's reader and kafka-python give) and
    with the compiled decoder's columns."""
    if request.param == "columns":
        if not columns.compiled():
            pytest.skip("the compiled decoder was not built")
        monkeypatch.setattr(sys.modules[__name__], "as_fetched", columns_of)
    return request.param


def stream_with(*chunks: list[Message], timeout_ms: int = 0, tp: TopicPartition = TP):
    """A stream whose partition `tp` is claimed, with `chunks` queued; also its claims and
    gate, for tests that withdraw the claim or close the gate."""
    gate = DeliveryGate()
    claim = Claim(tp, "c-0")
    claims = {tp: claim}
    stream = stream_class("s", max_chunks=10, timeout_ms=timeout_ms, claims=claims, gate=gate)
    claim.stream = stream  # the partition is delivered to it
    for chunk in chunks:
        assert stream.offer(Chunk(tp, as_fetched(chunk), claim), lambda: True)
    return stream, claims, gate


def test_next_of_iter_three_times_returns_consecutive_offsets_of_one_chunk():
    stream, _claims, _gate = stream_with(messages(0, 20))
    offsets = [next(iter(stream)).offset for _ in range(3)]
    assert offsets == [0, 1, 2]


def test_leaving_a_for_loop_early_keeps_the_rest_of_the_chunk():
    stream, _claims, _gate = stream_with(messages(0, 20))
    for message in stream:
        if message.offset == 4:
            break
    taken = list(itertools.islice(stream, 3))
    assert [m.offset for m in taken] == [5, 6, 7]
    assert next(stream).offset == 8


def test_a_message_counts_as_consumed_only_when_the_next_one_is_asked_for():
    stream, _claims, _gate = stream_with(messages(0, 5))
    next(stream)
    assert stream.positions == {TP: 0}, "offset 0 is still being handled"
    next(stream)
    assert stream.positions == {TP: 1}
    stream.mark_consumed()
    assert stream.positions == {TP: 2}


def test_a_zero_consumer_timeout_still_hands_out_queued_messages():
    stream, _claims, _gate = stream_with(messages(0, 2), timeout_ms=0)
    assert [next(stream).offset, next(stream).offset] == [0, 1]
    with pytest.raises(ConsumerTimeout):
        next(stream)


def test_iteration_resumes_after_a_consumer_timeout():
    stream, claims, _gate = stream_with(messages(0, 1), timeout_ms=50)
    assert next(stream).offset == 0
    with pytest.raises(ConsumerTimeout):
        next(stream)
    stream.offer(Chunk(TP, as_fetched(messages(1, 2)), claims[TP]), lambda: True)
    assert [next(stream).offset, next(stream).offset] == [1, 2]


def test_a_released_partition_is_not_delivered_nor_counted():
    stream, claims, _gate = stream_with(messages(0, 5), timeout_ms=50)
    assert next(stream).offset == 0
    released = claims.pop(TP)
    with pytest.raises(ConsumerTimeout):
        next(stream)
    assert released.consumed.value == 0, "the message in hand belongs to a released claim"
    assert stream.positions == {}, "the position went with the record"


def test_a_closed_gate_delivers_nothing():
    stream, _claims, gate = stream_with(messages(0, 5), timeout_ms=50)
    assert next(stream).offset == 0
    gate.pause()
    with pytest.raises(ConsumerTimeout):
        next(stream)
    assert stream.positions == {TP: 1}


def test_a_closed_gate_holds_the_chunk_back_and_loses_nothing():
    stream, _claims, gate = stream_with(messages(0, 5), timeout_ms=30_000)
    assert next(stream).offset == 0
    gate.pause()
    reopened = threading.Timer(0.05, gate.resume)
    reopened.start()
    assert next(stream).offset == 1
    reopened.join()


def test_a_lapsed_lease_stops_every_hand_out_though_the_gate_was_not_closed():
    """A frozen member's streams run again before its coordination thread notices anything:
    the lease's deadline alone stops them, per record and per batch, and the message in hand
    stays where it was (nothing is counted past it)."""
    stream, _claims, gate = stream_with(messages(0, 5), messages(5, 5), timeout_ms=50)
    gate.lease(time.monotonic() + 60.0)
    assert next(stream).offset == 0
    gate.lease(time.monotonic() - 0.001)
    assert gate.delivering, "the coordination has said nothing"
    with pytest.raises(ConsumerTimeout):
        next(stream)
    with pytest.raises(ConsumerTimeout):
        next(stream.batches())
    assert stream.positions == {TP: 1}
    gate.lease(time.monotonic() + 60.0)  # renewed: the same messages, none lost
    assert [m.offset for m in next(stream.batches())] == [1, 2, 3, 4]


def test_a_lease_renewed_while_a_stream_waits_lets_it_go_on():
    stream, _claims, gate = stream_with(messages(0, 5), timeout_ms=30_000)
    gate.lease(time.monotonic() - 1.0)
    renewed = threading.Timer(0.05, gate.lease, args=(time.monotonic() + 60.0,))
    renewed.start()
    assert next(stream).offset == 0
    renewed.join()


def test_arrow_batches_wait_for_the_lease_too():
    pytest.importorskip("pyarrow")
    stream, _claims, gate = stream_with(messages(0, 5), timeout_ms=50)
    gate.lease(time.monotonic() - 1.0)
    with pytest.raises(ConsumerTimeout):
        next(stream.arrow_batches())
    assert stream.positions == {}


def test_the_lease_deadline_is_exact_though_the_coarse_clock_lags():
    """The C cursor reads the coarse clock, which lags by a tick or more, and the monotonic
    clock itself near the deadline: a deadline just passed is passed."""
    stream, _claims, gate = stream_with(messages(0, 5), timeout_ms=50)
    gate.lease(time.monotonic())
    with pytest.raises(ConsumerTimeout):
        next(stream)


def test_batches_continue_a_partly_read_chunk_and_count_a_batch_at_the_next_request():
    stream, _claims, _gate = stream_with(messages(0, 5), messages(5, 5), timeout_ms=50)
    assert next(stream).offset == 0
    batches = stream.batches()
    first = next(batches)
    assert [m.offset for m in first] == [1, 2, 3, 4]
    assert stream.positions == {TP: 1}
    second = next(batches)
    assert [m.offset for m in second] == [5, 6, 7, 8, 9]
    assert type(first) is list and type(second) is list, "users are handed lists"
    assert stream.positions == {TP: 5}


def test_arrow_batches_hand_out_the_same_records_and_count_them_as_batches_do():
    pa = pytest.importorskip("pyarrow")
    with_headers = [Message("t", 0, 5, b"k", None, 1_700_000_000_123, (("h", b"1"), ("e", None))),
                    Message("t", 0, 6, None, b"v6", None, ())]
    stream, _claims, _gate = stream_with(messages(0, 5), with_headers, timeout_ms=50)
    assert next(stream).offset == 0
    batches = stream.arrow_batches()
    first = next(batches)
    assert first.num_rows == 4 and first.column("offset").to_pylist() == [1, 2, 3, 4]
    assert first.column("value").to_pylist() == [b"v1", b"v2", b"v3", b"v4"]
    assert first.column("headers").to_pylist() == [[]] * 4
    assert stream.positions == {TP: 1}, "a batch counts when the next one is asked for"
    second = next(batches)
    assert stream.positions == {TP: 5}
    assert second.to_pylist() == [
        {"key": b"k", "value": None, "topic": "t", "partition": 0, "offset": 5,
         "timestamp": second.column("timestamp")[0].as_py(),
         "headers": [{"key": "h", "value": b"1"}, {"key": "e", "value": None}]},
        {"key": None, "value": b"v6", "topic": "t", "partition": 0, "offset": 6,
         "timestamp": None, "headers": []}]
    assert second.column("timestamp").cast(pa.int64())[0].as_py() == 1_700_000_000_123
    stream.mark_consumed()
    assert stream.positions == {TP: 7}


def test_a_chunk_whose_tuples_cannot_be_made_is_read_on_and_nothing_is_skipped(monkeypatch):
    """Out of memory while a chunk of columns becomes tuples: the consumer sees the error, and
    the same chunk is read on from its first message, then the next one."""
    stream, _claims, _gate = stream_with(messages(0, 5), messages(5, 5))

    def no_memory(_records):
        raise MemoryError("no memory for the tuples")

    monkeypatch.setattr(columns.RecordColumns, "messages", no_memory)
    with pytest.raises(MemoryError, match="no memory for the tuples"):
        next(stream)
    monkeypatch.undo()
    assert [m.offset for m in itertools.islice(stream, 8)] == list(range(8))
    assert stream.positions[TP] == 7


def test_a_failed_member_makes_iteration_raise_its_error():
    stream, _claims, gate = stream_with(timeout_ms=-1)
    gate.fail(ZkConsumerError("rebalance failed"))
    with pytest.raises(ZkConsumerError, match="rebalance failed"):
        next(stream)


def test_closing_ends_iteration_and_counts_the_message_in_hand():
    stream, _claims, _gate = stream_with(messages(0, 5))
    assert next(stream).offset == 0
    stream.close()
    assert list(stream) == []
    assert stream.positions == {TP: 1}

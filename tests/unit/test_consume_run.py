"""`zkconsumer consume`'s run loop: a message a stream has handed out is never dropped, and the
final commit comes after every message in hand was written (the fault runner found a run that
dropped one when a stop arrived between receiving and writing it)."""

from __future__ import annotations

import threading

import pytest
from support.member_state import holding
from support.memory_store import MemoryStore
from support.record_columns import fetched

from zkconsumer.member.committer import OffsetCommitter
from zkconsumer.member.streams import Chunk, KafkaStream
from zkconsumer.model import Message, TopicPartition
from zkconsumer.worker import ConsumeRun, HandlerError


class StopArrivesOnReceipt:
    """A stream whose 3rd message is received exactly as a stop is requested."""

    def __init__(self, stop: threading.Event) -> None:
        self.positions: dict = {}
        self.closed = threading.Event()
        self._stop = stop

    def __iter__(self):
        for offset in range(10):
            if self.closed.is_set():
                return
            self.positions[("t", 0)] = offset + 1
            if offset == 2:
                self._stop.set()
            yield Message("t", 0, offset, None, f"v{offset}".encode(), None)

    def mark_consumed(self) -> None:
        """Positions are recorded as messages are handed out here."""

    def close(self) -> None:
        self.closed.set()


class RecordingConnector:
    moved = None

    def __init__(self, written: list) -> None:
        self.written = written
        self.committed_after: list | None = None

    def shutdown(self, commit: bool = True) -> None:
        self.committed_after = list(self.written) if commit else None


def test_a_message_received_as_the_stop_arrives_is_written_before_the_commit(capsysbinary):
    stop = threading.Event()
    stream = StopArrivesOnReceipt(stop)
    written: list[bytes] = []
    connector = RecordingConnector(written)

    def write(message: Message) -> bytes:
        written.append(message.value)
        return message.value + b"\n"

    ConsumeRun(connector, [stream], write, None, None, stop).run()

    delivered = stream.positions[("t", 0)]
    assert written == [f"v{i}".encode() for i in range(delivered)], "a delivered message was dropped"
    assert connector.committed_after == written, "the commit came before a write"
    assert capsysbinary.readouterr().out.splitlines() == written


class ClosingConnector:
    """Shuts the real streams' committer down the way the connector does."""

    moved = None

    def __init__(self, committer) -> None:
        self.committer = committer
        self.final_commit: bool | None = None

    def shutdown(self, commit: bool = True) -> None:
        self.final_commit = commit
        if commit:
            self.committer.commit()


def test_an_auto_commit_while_the_handler_runs_does_not_commit_the_message_it_rejects(
        capsysbinary):
    tp = TopicPartition("t", 0)
    member = holding({tp: "c-0"})
    claims = member.claims
    stream = KafkaStream("s", 10, 5000, claims, member.gate)
    stream.offer(Chunk(tp, fetched([Message("t", 0, o, None, b"v", None) for o in range(5)]),
                       claims[tp]), lambda: True)
    store = MemoryStore()
    committer = OffsetCommitter(store, lambda: [stream], member)

    def handler(message: Message) -> None:
        if message.offset == 2:
            committer.commit()  # the auto-commit thread's tick, while offset 2 is handled
            raise ValueError("rejected")

    connector = ClosingConnector(committer)
    with pytest.raises(HandlerError, match="offset 2"):
        ConsumeRun(connector, [stream], lambda m: b"", handler, None,
                   threading.Event()).run()
    assert store.offsets == {tp: 2}, "offset 2 was committed although its handler failed"
    assert connector.final_commit is False


class FencedConnector:
    """A member whose streams a fence ended: `moved` says so once they end."""

    def __init__(self, moved) -> None:
        self.moved = moved
        self.member_metrics = object()
        self.shut_down = False

    def shutdown(self, commit: bool = True) -> None:
        self.shut_down = commit


class Listed:
    """A stream of these messages, then its end (as a fence ends a stream)."""

    def __init__(self, values: list[bytes]) -> None:
        self._messages = iter([Message("t", 0, i, None, v, None) for i, v in enumerate(values)])

    def __iter__(self):
        return self._messages

    def mark_consumed(self) -> None:
        pass

    def close(self) -> None:
        pass


class OneHop:
    """A follower that opens one more member after the first one drained."""

    def __init__(self, following) -> None:
        self.following = following
        self.asked: list = []

    def after(self, moved, metrics):
        self.asked.append((moved, metrics))
        following, self.following = self.following, None
        return following


def test_a_run_goes_on_with_the_member_its_follower_opens_once_a_fence_ended_the_first(
        capsysbinary):
    first = FencedConnector(moved="the fence")
    second = FencedConnector(moved=None)
    handled: list[bytes] = []
    follower = OneHop((second, [Listed([b"b0", b"b1"])]))
    run = ConsumeRun(first, [Listed([b"a0"])], None, lambda m: handled.append(m.value), None,
                     threading.Event(), follower)
    run.run()
    assert handled == [b"a0", b"b0", b"b1"]
    assert run.consumed == 3
    assert first.shut_down and second.shut_down, "each member left (and drained) in turn"
    assert follower.asked == [("the fence", first.member_metrics)], \
        "the next member counts in the first one's metrics"
    assert run.connector is second


def test_a_fenced_run_with_nothing_to_follow_ends():
    first = FencedConnector(moved="the fence")
    run = ConsumeRun(first, [Listed([b"a0"])], None, None, None, threading.Event(), OneHop(None))
    run.run()
    assert first.shut_down and run.connector is first

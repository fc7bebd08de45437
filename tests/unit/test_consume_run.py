"""`zkconsumer consume`'s run loop: a message a stream has handed out is never dropped, and the
final commit comes after every message in hand was written (the fault runner found a run that
dropped one when a stop arrived between receiving and writing it)."""

from __future__ import annotations

import threading

from zkconsumer.cli.consume_command import ConsumeRun
from zkconsumer.model import Message


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

    def close(self) -> None:
        self.closed.set()


class RecordingConnector:
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

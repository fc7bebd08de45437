"""SIGINT and SIGTERM for the commands that run until stopped (`consume`, `demo`, `exporter`)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

from zkconsumer.logs import get_logger
from zkconsumer.member.connector import SHUTDOWN_TIMEOUT_S
from zkconsumer.worker import STREAMS_STOP_S

log = get_logger(__name__)
# A SIGINT or SIGTERM ends the process within this many seconds, whatever ZooKeeper and Kafka
# do: the streams' threads get `STREAMS_STOP_S` to finish the message in hand, the connector
# `SHUTDOWN_TIMEOUT_S` to commit and leave, and the last second is for exiting; a process still
# running after that (stuck while starting, say, in a connection attempt) says so in one line
# and exits with status 1.
STOP_TIMEOUT_S = STREAMS_STOP_S + SHUTDOWN_TIMEOUT_S + 1.0


@contextlib.contextmanager
def stop_on_signals(timeout_s: float = STOP_TIMEOUT_S) -> Iterator[threading.Event]:
    """SIGINT/SIGTERM set the event instead of killing the process, so a run ends cleanly
    (final commit, release, deregister) even when the signal arrives while it is starting; and
    the first one arms a deadline, so the process ends within `timeout_s` even where a clean end
    cannot be had (a ZooKeeper without quorum, a broker that does not answer)."""
    requested = threading.Event()

    def on_signal(signum, _frame) -> None:
        if not requested.is_set():
            requested.set()
            _exit_after(timeout_s, signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield requested
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _exit_after(timeout_s: float, signal_name: str) -> None:
    """Not cancelled once armed: an exit held up after the run (by a thread that does not
    end) is bounded too."""
    def give_up() -> None:
        log.error(f"did not stop within {timeout_s:g}s of {signal_name}; exiting now without "
                  "a clean stop (the next owners resume from the last commit)")
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(1)

    timer = threading.Timer(timeout_s, give_up)
    timer.daemon = True
    timer.start()

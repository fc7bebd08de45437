"""A `--handler` for workers under test: it notes when each message was handed to the
application, and it can be made slow on demand.

The fault runner judges "no partition delivered by two members at once" from these times (the
records a worker prints say what it delivered, not when). Each line is `partition offset
unix-time`, written unbuffered as the message is handed over, so a worker killed a moment later
has already told of it. The file is named by `ZKCONSUMER_DELIVERY_LOG`.

A slow application is one message that takes long: when a file named as the log plus `.slow`
appears, holding a number of seconds, the next message takes that long (the file is removed
first, so whoever wrote it can tell that the pause began). A steadily slow one takes
`ZKCONSUMER_DELIVERY_DELAY_S` seconds over every message, so that what it fetched waits in its
queue; or, made slow on demand, as many seconds as a file named as the log plus `.delay` holds,
for as long as the file is there.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import BinaryIO

from zkconsumer.model import Message

ENVIRONMENT_VARIABLE = "ZKCONSUMER_DELIVERY_LOG"
DELAY_VARIABLE = "ZKCONSUMER_DELIVERY_DELAY_S"
SLOW_SUFFIX = ".slow"
STEADY_SUFFIX = ".delay"

_log: BinaryIO | None = None


def record(message: Message) -> None:
    global _log
    if _log is None:
        _log = open(os.environ[ENVIRONMENT_VARIABLE], "ab", buffering=0)  # noqa: SIM115
    _log.write(f"{message.partition} {message.offset} {time.time():.6f}\n".encode())
    _slow_down(Path(_log.name + SLOW_SUFFIX))
    delay = float(os.environ.get(DELAY_VARIABLE) or 0) or _seconds_in(
        Path(_log.name + STEADY_SUFFIX))
    if delay:
        time.sleep(delay)


def _slow_down(trigger: Path) -> None:
    seconds = _seconds_in(trigger)
    if seconds:
        trigger.unlink(missing_ok=True)
        time.sleep(seconds)


def _seconds_in(path: Path) -> float:
    """The seconds a trigger file holds; 0 without one (or one being written)."""
    try:
        return float(path.read_text())
    except (OSError, ValueError):
        return 0.0


def read_delivery_times(path: Path) -> list[tuple[int, int, float]]:
    """(partition, offset, time) per delivery, in the order handed out; a line cut short by a
    kill is not one."""
    if not path.exists():
        return []
    deliveries = []
    for line in path.read_bytes().splitlines():
        fields = line.split()
        if len(fields) != 3:
            continue
        try:
            deliveries.append((int(fields[0]), int(fields[1]), float(fields[2])))
        except ValueError:
            continue
    return deliveries

"""Logging a condition that repeats: one line when it starts, one summary when it ends.

A loop that meets the same obstacle on every turn (an auto commit skipped every interval for a
whole ZooKeeper outage) would otherwise log the same line twice a second; the interesting facts
are when it began, when it ended, and how often it happened in between.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class RepeatedCondition:
    """`occurred()` on every turn that meets the condition, `cleared()` on every turn that does
    not; only the first of a run and its end are logged (the end at info, with `times` and
    `lasted_s`). From any thread."""

    def __init__(self, logger: Any, started: str, ended: str, *, level: str = "warning",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._log = logger
        self._started = started
        self._ended = ended
        self._level = level
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None
        self._times = 0

    @property
    def active(self) -> bool:
        with self._lock:
            return self._since is not None

    def occurred(self, **fields: Any) -> None:
        with self._lock:
            self._times += 1
            if self._since is not None:
                return
            self._since = self._clock()
        getattr(self._log, self._level)(self._started, **fields)

    def cleared(self, **fields: Any) -> None:
        with self._lock:
            if self._since is None:
                return
            lasted, times = self._clock() - self._since, self._times
            self._since, self._times = None, 0
        self._log.info(self._ended, times=times, lasted_s=round(lasted, 1), **fields)

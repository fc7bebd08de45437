"""Logging a condition that repeats, without flooding the log.

A loop that meets the same obstacle on every turn (an auto commit skipped every interval for a
whole ZooKeeper outage, a partition retried every `refresh.leader.backoff.ms`) would otherwise
log the same line twice a second. Two policies: `RepeatedCondition` for one condition with a
clear end (one line when it starts, one summary when it ends), `RetryWarnings` for many keyed
conditions that come and go between retries (a warning when one starts, then at most one every
`WARN_EVERY_S`, or only the first for conditions that last until someone fixes them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

WARN_EVERY_S = 30.0


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


class RetryWarnings:
    """Warns when a condition starts, then at most every `every_s` (30 s) while it lasts or
    keeps coming back; the repeats go to debug. Something retried every
    `refresh.leader.backoff.ms` must show in the log, not flood it, also when it clears and
    returns between retries. With `every_s` infinite each condition is warned about once: one
    that stays until someone fixes it (a registration that does not parse, met at every scan)
    has nothing new to say later."""

    def __init__(self, logger: Any, clock: Callable[[], float] = time.monotonic, *,
                 every_s: float = WARN_EVERY_S) -> None:
        self._log = logger
        self._clock = clock
        self._every_s = every_s
        self._warned_at: dict[Hashable, float] = {}

    def report(self, condition: Hashable, event: str, **fields: Any) -> bool:
        """Log `event` for this condition; True when it went out as a warning."""
        now = self._clock()
        self._warned_at = {key: at for key, at in self._warned_at.items()
                           if now - at < self._every_s}
        if condition in self._warned_at:
            self._log.debug(event, **fields)
            return False
        self._warned_at[condition] = now
        self._log.warning(event, **fields)
        return True

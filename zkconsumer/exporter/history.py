"""The sliding window of each group partition's observations, kept between scans (pure state).

One scan adds one observation per partition it saw; a partition or group not seen in a scan
is forgotten, so a deleted group does not linger in the metrics and a re-created one starts a
fresh window.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from zkconsumer.exporter.status import Observation, WindowRules
from zkconsumer.model import TopicPartition

Key = tuple[str, TopicPartition]  # (group, partition)


class OffsetHistory:
    def __init__(self, rules: WindowRules) -> None:
        self.rules = rules
        self._windows: dict[Key, deque[Observation]] = {}

    def record(self, observed_at: float,
               seen: Mapping[Key, tuple[int, int, float | None]]) -> None:
        """One scan: for each key, (committed offset, log end, when the offset was written if
        known). An offset with no known write time is dated by when it was first seen at that
        value, which never makes it look older than it is."""
        windows: dict[Key, deque[Observation]] = {}
        for key, (offset, log_end, committed_at) in seen.items():
            window = self._windows.get(key) or deque(maxlen=self.rules.samples)
            if committed_at is None:
                committed_at = _first_seen(window, offset, observed_at)
            window.append(Observation(observed_at, offset, log_end, committed_at))
            windows[key] = window
        self._windows = windows

    def window(self, key: Key) -> tuple[Observation, ...]:
        return tuple(self._windows.get(key, ()))


def _first_seen(window: deque[Observation], offset: int, now: float) -> float:
    if window and window[-1].offset == offset and window[-1].committed_at is not None:
        return window[-1].committed_at
    return now

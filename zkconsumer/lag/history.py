"""The sliding window of each group partition's observations, kept between scans (pure state).

One scan adds one observation per partition it saw; a partition or group not seen in a scan
is forgotten, so a deleted group does not linger in the metrics and a re-created one starts a
fresh window.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from zkconsumer.lag.status import Observation, WindowRules
from zkconsumer.model import TopicPartition

Key = tuple[str, TopicPartition]  # (group, partition)


class OffsetHistory:
    def __init__(self, rules: WindowRules) -> None:
        self.rules = rules
        self._windows: dict[Key, deque[Observation]] = {}

    def record(self, observed_at: float,
               seen: Mapping[Key, tuple[int, int, float | None]]) -> None:
        """One scan: for each key, (committed offset, log end, the znode's mtime if ZooKeeper
        holds that offset). An offset is dated once, when first seen at its value: by the mtime
        if this is the partition's first observation (bounded by the scan's own time), else by
        this scan, so a change never looks older than it is and clocks matter only at start."""
        windows: dict[Key, deque[Observation]] = {}
        for key, (offset, log_end, written_at) in seen.items():
            window = self._windows.get(key) or deque(maxlen=self.rules.samples)
            if window and window[-1].offset == offset:
                committed_at = window[-1].committed_at
            elif not window and written_at is not None:
                committed_at = min(written_at, observed_at)
            else:
                committed_at = observed_at
            window.append(Observation(observed_at, offset, log_end, committed_at))
            windows[key] = window
        self._windows = windows

    def window(self, key: Key) -> tuple[Observation, ...]:
        return tuple(self._windows.get(key, ()))

"""The sliding window of each group partition's observations, kept between scans (pure state).

A window is the partition's last `samples` scans. A scan adds one observation per partition it
read an offset for; a partition of a scanned group that it read none for this time (its offset
znode does not parse, it says there is no offset, no log end) leaves that scan's place in the
window empty and keeps the rest, so the next good offset is still compared with the last one (a
rewind across a malformed write is seen). A window left with nothing but empty places is
forgotten, and so is every window of a group the scan did not see: a deleted group does not
linger in the metrics and a re-created one starts a fresh window.

Beside the window, each partition keeps its last `samples` commits seen, as Burrow keeps a ring
of `intervals` commits and takes them: an offset seen arriving is a commit, and so is the same
offset written again (its znode's mtime changed; the stat comes with the same read), since a
consumer that rewrites an offset it does not move is there and stalled, not silent. The status
rules measure a silence against these commits and call commits of one offset a stall (see
`status`). A scan sees at most one commit a partition, the last one written before it: that
is the exporter's min-distance. Burrow's own (a commit closer than it to the last one kept
takes that one's place, at its time) is not applied on top: with a min-distance below the
scan interval, Burrow keeps every commit a scan sees, and merging them would drop some.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from zkconsumer.lag.status import Commit, Observation, WindowRules
from zkconsumer.model import TopicPartition

Key = tuple[str, TopicPartition]  # (group, partition)


@dataclass
class _Track:
    scans: deque[Observation | None]  # one place per scan; None where it read no offset
    commits: deque[Commit]  # the last commits seen, as Burrow's ring keeps them
    mtime: float | None = None  # the offset znode's mtime when last read

    def last(self) -> Observation | None:
        return next((seen for seen in reversed(self.scans) if seen is not None), None)


class OffsetHistory:
    def __init__(self, rules: WindowRules) -> None:
        self.rules = rules
        self._tracks: dict[Key, _Track] = {}

    def record(self, observed_at: float, seen: Mapping[Key, tuple[int, int, float | None]],
               groups: Collection[str]) -> None:
        """One scan of `groups`: for each key read, (committed offset, log end, the znode's
        mtime if ZooKeeper holds that offset). A commit is dated when first seen: by the
        mtime, bounded by the scans (never before the last one that saw the partition, never
        after this one), so a commit never looks older than it is and the ZooKeeper server's
        clock counts only within one interval, or at the partition's first observation; one
        without an mtime (only Kafka holds it) by this scan, and only when its value changed."""
        tracks: dict[Key, _Track] = {}
        kept = {key for key in self._tracks if key[0] in groups}
        for key in kept | seen.keys():
            track = self._tracks.get(key) or _Track(deque(maxlen=self.rules.samples),
                                                    deque(maxlen=self.rules.samples))
            if key in seen:
                track.scans.append(self._observe(track, observed_at, *seen[key]))
            else:
                track.scans.append(None)
            if track.last() is not None:
                tracks[key] = track
        self._tracks = tracks

    def window(self, key: Key) -> tuple[Observation, ...]:
        """The observations of the window, oldest first, without its empty places."""
        track = self._tracks.get(key)
        return () if track is None else tuple(seen for seen in track.scans if seen is not None)

    def read_last_scan(self, key: Key) -> bool:
        """Whether the last scan read an offset for the partition."""
        track = self._tracks.get(key)
        return track is not None and track.scans[-1] is not None

    def commits(self, key: Key) -> tuple[Commit, ...]:
        """The partition's last `samples` commits seen, oldest first."""
        track = self._tracks.get(key)
        return () if track is None else tuple(track.commits)

    @staticmethod
    def _observe(track: _Track, observed_at: float, offset: int, log_end: int,
                 written_at: float | None) -> Observation:
        last = track.last()
        rewritten = written_at is not None and track.mtime is not None \
            and written_at != track.mtime
        if written_at is not None:
            track.mtime = written_at
        if last is not None and last.offset == offset and not rewritten:
            return Observation(observed_at, offset, log_end, last.committed_at)
        if last is not None:
            # Written after the scan that last saw the partition, by this one at the latest:
            # the mtime within those bounds, so clock skew costs at most an interval.
            committed_at = observed_at if written_at is None else min(
                max(written_at, last.observed_at), observed_at)
        elif written_at is not None:
            committed_at = min(written_at, observed_at)
        else:  # only Kafka holds it: when it was written is unknown, so it dates no commit
            return Observation(observed_at, offset, log_end, observed_at)
        track.commits.append(Commit(committed_at, offset, max(0, log_end - offset)))
        return Observation(observed_at, offset, log_end, committed_at)

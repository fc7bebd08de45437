"""An in-memory offset store for unit tests of what sits on top of the real ones."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from zkconsumer.model import TopicPartition
from zkconsumer.offsets import OffsetStoreError


class MemoryStore:
    """Keeps offsets in a dict and every call in `journal`; `fail_commit` / `fail_fetch` make
    its calls raise as a store that is down does. `refresh` is kept apart, so tests can tell a
    re-commit of unchanged offsets from a new commit."""

    def __init__(self, name: str = "memory", journal: list | None = None, offsets=None,
                 fail_commit: bool = False, fail_fetch: bool = False) -> None:
        self.name = name
        self.offsets = dict(offsets or {})
        self.journal = journal if journal is not None else []
        self.fail_commit = fail_commit
        self.fail_fetch = fail_fetch
        self.commits: list[dict] = []
        self.refreshes: list[dict] = []
        self.closed = False

    def fetch(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        if self.fail_fetch:
            raise OffsetStoreError(f"{self.name} is down")
        return {tp: self.offsets[tp] for tp in partitions if tp in self.offsets}

    def commit(self, offsets: Mapping[TopicPartition, int], *,
               refresh: Mapping[TopicPartition, int] | None = None, retry: bool = True,
               owners=None) -> None:
        self.journal.append(self.name)
        if self.fail_commit:
            raise OffsetStoreError(f"{self.name} is down")
        self.commits.append(dict(offsets))
        self.refreshes.append(dict(refresh or {}))
        self.offsets.update(offsets)

    def close(self) -> None:
        self.journal.append(f"close {self.name}")
        self.closed = True

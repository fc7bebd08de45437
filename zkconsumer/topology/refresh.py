"""Periodic metadata checks standing in for the registry watches, where Kafka metadata is the
source of topics.

A ZooKeeper member hears of a new partition or topic through a watch; with Kafka metadata there
is nothing to watch, so a thread compares a fresh view with the one the last rebalance used,
every `topic.metadata.refresh.interval.ms`, and reports a change as a watch would. The baseline
is the rebalance's view, not the previous poll's: a change seen by a poll but not yet
rebalanced on is reported again at the next poll, until a rebalance has taken it in.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection

from zkconsumer.errors import ZkConsumerError
from zkconsumer.logs import get_logger
from zkconsumer.topology.sources import TopicSource, TopicView

log = get_logger(__name__)

Interest = tuple[bool, Collection[str]]  # (whether a filter subscribes, the topics subscribed)


def interest_fingerprint(view: TopicView, wildcard: bool, topics: Collection[str]) -> tuple:
    """What of a view can change a rebalance's outcome: the partitions of the subscribed
    topics, and, for a filter, which topics exist. Other topics changing changes nothing."""
    return (frozenset(view.all_topics) if wildcard else None,
            tuple((topic, tuple(view.partitions(topic) or ())) for topic in sorted(topics)))


class MetadataRefresher:
    """A daemon thread; `stop()` ends it, after the check under way if there is one."""

    def __init__(self, source: TopicSource, interval_s: float,
                 interest: Callable[[], Interest], baseline: Callable[[], TopicView | None],
                 on_change: Callable[[], None]) -> None:
        self._source = source
        self._interval_s = interval_s
        self._interest = interest
        self._baseline = baseline
        self._on_change = on_change
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="zkconsumer-metadata",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop and wait for a check under way, so none runs once the source is closed."""
        self._stopped.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def check(self) -> bool:
        """One comparison; True when it reported a change."""
        baseline = self._baseline()
        if baseline is None:
            return False  # no rebalance yet: the first one reads fresh metadata anyway
        wildcard, topics = self._interest()
        fresh = self._source.view()
        if interest_fingerprint(fresh, wildcard, topics) == \
                interest_fingerprint(baseline, wildcard, topics):
            return False
        log.info("topic metadata changed; rebalancing")
        self._on_change()
        return True

    def _run(self) -> None:
        while not self._stopped.wait(self._interval_s):
            try:
                self.check()
            except Exception as exc:  # noqa: BLE001 - a dead checker would miss every change
                log.warning("topic metadata check failed; retrying at the next interval",
                            error=str(exc) if isinstance(exc, ZkConsumerError) else repr(exc))

"""Telling the log that a member waits for topics that do not exist yet.

A member subscribed by name to a topic nobody created owns nothing and would only ever log
`claimed=0`; the reference said nothing either. Saying it once, and again at a slow interval,
makes the wait visible without flooding the log.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from zkconsumer.logs import get_logger
from zkconsumer.member.plan import GroupSnapshot

log = get_logger(__name__)

MISSING_TOPIC_REMINDER_S = 60.0


def missing_topics(snapshot: GroupSnapshot, consumer_id: str) -> list[str]:
    """Topics the member subscribed to by name that have no partitions: they do not exist
    (yet). A whitelist or blacklist only ever matches topics that exist."""
    registration = snapshot.members.get(consumer_id)
    if registration is None or registration.is_wildcard:
        return []
    return sorted(topic for topic in registration.subscription
                  if not snapshot.partitions_for_topic.get(topic))


class MissingTopicsNotice:
    """Says that the member waits for topics that do not exist, when that starts or changes and
    again every `interval_s` while it lasts: otherwise such a member only ever logs claimed=0.
    The topic's creation fires a watch that rebalances the member, which ends the wait."""

    def __init__(self, consumer_id: str, interval_s: float) -> None:
        self._consumer_id = consumer_id
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._missing: tuple[str, ...] = ()
        self._timer: threading.Timer | None = None

    def update(self, missing: Sequence[str]) -> None:
        with self._lock:
            if tuple(missing) == self._missing:
                return
            self._missing = tuple(missing)
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._missing:
                self._say_and_schedule()

    def _remind(self, timer: threading.Timer) -> None:
        with self._lock:
            if timer is self._timer:  # not cancelled while it fired
                self._say_and_schedule()

    def _say_and_schedule(self) -> None:
        log.warning("waiting for subscribed topics to be created", topics=list(self._missing),
                    consumer_id=self._consumer_id, again_every_s=self._interval_s)
        timer = threading.Timer(self._interval_s, lambda: self._remind(timer))
        timer.daemon = True
        self._timer = timer
        timer.start()

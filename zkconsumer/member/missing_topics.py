"""Telling the log that a member waits for topics that do not exist yet.

A member subscribed by name to a topic nobody created owns nothing and would only ever log
`claimed=0`; the reference said nothing either. Saying it once, and again at a slow interval,
makes the wait visible without flooding the log.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from zkconsumer.logs import get_logger
from zkconsumer.member.plan import GroupSnapshot

log = get_logger(__name__)

MISSING_TOPIC_REMINDER_S = 60.0

# `schedule(delay_s, action)` runs `action` once after `delay_s` and returns what cancels it. The
# notice is given one so that tests fire its reminders themselves instead of sleeping through
# them.
Schedule = Callable[[float, Callable[[], None]], Callable[[], None]]


def start_timer(delay_s: float, action: Callable[[], None]) -> Callable[[], None]:
    """A daemon timer thread: a reminder still due never holds the process at exit."""
    timer = threading.Timer(delay_s, action)
    timer.daemon = True
    timer.start()
    return timer.cancel


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

    def __init__(self, consumer_id: str, interval_s: float = MISSING_TOPIC_REMINDER_S,
                 schedule: Schedule = start_timer) -> None:
        self._consumer_id = consumer_id
        self._interval_s = interval_s
        self._schedule = schedule
        self._lock = threading.Lock()
        self._missing: tuple[str, ...] = ()
        self._due: object | None = None  # the reminder still wanted, if any
        self._cancel: Callable[[], None] | None = None

    def update(self, missing: Sequence[str]) -> None:
        with self._lock:
            if tuple(missing) == self._missing:
                return
            self._missing = tuple(missing)
            if self._cancel is not None:
                self._cancel()
                self._cancel = self._due = None
            if self._missing:
                self._say_and_schedule()

    def _remind(self, reminder: object) -> None:
        with self._lock:
            if reminder is self._due:  # a cancel can come too late to stop one firing
                self._say_and_schedule()

    def _say_and_schedule(self) -> None:
        log.warning("waiting for subscribed topics to be created", topics=list(self._missing),
                    consumer_id=self._consumer_id, again_every_s=self._interval_s)
        reminder = self._due = object()
        self._cancel = self._schedule(self._interval_s, lambda: self._remind(reminder))

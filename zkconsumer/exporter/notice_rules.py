"""Which notifications a scan calls for, from each group's successive statuses (pure).

A group is in trouble while its status is at least the threshold (WARN by default, as Burrow's
notifiers; STOP, STALL and REWIND rank above it, OK below). An incident opens when a group
enters trouble and closes when it leaves it:

- entering trouble (OK, or first seen, to WARN, STOP, STALL, ...) sends an alert;
- a change of status within trouble (WARN to STALL) sends an alert with the new status, the
  incident staying the same one (same start, same id);
- leaving trouble sends one recovery, and so does a group that disappears from the scans
  (deleted) with an incident open, its status NOTFOUND: nothing is left to alert about, and a
  receiver must not keep an incident open for a group that no longer exists;
- nothing is sent while a status holds, unless a re-send interval is set (Burrow's `interval`):
  then the alert is sent again each time that long has passed since the last one.

Only scans that worked come here (a failed scan publishes nothing), so a group is "gone" only
when a good scan no longer lists it. The state is in memory: after a restart, a group still in
trouble is alerted again once its window has judged it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

from zkconsumer.lag.report import GroupReport
from zkconsumer.lag.status import Status


class Event(enum.Enum):
    ALERT = "alert"
    RECOVERY = "recovery"


@dataclass(frozen=True)
class Notice:
    """One notification to send. `previous` is the status the scan before saw (NOTFOUND for a
    group seen for the first time); `since` is when the incident opened; `report` is the scan's
    report of the group, None when the group is gone."""

    event: Event
    group: str
    status: Status
    previous: Status
    since: float
    at: float
    report: GroupReport | None


@dataclass(frozen=True)
class NoticeRules:
    threshold: Status = Status.WARN
    resend_s: float | None = None  # None: an alert is sent once per status
    groups: re.Pattern[str] | None = None  # only groups whose whole name matches

    def __post_init__(self) -> None:
        if self.threshold <= Status.OK:
            raise ValueError(f"the alert threshold must be above OK, got {self.threshold.name}")
        if self.resend_s is not None and not self.resend_s > 0:
            raise ValueError(f"a re-send interval must be positive, got {self.resend_s}")

    def in_trouble(self, status: Status) -> bool:
        return status >= self.threshold

    def watches(self, group: str) -> bool:
        return self.groups is None or self.groups.fullmatch(group) is not None


@dataclass
class _Incident:
    status: Status
    since: float
    sent_at: float


class NoticeState:
    """The notifier's memory between scans: each watched group's last status and its open
    incident, if any. `step` takes a scan and returns what to send for it."""

    def __init__(self, rules: NoticeRules) -> None:
        self.rules = rules
        self._seen: dict[str, Status] = {}
        self._open: dict[str, _Incident] = {}

    def step(self, reports: Iterable[GroupReport], now: float) -> list[Notice]:
        notices: list[Notice] = []
        seen: dict[str, Status] = {}
        for report in sorted(reports, key=lambda r: r.group):
            if not self.rules.watches(report.group):
                continue
            seen[report.group] = report.status
            notice = self._judge(report.group, report.status, report, now)
            if notice is not None:
                notices.append(notice)
        for group in sorted(set(self._open) - set(seen)):
            notice = self._judge(group, Status.NOTFOUND, None, now)
            if notice is not None:
                notices.append(notice)
        self._seen = seen
        return notices

    def _judge(self, group: str, status: Status, report: GroupReport | None,
               now: float) -> Notice | None:
        previous = self._seen.get(group, Status.NOTFOUND)
        incident = self._open.get(group)
        if not self.rules.in_trouble(status):
            if incident is None:
                return None
            del self._open[group]
            return Notice(Event.RECOVERY, group, status, previous, incident.since, now, report)
        if incident is None:
            self._open[group] = _Incident(status, now, now)
            return Notice(Event.ALERT, group, status, previous, now, now, report)
        resend_due = (self.rules.resend_s is not None
                      and now - incident.sent_at >= self.rules.resend_s)
        if status == incident.status and not resend_due:
            return None
        incident.status, incident.sent_at = status, now
        return Notice(Event.ALERT, group, status, previous, incident.since, now, report)

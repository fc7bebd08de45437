"""Notifications of group status changes, POSTed to a URL by a thread of their own.

The scan thread only decides (`NoticeState`), fills the bodies and puts them on a bounded
queue; a sender thread POSTs them one by one. So a receiver that is slow or down never delays a
scan: when the queue is full a notification is dropped, counted and logged (at most once every
30 s), and the scans go on. Each notification gets a bounded number of attempts, further apart
each time; an answer 2xx is delivered, a 5xx, a 429 or no answer is tried again, any other
answer (a 4xx: the receiver refuses this body; a redirect, not followed) is not.
"""

from __future__ import annotations

import http.client
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client import Counter

from zkconsumer.exporter.notice_body import BodyTemplate
from zkconsumer.exporter.notice_rules import Notice, NoticeRules, NoticeState
from zkconsumer.lag.report import GroupReport
from zkconsumer.logs import get_logger, url_shown
from zkconsumer.throttled_log import RetryWarnings

log = get_logger(__name__)

QUEUE_SIZE = 1000
ATTEMPTS = 4
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0

# (url, body, content type, timeout) -> the HTTP status; OSError (or http.client's
# HTTPException) when nothing answered, ValueError for a request that cannot be made.
Post = Callable[[str, bytes, str, float], int]


@dataclass(frozen=True)
class NotifySettings:
    url: str
    template: BodyTemplate
    rules: NoticeRules
    cluster: str = "local"
    content_type: str = "application/json"
    timeout_s: float = 5.0
    attempts: int = ATTEMPTS


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not followed: urllib would repeat a POST as a GET without its
    body, and a receiver answering that would count as delivered."""

    def redirect_request(self, *_args, **_kwargs) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def http_post(url: str, body: bytes, content_type: str, timeout_s: float) -> int:
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": content_type})
    try:
        with _opener.open(request, timeout=timeout_s) as response:
            # The status is the answer; its body is not read, so a receiver that streams or
            # drips one cannot hold the one sender thread while notifications queue up.
            return response.status
    except urllib.error.HTTPError as answer:
        answer.close()
        return answer.code


def retried(status: int) -> bool:
    """An answer worth another attempt: the receiver failed or asked to slow down."""
    return status >= 500 or status == 429


def backoff_s(attempt: int) -> float:
    """The wait after the `attempt`th failed attempt (1, 2, 4, ... up to 30 s)."""
    return min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2 ** (attempt - 1))


@dataclass(frozen=True)
class _Outgoing:
    notice: Notice
    body: bytes


class Notifier:
    """`scan_done` after each good scan (never blocks); `start` and `stop` the sender.
    `notifications` is the counter to serve with the exporter's metrics."""

    def __init__(self, settings: NotifySettings, *, post: Post = http_post,
                 clock: Callable[[], float] = time.monotonic,
                 queue_size: int = QUEUE_SIZE) -> None:
        self.settings = settings
        self._state = NoticeState(settings.rules)
        self._post = post
        self._queue: queue.Queue[_Outgoing | None] = queue.Queue(maxsize=queue_size)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._warnings = RetryWarnings(log, clock)
        self.notifications = Counter(
            "zkconsumer_exporter_notifications", "Notifications of group status changes, by "
            "event and result (sent, failed: refused or out of attempts, dropped: the queue "
            "was full).", ["event", "result"], registry=None)

    def scan_done(self, reports: Iterable[GroupReport], now: float) -> None:
        """Decide what this scan calls for and queue it; a full queue drops, never waits."""
        for notice in self._state.step(reports, now):
            outgoing = _Outgoing(notice, self.settings.template.render(notice,
                                                                       self.settings.cluster))
            try:
                self._queue.put_nowait(outgoing)
            except queue.Full:
                self._count(notice, "dropped")
                self._warnings.report("queue full", "a notification was dropped: the queue "
                                      "of those not yet sent is full", group=notice.group,
                                      notice=notice.event.value, queued=self._queue.maxsize)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._send_loop, name="zkconsumer-notifier",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ends the sender after the POST under way; what is still queued is not sent."""
        self._stopping.set()
        try:
            self._queue.put_nowait(None)
        except queue.Full:
            pass  # the sender sees `_stopping` after its current notification
        if self._thread is not None:
            self._thread.join(timeout_s)
        left = 0
        while not self._queue.empty():
            left += self._queue.get_nowait() is not None
        if left:
            log.warning("notifications not sent at shutdown", count=left)

    def deliver(self, notice: Notice, body: bytes,
                wait: Callable[[float], bool] | None = None) -> bool:
        """POST one notification, with up to `attempts` attempts; True once delivered.
        `wait(seconds)` sleeps between attempts and returns True to give up (the stop)."""
        wait = wait or self._stopping.wait
        settings = self.settings
        problem = ""
        for attempt in range(1, settings.attempts + 1):
            try:
                status = self._post(settings.url, body, settings.content_type,
                                    settings.timeout_s)
            except (OSError, http.client.HTTPException) as exc:  # no answer: try again
                status, problem = 0, f"{type(exc).__name__}: {exc}"
            except ValueError as exc:  # a URL or header http.client refuses: no try can do
                problem = f"{type(exc).__name__}: {exc}"
                break
            else:
                problem = f"HTTP {status}"
            if 200 <= status < 300:
                self._count(notice, "sent")
                log.info("notification sent", group=notice.group, notice=notice.event.value,
                         status=notice.status.name, attempts=attempt)
                return True
            if status and not retried(status):
                break
            if attempt < settings.attempts and wait(backoff_s(attempt)):
                break
        self._count(notice, "failed")
        self._warnings.report(("failed", settings.url), "a notification could not be sent",
                              url=url_shown(settings.url), group=notice.group,
                              notice=notice.event.value,
                              error=problem)
        return False

    def _send_loop(self) -> None:
        while not self._stopping.is_set():
            outgoing = self._queue.get()
            if outgoing is None:
                return
            self.deliver(outgoing.notice, outgoing.body)

    def _count(self, notice: Notice, result: str) -> None:
        self.notifications.labels(notice.event.value, result).inc()

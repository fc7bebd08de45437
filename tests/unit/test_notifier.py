"""Notifications of group status changes: which ones a scan calls for (every transition), their
bodies from the user's template, and the sender's bounded retries and never-blocking queue
(a fake POST and clock); the exporter's hook and the command's options around them."""

from __future__ import annotations

import http.server
import json
import re
import socket
import threading
import time

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest
from support.log_capture import captured_logs

from zkconsumer.cli import cli
from zkconsumer.exporter.notice_body import (
    DEFAULT_TEMPLATE,
    FIELDS,
    BodyTemplate,
    NotifyTemplateError,
)
from zkconsumer.exporter.notice_rules import Event, Notice, NoticeRules, NoticeState
from zkconsumer.exporter.notifier import (
    ATTEMPTS,
    Notifier,
    NotifySettings,
    backoff_s,
    http_post,
)
from zkconsumer.exporter.service import ExporterSettings, LagExporter
from zkconsumer.lag.report import GroupReport, GroupState, PartitionReport, ZookeeperOffset
from zkconsumer.lag.status import Status, WindowRules
from zkconsumer.logs import url_shown
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import GroupOffsets

BAD = [Status.WARN, Status.STOP, Status.STALL, Status.REWIND]


def partition(status: Status, lag: int | None = 5, number: int = 0,
              owner: str | None = "m-0") -> PartitionReport:
    return PartitionReport("t", number, 10, None, 10 + (lag or 0), lag, owner, status, (), 1.0)


def report(group: str, status: Status) -> GroupReport:
    """A group of two partitions: the first with `status`, the second OK and caught up."""
    return GroupReport(group, 1, (partition(status, 7), partition(Status.OK, 0, 1)), status, 1.0)


def steps(state: NoticeState, *scans: dict[str, Status]) -> list[list[tuple]]:
    """Each scan's notices as (event, group, status, previous), scans 10 s apart."""
    return [[(n.event, n.group, n.status, n.previous)
             for n in state.step([report(g, s) for g, s in scan.items()], 10.0 * i)]
            for i, scan in enumerate(scans)]


ALERT, RECOVERY = Event.ALERT, Event.RECOVERY
OK, NOTFOUND = Status.OK, Status.NOTFOUND


# --- which notifications -------------------------------------------------------------------

def test_a_group_that_stays_ok_is_never_notified():
    assert steps(NoticeState(NoticeRules()), {"g": OK}, {"g": OK}) == [[], []]


@pytest.mark.parametrize("bad", BAD, ids=lambda s: s.name)
def test_ok_to_trouble_is_one_alert_and_back_to_ok_one_recovery(bad):
    state = NoticeState(NoticeRules())
    assert steps(state, {"g": OK}, {"g": bad}, {"g": bad}, {"g": bad}, {"g": OK}, {"g": OK}) == [
        [], [(ALERT, "g", bad, OK)], [], [], [(RECOVERY, "g", OK, bad)], []]


def test_a_group_first_seen_in_trouble_is_alerted_with_previous_notfound():
    assert steps(NoticeState(NoticeRules()), {"g": Status.STOP}) == [
        [(ALERT, "g", Status.STOP, NOTFOUND)]]


def test_a_change_within_trouble_alerts_again_in_the_same_incident():
    state = NoticeState(NoticeRules())
    notices = [state.step([report("g", s)], at) for at, s in
               ((0, OK), (10, Status.WARN), (20, Status.STALL), (30, OK))]
    assert [[(n.event, n.status, n.previous) for n in scan] for scan in notices] == [
        [], [(ALERT, Status.WARN, OK)], [(ALERT, Status.STALL, Status.WARN)],
        [(RECOVERY, OK, Status.STALL)]]
    assert {n.since for scan in notices for n in scan} == {10}, "one incident, one start"


def test_a_group_gone_in_trouble_is_recovered_as_notfound_and_one_gone_ok_is_not():
    state = NoticeState(NoticeRules())
    assert steps(state, {"bad": Status.STOP, "fine": OK}, {}, {}) == [
        [(ALERT, "bad", Status.STOP, NOTFOUND)], [(RECOVERY, "bad", NOTFOUND, Status.STOP)], []]
    gone = NoticeState(NoticeRules()).step([report("g", Status.STOP)], 0)
    assert gone[0].report is not None
    assert NoticeState(NoticeRules()).step([], 0) == []


def test_a_group_gone_and_back_in_trouble_is_a_new_incident():
    state = NoticeState(NoticeRules())
    assert steps(state, {"g": Status.STOP}, {}, {"g": Status.STOP}) == [
        [(ALERT, "g", Status.STOP, NOTFOUND)], [(RECOVERY, "g", NOTFOUND, Status.STOP)],
        [(ALERT, "g", Status.STOP, NOTFOUND)]]


def test_the_resend_interval_repeats_an_alert_while_it_holds():
    state = NoticeState(NoticeRules(resend_s=25))
    # Scans every 10 s: sent at 10, again at 40 (30 >= 25 since), at 70, then recovered.
    found = steps(state, {"g": OK}, *[{"g": Status.STALL}] * 7, {"g": OK})
    assert [len(scan) for scan in found] == [0, 1, 0, 0, 1, 0, 0, 1, 1]
    assert found[4] == [(ALERT, "g", Status.STALL, Status.STALL)]
    assert found[8] == [(RECOVERY, "g", OK, Status.STALL)]


def test_the_threshold_makes_statuses_below_it_count_as_ok():
    state = NoticeState(NoticeRules(threshold=Status.STOP))
    assert steps(state, {"g": Status.WARN}, {"g": Status.STALL}, {"g": Status.WARN}) == [
        [], [(ALERT, "g", Status.STALL, Status.WARN)], [(RECOVERY, "g", Status.WARN,
                                                          Status.STALL)]]


def test_only_groups_whose_whole_name_matches_are_watched():
    state = NoticeState(NoticeRules(groups=re.compile("orders-.*")))
    assert steps(state, {"orders-1": Status.STOP, "x-orders-2": Status.STOP}) == [
        [(ALERT, "orders-1", Status.STOP, NOTFOUND)]]


def test_rules_refuse_a_threshold_at_ok_and_a_resend_of_zero():
    with pytest.raises(ValueError, match="above OK"):
        NoticeRules(threshold=Status.OK)
    with pytest.raises(ValueError, match="positive"):
        NoticeRules(resend_s=0)


@given(st.lists(st.sampled_from([NOTFOUND, OK, *BAD]), max_size=30))
def test_alerts_and_recoveries_follow_the_status_changes_whatever_the_sequence(statuses):
    """NOTFOUND stands for a scan without the group. No re-send: an alert for each change
    into or within trouble, a recovery for each way out, and they alternate from an alert."""
    state = NoticeState(NoticeRules())
    events, expected = [], []
    last = NOTFOUND
    for at, status in enumerate(statuses):
        scan = [] if status == NOTFOUND else [report("g", status)]
        events += [n.event for n in state.step(scan, float(at))]
        if status in BAD and status != last:
            expected.append(ALERT)
        elif status not in BAD and last in BAD:
            expected.append(RECOVERY)
        last = status
    assert events == expected


# --- bodies --------------------------------------------------------------------------------

def alert(group: str = "g", status: Status = Status.STALL, since: float = 1_700_000_000.0,
          event: Event = ALERT) -> Notice:
    return Notice(event, group, status, OK, since, since + 60, report(group, status))


def test_the_default_body_is_json_with_every_field_and_the_partitions_in_trouble():
    body = json.loads(BodyTemplate(DEFAULT_TEMPLATE, json_escaped=True).render(alert(), "prod"))
    assert set(body) == set(FIELDS) - {"json"}
    assert body["event"] == "alert" and body["cluster"] == "prod" and body["group"] == "g"
    assert (body["status"], body["previous_status"]) == ("STALL", "OK")
    assert (body["total_lag"], body["max_lag"], body["partition_count"]) == (7, 7, 2)
    assert body["partitions"] == [{"topic": "t", "partition": 0, "status": "STALL", "lag": 7,
                                   "owner": "m-0"}]
    assert body["since"] == "2023-11-14T22:13:20+00:00"
    assert body["time"] == "2023-11-14T22:14:20+00:00"


def test_an_incidents_alert_and_recovery_share_an_id_the_next_incident_has_another():
    template = BodyTemplate("$id", json_escaped=False)
    first = template.render(alert(), "c")
    assert template.render(alert(status=OK, event=RECOVERY), "c") == first
    assert template.render(alert(since=1_700_000_500.0), "c") != first


def test_a_user_template_fills_fields_as_text():
    template = BodyTemplate("group ${group} is $status (was $previous_status), lag $total_lag; "
                            "$$5 for $partition_count", json_escaped=False)
    assert template.render(alert("orders"), "c") == (
        b"group orders is STALL (was OK), lag 7; $5 for 2")


def test_with_json_text_fields_are_escaped_so_the_body_stays_json():
    template = BodyTemplate('{"text": "$group is $status", "details": $json, '
                            '"partitions": $partitions}', json_escaped=True)
    body = json.loads(template.render(alert('odd "name"\\'), "c"))
    assert body["text"] == 'odd "name"\\ is STALL'
    assert body["details"]["group"] == 'odd "name"\\'
    assert body["partitions"][0]["status"] == "STALL"


def test_a_recovery_of_a_group_gone_has_no_lag_and_no_partitions():
    gone = Notice(RECOVERY, "g", NOTFOUND, Status.STOP, 0.0, 60.0, None)
    body = json.loads(BodyTemplate(DEFAULT_TEMPLATE, json_escaped=True).render(gone, "c"))
    assert (body["status"], body["total_lag"], body["partitions"]) == ("NOTFOUND", 0, [])


@pytest.mark.parametrize(("text", "error"), [
    ("group $grop", r"unknown field \$grop; the fields are event, id, cluster"),
    ("${status}\n{\"cost\": $5}", r"line 2: a '\$' that starts no field \(write \$\$"),
    ("${ group}", r"line 1: a '\$' that starts no field"),
])
def test_a_bad_template_is_one_named_error(text, error):
    with pytest.raises(NotifyTemplateError, match=error):
        BodyTemplate(text, json_escaped=False)


# --- sending -------------------------------------------------------------------------------

class FakePost:
    """Answers each POST with the next of `answers` (a status, or an exception to raise)."""

    def __init__(self, *answers) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, bytes, str, float]] = []
        self.called = threading.Event()

    def __call__(self, url, body, content_type, timeout_s):
        self.calls.append((url, body, content_type, timeout_s))
        self.called.set()
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def notifier(post: FakePost, queue_size: int = 100, clock=lambda: 0.0) -> Notifier:
    settings = NotifySettings("http://receiver/hook", BodyTemplate("$group $event",
                                                                   json_escaped=False),
                              NoticeRules(), "c", "text/plain", 2.5)
    return Notifier(settings, post=post, clock=clock, queue_size=queue_size)


def counted(sender: Notifier) -> str:
    """The sender's counter as the exporter serves it."""
    registry = CollectorRegistry()
    registry.register(sender.notifications)
    return generate_latest(registry).decode()


def test_a_failing_receiver_is_retried_with_growing_waits_until_it_answers():
    post = FakePost(503, ConnectionRefusedError("refused"), 200)
    sender, waits = notifier(post), []
    assert sender.deliver(alert(), b"body", lambda s: waits.append(s) or False)
    assert post.calls == [("http://receiver/hook", b"body", "text/plain", 2.5)] * 3
    assert waits == [backoff_s(1), backoff_s(2)] == [1.0, 2.0]
    assert 'zkconsumer_exporter_notifications_total{event="alert",result="sent"} 1.0' in (
        counted(sender))


def test_attempts_are_bounded_and_a_lost_notification_is_counted_and_warned():
    post = FakePost(TimeoutError("timed out"))
    sender, waits = notifier(post), []
    with captured_logs() as logs:
        assert not sender.deliver(alert(), b"body", lambda s: waits.append(s) or False)
    assert len(post.calls) == ATTEMPTS and waits == [1.0, 2.0, 4.0]
    warned = [line for line in logs if line["log_level"] == "warning"]
    assert [line["event"] for line in warned] == ["a notification could not be sent"]
    assert "TimeoutError: timed out" in warned[0]["error"]
    assert 'notifications_total{event="alert",result="failed"} 1.0' in counted(sender)


def test_a_refusal_other_than_5xx_or_429_is_not_retried_and_429_is():
    assert not notifier(post := FakePost(400)).deliver(alert(), b"", lambda s: False)
    assert len(post.calls) == 1
    assert notifier(post := FakePost(429, 204)).deliver(alert(), b"", lambda s: False)
    assert len(post.calls) == 2


def test_a_request_that_cannot_be_made_is_not_retried():
    post = FakePost(ValueError("URL can't contain control characters"))
    assert not notifier(post).deliver(alert(), b"", lambda s: False)
    assert len(post.calls) == 1


def test_a_stop_during_a_backoff_ends_the_attempts():
    post = FakePost(500)
    assert not notifier(post).deliver(alert(), b"", lambda s: True)
    assert len(post.calls) == 1


def test_backoff_doubles_up_to_its_cap():
    assert [backoff_s(n) for n in (1, 2, 3, 6, 7, 20)] == [1, 2, 4, 30, 30, 30]


def test_a_full_queue_drops_without_waiting_and_says_so_once_in_30_seconds():
    clock = [0.0]
    sender = notifier(FakePost(200), queue_size=2, clock=lambda: clock[0])  # not started
    scan = [report(f"g{i}", Status.STOP) for i in range(5)]
    done = threading.Event()

    def first_scan():
        sender.scan_done(scan, 0.0)
        done.set()

    with captured_logs() as logs:
        threading.Thread(target=first_scan, daemon=True).start()
        assert done.wait(5), "scan_done waited for room in the queue"
        clock[0] = 10.0
        scan += [report(f"h{i}", Status.STOP) for i in range(2)]
        sender.scan_done(scan, 10.0)
        clock[0] = 40.0
        sender.scan_done([*scan, report("k", Status.STOP)], 20.0)
    dropped = [line["group"] for line in logs if line["event"].startswith("a notification was "
                                                                          "dropped")]
    levels = [line["log_level"] for line in logs if line["event"].startswith("a notification")]
    assert dropped == ["g2", "g3", "g4", "h0", "h1", "k"]
    assert levels == ["warning", "debug", "debug", "debug", "debug", "warning"]
    assert 'notifications_total{event="alert",result="dropped"} 6.0' in counted(sender)


def test_the_sender_thread_posts_what_a_scan_queued_and_stops():
    post = FakePost(200)
    sender = notifier(post)
    sender.start()
    try:
        sender.scan_done([report("g", Status.STALL)], 0.0)
        assert post.called.wait(5)
    finally:
        sender.stop()
    assert post.calls[0][1] == b"g alert"


def test_http_post_answers_the_status_and_follows_no_redirect():
    received: list[tuple[str, str, bytes]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, self.headers["Content-Type"], body))
            code = int(self.path.strip("/"))
            self.send_response(code)
            if code == 302:
                self.send_header("Location", "/200")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        assert http_post(f"{base}/204", b'{"a": 1}', "application/json", 5) == 204
        assert http_post(f"{base}/503", b"x", "text/plain", 5) == 503
        assert http_post(f"{base}/302", b"x", "text/plain", 5) == 302
    finally:
        server.shutdown()
        server.server_close()
    assert received == [("/204", "application/json", b'{"a": 1}'), ("/503", "text/plain", b"x"),
                        ("/302", "text/plain", b"x")]
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed_port = unused.getsockname()[1]
    with pytest.raises(OSError):
        http_post(f"http://127.0.0.1:{closed_port}/", b"", "text/plain", 5)


# --- the exporter's hook and the command's options -----------------------------------------

class _OneGroup:
    def groups(self):
        return [GroupState("g", zookeeper_offsets={TopicPartition("t", 0): ZookeeperOffset(5, 0)})]


class _Reads:
    def topics(self):
        class View:
            all_topics = ("t",)

            def partitions(self, topic):
                return [0]
        return View()

    def log_ends(self, partitions):
        return dict.fromkeys(partitions, 10)

    def kafka_offsets(self, wanted):
        return GroupOffsets({}, {})


def test_each_good_scan_is_handed_on_and_a_failing_hook_does_not_stop_the_scans():
    handed: list[tuple[list[str], float]] = []

    def hook(reports, at):
        handed.append(([r.group for r in reports], at))
        raise RuntimeError("a bug downstream")

    exporter = LagExporter(_OneGroup(), _Reads(), ExporterSettings(10, WindowRules(3, 30)),
                           clock=lambda: 1000.0, after_scan=hook)
    assert exporter.scan_once() and exporter.scan_once()
    assert handed == [(["g"], 1000.0)] * 2


@pytest.mark.parametrize(("args", "error"), [
    (["--notify-url", "ftp://x/"], "'ftp://x/' is not an http:// or https:// URL"),
    (["--notify-url", "http://x/a b"], "is not an http:// or https:// URL"),
    (["--notify-url", "http://x:port/"], "is not an http:// or https:// URL"),
    (["--notify-url", "http://x/", "--notify-content-type", "text/plain\nX-Evil: 1"],
     "holds control characters"),
    (["--notify-url", "http://x/", "--notify-group", "a("], "is not a regular expression"),
    (["--notify-url", "http://x/", "--notify-template", "{bad}"], "unknown field $grop"),
    (["--notify-template", "{good}", "--notify-group", "g"], "--notify-template needs "
                                                             "--notify-url"),
    (["--notify-url", "http://x/", "--notify-threshold", "OK"], "'OK' is not one of"),
])
def test_bad_notify_options_are_one_error_line_before_anything_connects(tmp_path, args, error):
    (tmp_path / "bad.tmpl").write_text("group $grop")
    (tmp_path / "good.tmpl").write_text("group $group")
    args = [arg.format(bad=tmp_path / "bad.tmpl", good=tmp_path / "good.tmpl") for arg in args]
    result = CliRunner().invoke(cli, ["exporter", "--zookeeper", "127.0.0.1:1", *args])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and error in errors[0], result.output


def test_a_receiver_that_drips_its_body_does_not_hold_the_sender():
    """The status is the answer: a body sent a byte a second (4 KiB announced) held the one
    sender thread for as long as the receiver liked before, each byte within the per-read
    timeout."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    done = threading.Event()

    def drip() -> None:
        client, _ = listener.accept()
        with client:
            client.recv(65536)
            client.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n")
            for _ in range(5):  # then the body ends early: the old sender took this long
                if done.wait(1.0):
                    return
                try:
                    client.sendall(b"x")
                except OSError:
                    return

    threading.Thread(target=drip, daemon=True).start()
    try:
        started = time.monotonic()
        assert http_post(f"http://127.0.0.1:{listener.getsockname()[1]}/", b"{}",
                         "application/json", 2) == 200
        assert time.monotonic() - started < 2
    finally:
        done.set()
        listener.close()


@pytest.mark.parametrize(("url", "shown"), [
    ("https://hooks.example.com/services/T0/B0/XXXX", "https://hooks.example.com/..."),
    ("http://ops:s3cret@alerts.example:8080/hook?token=abc", "http://alerts.example:8080/..."),
    ("http://alerts:9000", "http://alerts:9000"),
    ("http://alerts:9000/", "http://alerts:9000"),
])
def test_a_webhook_url_is_shown_without_what_may_be_its_credentials(url, shown):
    assert url_shown(url) == shown

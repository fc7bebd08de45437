"""Repeated conditions are logged when they start and summed up when they end; errors always
carry a message."""

from __future__ import annotations

import math

from kazoo.exceptions import ConnectionLoss

from zkconsumer.errors import describe_error
from zkconsumer.throttled_log import RepeatedCondition, RetryWarnings


class RecordingLog:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict]] = []

    def __getattr__(self, level: str):
        return lambda event, **fields: self.lines.append((level, event, fields))


def test_a_condition_met_every_half_second_is_one_line_at_its_start_and_one_at_its_end():
    log, now = RecordingLog(), [0.0]
    skipped = RepeatedCondition(log, "commit skipped", "commits resumed", level="info",
                                clock=lambda: now[0])
    for turn in range(40):  # a 20 s outage, an auto commit every 0.5 s
        now[0] = turn * 0.5
        skipped.occurred()
    now[0] = 20.0
    skipped.cleared()
    skipped.cleared()
    assert log.lines == [("info", "commit skipped", {}),
                         ("info", "commits resumed", {"times": 40, "lasted_s": 20.0})]
    assert not skipped.active


def test_a_condition_that_comes_back_is_told_again():
    log = RecordingLog()
    failing = RepeatedCondition(log, "auto commit failed", "auto commit works again",
                                clock=lambda: 0.0)
    failing.occurred(error="a")
    failing.cleared()
    failing.occurred(error="b")
    assert [(level, event) for level, event, _ in log.lines] == [
        ("warning", "auto commit failed"), ("info", "auto commit works again"),
        ("warning", "auto commit failed")]
    assert log.lines[-1][2] == {"error": "b"}


def test_an_error_without_a_message_is_named_by_its_type():
    assert describe_error(ConnectionLoss()) == "ConnectionLoss"
    assert describe_error(ValueError("bad\n value")) == "ValueError: bad value"


def test_a_lasting_condition_is_warned_about_once_however_long_it_lasts():
    log, now = RecordingLog(), [0.0]
    warnings = RetryWarnings(log, clock=lambda: now[0], every_s=math.inf)
    for scan in range(5):  # a registration that does not parse, met at every 30 s scan
        now[0] = scan * 30.0
        warnings.report(("topic", "t"), "skipping a topic")
    warnings.report(("topic", "u"), "skipping a topic")
    assert [(level, event) for level, event, _ in log.lines] == (
        [("warning", "skipping a topic")] + [("debug", "skipping a topic")] * 4
        + [("warning", "skipping a topic")])

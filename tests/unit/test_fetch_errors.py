"""The fetchers' rule for Kafka partition errors: which codes are retried, how a fatal one is
named, and how retries are warned about."""

from __future__ import annotations

import pytest
from support.log_capture import captured_logs

from zkconsumer.kafka.protocol.retry_policy import describe_error, is_retriable
from zkconsumer.logs import get_logger
from zkconsumer.model import TopicPartition
from zkconsumer.throttled_log import RetryWarnings


@pytest.mark.parametrize("code", [-1, 3, 5, 6, 7, 9, 13, 19, 56, 74, 75, 78])
def test_unknown_server_errors_and_the_codes_kafka_calls_retriable_are_retried(code):
    assert is_retriable(code)


@pytest.mark.parametrize("code", [0, 1, 2, 4, 10, 29, 35, 43, 87, 9999])
def test_other_codes_are_not_retried(code):
    assert not is_retriable(code)


def test_a_fatal_error_is_named_by_code_name_and_partition():
    tp = TopicPartition("t", 0)
    assert describe_error(29, tp) == "Kafka error 29 TOPIC_AUTHORIZATION_FAILED for t-0"
    assert describe_error(-1, tp) == "Kafka error -1 UNKNOWN_SERVER_ERROR for t-0"
    assert describe_error(9999, tp) == "Kafka error 9999 UNRECOGNIZED for t-0"


def test_a_condition_is_warned_about_when_it_starts_then_at_most_every_30_s():
    now = [0.0]
    warnings = RetryWarnings(get_logger("zkconsumer.tests"), clock=lambda: now[0])
    with captured_logs() as logs:
        for second in range(0, 65):  # reported every second, as a retry would be
            now[0] = float(second)
            warnings.report("storage", "retrying", second=second)
        warnings.report("leader", "retrying", second=64)
    warned = [(e["event"], e["second"]) for e in logs if e["log_level"] == "warning"]
    assert warned == [("retrying", 0), ("retrying", 30), ("retrying", 60), ("retrying", 64)]
    assert len(logs) == 66  # every repeat still logged, at debug


def test_a_kafka_python_error_with_an_empty_broker_message_ends_in_no_dangling_colon():
    """`group list` showed `note: ... FindCoordinatorResponse error for GROUP/g:`."""
    from kafka.errors import CoordinatorNotAvailableError

    from zkconsumer.errors import describe_error as one_line

    for message in ("", None):
        error = CoordinatorNotAvailableError(
            f"FindCoordinatorResponse error for GROUP/orders-audit: {message}")
        assert one_line(error) == ("[Error 15] CoordinatorNotAvailableError: "
                                   "FindCoordinatorResponse error for GROUP/orders-audit")

"""The retry policy of offset storage calls, and which Kafka errors count as transient."""

from __future__ import annotations

import pytest

from zkconsumer.errors import ZkConsumerError
from zkconsumer.kafka.errors import KafkaConnectionError
from zkconsumer.kafka.protocol.retry_policy import broker_error
from zkconsumer.offsets import (
    KAFKA_ERRORS,
    OffsetStoreError,
    RetryPolicy,
    call_with_retries,
    is_transient_kafka_error,
)


class Flaky:
    """Fails with the given errors in turn, then returns "ok"."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


FIVE_RETRIES = RetryPolicy(retries=5, backoff_ms=100)
# Kafka's error codes, as the cluster client names them (`retry_policy.broker_error`).
(REQUEST_TIMED_OUT, OFFSET_METADATA_TOO_LARGE, COORDINATOR_LOAD_IN_PROGRESS,
 COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
 TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED) = 7, 12, 14, 15, 16, 22, 25, 29, 30


def kafka_error(code: int, what: str = "committing the offsets of group g"):
    return broker_error(code, what)


def run(operation, policy=FIVE_RETRIES, **kwargs):
    sleeps: list[float] = []
    result = call_with_retries(operation, what="committing offsets of group g to Kafka",
                               policy=policy, is_transient=is_transient_kafka_error,
                               sleep=sleeps.append, **kwargs)
    return result, sleeps


def test_backoff_doubles_from_backoff_and_is_bounded():
    assert RetryPolicy(retries=6, backoff_ms=1000, max_backoff_ms=10_000).delays_s() == [
        1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_a_backoff_above_the_cap_is_kept_rather_than_shortened():
    assert RetryPolicy(retries=2, backoff_ms=20_000, max_backoff_ms=10_000).delays_s() == [
        20.0, 20.0]


def test_zero_retries_still_makes_one_attempt():
    operation = Flaky()
    assert run(operation, RetryPolicy(retries=0, backoff_ms=100)) == ("ok", [])
    assert operation.calls == 1


def test_transient_errors_are_retried_with_growing_backoff():
    operation = Flaky(kafka_error(NOT_COORDINATOR), kafka_error(COORDINATOR_LOAD_IN_PROGRESS),
                      KafkaConnectionError("timed out"))
    assert run(operation) == ("ok", [0.1, 0.2, 0.4])
    assert operation.calls == 4


def test_gives_up_after_the_retries_with_one_clear_line():
    operation = Flaky(*[kafka_error(COORDINATOR_NOT_AVAILABLE)] * 10)
    with pytest.raises(OffsetStoreError) as caught:
        run(operation, RetryPolicy(retries=2, backoff_ms=50))
    assert operation.calls == 3
    message = str(caught.value)
    assert message == ("committing offsets of group g to Kafka failed after 3 attempts: "
                       "BrokerError: committing the offsets of group g: Kafka error 15 "
                       "COORDINATOR_NOT_AVAILABLE")
    assert isinstance(caught.value, ZkConsumerError)
    assert caught.value.__cause__ is not None
    assert caught.value.__cause__.code == COORDINATOR_NOT_AVAILABLE


def test_non_transient_errors_are_not_retried():
    operation = Flaky(kafka_error(GROUP_AUTHORIZATION_FAILED))
    with pytest.raises(OffsetStoreError, match="^committing offsets of group g to Kafka failed: "
                                               "BrokerError: .* GROUP_AUTHORIZATION_FAILED"):
        run(operation)
    assert operation.calls == 1


def test_errors_outside_the_handled_family_propagate_untouched():
    operation = Flaky(TypeError("a bug"))
    with pytest.raises(TypeError, match="a bug"):
        run(operation, handled=KAFKA_ERRORS)
    assert operation.calls == 1


def test_kafka_python_none_messages_are_not_shown():
    class KafkaTimeoutError(Exception):
        """kafka-python's, whose message is "None" when it has none."""

    operation = Flaky(KafkaTimeoutError(None))
    with pytest.raises(OffsetStoreError) as caught:
        call_with_retries(operation, what="committing offsets of group g to Kafka",
                          policy=RetryPolicy(retries=0, backoff_ms=0),
                          is_transient=lambda _exc: True, sleep=lambda _s: None)
    assert str(caught.value).endswith("failed after 1 attempts: KafkaTimeoutError")


@pytest.mark.parametrize("error", [
    lambda: kafka_error(COORDINATOR_NOT_AVAILABLE),
    lambda: kafka_error(NOT_COORDINATOR),
    lambda: kafka_error(COORDINATOR_LOAD_IN_PROGRESS),
    lambda: kafka_error(REQUEST_TIMED_OUT),
    lambda: KafkaConnectionError("no bootstrap broker accepts connections"),
    lambda: KafkaConnectionError("timed out"),
])
def test_coordinator_moves_loads_and_timeouts_are_transient(error):
    assert is_transient_kafka_error(error())


@pytest.mark.parametrize("error", [
    lambda: kafka_error(GROUP_AUTHORIZATION_FAILED),
    lambda: kafka_error(TOPIC_AUTHORIZATION_FAILED),
    lambda: kafka_error(OFFSET_METADATA_TOO_LARGE),
    lambda: kafka_error(ILLEGAL_GENERATION),
    lambda: kafka_error(UNKNOWN_MEMBER_ID),
    lambda: ValueError("not the cluster client's"),
])
def test_authorization_and_membership_errors_are_not_transient(error):
    assert not is_transient_kafka_error(error())


def test_negative_settings_are_refused():
    with pytest.raises(ValueError):
        RetryPolicy(retries=-1, backoff_ms=0)

"""The retry policy of offset storage calls, and which Kafka errors count as transient."""

from __future__ import annotations

import kafka.errors as kafka_errors
import pytest

from zkconsumer.errors import ZkConsumerError
from zkconsumer.offsets import (
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
    operation = Flaky(kafka_errors.NotCoordinatorError(), kafka_errors.CoordinatorLoadInProgressError(),
                      kafka_errors.KafkaTimeoutError())
    assert run(operation) == ("ok", [0.1, 0.2, 0.4])
    assert operation.calls == 4


def test_gives_up_after_the_retries_with_one_clear_line():
    operation = Flaky(*[kafka_errors.CoordinatorNotAvailableError("g")] * 10)
    with pytest.raises(OffsetStoreError) as caught:
        run(operation, RetryPolicy(retries=2, backoff_ms=50))
    assert operation.calls == 3
    message = str(caught.value)
    assert message == ("committing offsets of group g to Kafka failed after 3 attempts: "
                       "[Error 15] CoordinatorNotAvailableError: g")
    assert isinstance(caught.value, ZkConsumerError)
    assert isinstance(caught.value.__cause__, kafka_errors.CoordinatorNotAvailableError)


def test_non_transient_errors_are_not_retried():
    operation = Flaky(kafka_errors.GroupAuthorizationFailedError("g"))
    with pytest.raises(OffsetStoreError, match="^committing offsets of group g to Kafka failed: "
                                               r"\[Error 30\] GroupAuthorizationFailedError"):
        run(operation)
    assert operation.calls == 1


def test_errors_outside_the_handled_family_propagate_untouched():
    operation = Flaky(TypeError("a bug"))
    with pytest.raises(TypeError, match="a bug"):
        run(operation, handled=(kafka_errors.KafkaError,))
    assert operation.calls == 1


def test_kafka_python_none_messages_are_not_shown():
    operation = Flaky(kafka_errors.KafkaTimeoutError(None))
    with pytest.raises(OffsetStoreError) as caught:
        run(operation, RetryPolicy(retries=0, backoff_ms=0))
    assert str(caught.value).endswith("failed after 1 attempts: KafkaTimeoutError")


@pytest.mark.parametrize("error", [
    kafka_errors.CoordinatorNotAvailableError,
    kafka_errors.NotCoordinatorError,
    kafka_errors.CoordinatorLoadInProgressError,
    kafka_errors.RequestTimedOutError,
    kafka_errors.NodeNotReadyError,
    kafka_errors.KafkaConnectionError,
    kafka_errors.KafkaTimeoutError,
])
def test_coordinator_moves_loads_and_timeouts_are_transient(error):
    assert is_transient_kafka_error(error())


@pytest.mark.parametrize("error", [
    kafka_errors.GroupAuthorizationFailedError,
    kafka_errors.TopicAuthorizationFailedError,
    kafka_errors.OffsetMetadataTooLargeError,
    kafka_errors.IllegalGenerationError,
    kafka_errors.UnknownMemberIdError,
    kafka_errors.CommitFailedError,
])
def test_authorization_and_membership_errors_are_not_transient(error):
    assert not is_transient_kafka_error(error())


def test_negative_settings_are_refused():
    with pytest.raises(ValueError):
        RetryPolicy(retries=-1, backoff_ms=0)

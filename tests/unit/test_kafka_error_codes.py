"""The project's table of Kafka error codes (`kafka.protocol.error_codes`) against
kafka-python's, which the fetchers and readers judged errors by before: the same name and the
same retriable flag for every code both know, so no error is retried, or given up on, otherwise
than it was."""

from __future__ import annotations

from kafka.errors import kafka_errors

from zkconsumer.kafka.protocol.error_codes import NAMES, RETRIABLE
from zkconsumer.kafka.protocol.retry_policy import error_name, is_retriable


def test_every_code_kafka_python_knows_has_its_name_and_its_retriable_flag():
    theirs = {code: error for code, error in kafka_errors.items()
              if code is not None and code >= 0}
    assert set(theirs) <= set(range(len(NAMES))), "a code the table lacks"
    for code, error in theirs.items():
        assert (NAMES[code], code in RETRIABLE) == (error.message, error.retriable), code


def test_the_unknown_server_error_and_codes_nobody_knows():
    assert (error_name(-1), is_retriable(-1)) == ("UNKNOWN_SERVER_ERROR", True)
    assert (error_name(15), is_retriable(15)) == ("COORDINATOR_NOT_AVAILABLE", True)
    assert (error_name(29), is_retriable(29)) == ("TOPIC_AUTHORIZATION_FAILED", False)
    assert (error_name(len(NAMES)), is_retriable(len(NAMES))) == ("UNRECOGNIZED", False)
    assert (error_name(-2), is_retriable(-2)) == ("UNRECOGNIZED", False)

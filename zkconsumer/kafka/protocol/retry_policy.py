"""The fetchers' one rule for Kafka partition errors: retry what a retry can cure, fail on the
rest with one clear line (the retries are told to the log through `throttled_log.RetryWarnings`).

The legacy consumer outlived partition errors: it set the partition aside, found its leader
again after `refresh.leader.backoff.ms` and went on. Failing the member instead stops every
partition it owns until someone restarts it. Which errors a retry can cure is Kafka's own
judgement, as kafka-python's `retriable` flag of each error class keeps it, written down once
in `error_codes`. It adds UNKNOWN_SERVER_ERROR (-1), which a broker answers for
an unexpected failure of its own (a failing disk before KAFKA_STORAGE_ERROR existed, for one),
as the legacy consumer did. The rest (authorization, an unsupported version, corrupt messages,
a code the table does not know) cannot pass by waiting, and retrying would only hide them.
Only the wire fetcher, which chooses request versions itself, asks a broker again after an
unsupported version or an answer it cannot read (it may have restarted with another version),
a few times (`broker_versions.RejectedRequests`) before it fails.
"""

from __future__ import annotations

from zkconsumer.kafka.errors import BrokerError, KafkaConnectionError
from zkconsumer.kafka.protocol.error_codes import NAMES, RETRIABLE
from zkconsumer.model import TopicPartition

UNKNOWN_SERVER_ERROR = -1
OFFSET_OUT_OF_RANGE = 1
UNSUPPORTED_VERSION = 35


def is_retriable(code: int) -> bool:
    """Whether setting the partition aside and finding its leader again can cure this error."""
    return code == UNKNOWN_SERVER_ERROR or code in RETRIABLE


def error_name(code: int) -> str:
    """Kafka's name for an error code, e.g. TOPIC_AUTHORIZATION_FAILED."""
    if code == UNKNOWN_SERVER_ERROR:
        return "UNKNOWN_SERVER_ERROR"
    return NAMES[code] if 0 <= code < len(NAMES) else "UNRECOGNIZED"


def describe_error(code: int, tp: TopicPartition) -> str:
    return f"Kafka error {code} {error_name(code)} for {tp}"


# The coordinator-moved rule, said once for every group request outside a member's own
# coordination: LOAD_IN_PROGRESS is the right coordinator still reading its offsets (ask it
# again later); NOT_AVAILABLE and NOT_COORDINATOR mean the coordinator is to be found anew.
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 14, 15, 16
COORDINATOR_MOVED = frozenset({COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR})


def finds_coordinator_anew(error: BaseException) -> bool:
    """Whether a group request's failure left its coordinator to be found anew, so that asking
    again at once may succeed: the coordinator moved (`COORDINATOR_MOVED`), or its connection
    failed (the cluster client forgets both). Any other retriable error (a coordinator still
    loading) is for a later attempt."""
    if isinstance(error, BrokerError):
        return error.code in COORDINATOR_MOVED
    return isinstance(error, KafkaConnectionError)
# A commit from outside a group that has members (generation -1, no member id) is refused with
# one of these, all of it: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS.
COMMIT_REFUSED_BY_GROUP = frozenset({22, 25, 27})


def broker_error(code: int, what: str) -> BrokerError:
    """A broker's error code as one named error: `what` failed, Kafka's name for the code,
    whether a retry may cure it."""
    return BrokerError(f"{what}: Kafka error {code} {error_name(code)}", code, is_retriable(code))

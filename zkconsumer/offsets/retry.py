"""Bounded retries for offset storage calls that fail transiently.

Coordinator moves and offset-cache loads are routine on a live Kafka cluster, so a commit must
survive them; but a consumer must not hang forever on a dead cluster either. The policy is
pure (the sleep is injected) so its schedule and its give-up message are unit-testable.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from zkconsumer.errors import describe_error
from zkconsumer.logs import get_logger
from zkconsumer.offsets.store import OffsetStoreError

log = get_logger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """`retries` retries after the first attempt, as `offsets.commit.max.retries` counts them
    (so 0 still makes one attempt). Delays double from `backoff_ms` up to `max_backoff_ms`, so
    the worst case stays bounded however many retries are configured."""

    retries: int
    backoff_ms: int
    max_backoff_ms: int = 10_000

    def __post_init__(self) -> None:
        if self.retries < 0 or self.backoff_ms < 0 or self.max_backoff_ms < 0:
            raise ValueError(f"retry settings must not be negative: {self}")

    def delays_s(self) -> list[float]:
        """The pause before each retry, in seconds."""
        cap = max(self.backoff_ms, self.max_backoff_ms)
        return [min(self.backoff_ms * 2**k, cap) / 1000 for k in range(self.retries)]


def call_with_retries(
    operation: Callable[[], T],
    *,
    what: str,
    policy: RetryPolicy,
    is_transient: Callable[[BaseException], bool],
    handled: tuple[type[BaseException], ...] = (Exception,),
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run `operation`, retrying transient failures; any `handled` failure that remains becomes
    an `OffsetStoreError` whose one-line message starts with `what` (e.g. "committing offsets of
    group g to Kafka"). Exceptions outside `handled` are bugs and propagate untouched."""
    delays = policy.delays_s()
    attempt = 0
    while True:
        attempt += 1
        try:
            return operation()
        except handled as exc:
            if not is_transient(exc):
                raise OffsetStoreError(f"{what} failed: {describe_error(exc)}") from exc
            if attempt > len(delays):
                raise OffsetStoreError(
                    f"{what} failed after {attempt} attempts: {describe_error(exc)}"
                ) from exc
            delay = delays[attempt - 1]
            log.warning("offset storage call failed, retrying", what=what, attempt=attempt,
                        error=describe_error(exc), retry_in_s=delay)
            sleep(delay)

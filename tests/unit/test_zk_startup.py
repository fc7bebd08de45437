"""A slow first ZooKeeper connection tried again until the start-up deadline, and nothing else
tried again: the decision (`StartupRetry`) and the loop around it, on a fake clock."""

from __future__ import annotations

import pytest

from zkconsumer.zk.session import (
    ZookeeperAccessDeniedError,
    ZookeeperSlowError,
    ZookeeperUnreachableError,
    connect_patiently,
)
from zkconsumer.zk.startup import StartupRetry


def test_backoff_doubles_to_its_ceiling_and_is_jittered_in_its_upper_half():
    retry = StartupRetry(60.0, first_backoff_s=0.5, max_backoff_s=4.0)
    assert [retry.backoff(n, 0.999999) for n in (1, 2, 3, 4, 5)] == pytest.approx(
        [0.5, 1.0, 2.0, 4.0, 4.0], rel=1e-5)
    assert [retry.backoff(n, 0.0) for n in (1, 2, 3, 4, 5)] == [0.25, 0.5, 1.0, 2.0, 2.0]


def test_no_try_begins_past_the_deadline():
    retry = StartupRetry(10.0, first_backoff_s=1.0)
    assert retry.next_try_in(1, 8.0, 0.0) == 0.5
    assert retry.next_try_in(1, 9.6, 0.0) is None
    assert StartupRetry(0.0).next_try_in(1, 0.0, 0.0) is None  # 0: one try only


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _tries(outcomes: list, clock: FakeClock, try_s: float):
    """A `try_once` giving each outcome in turn (raised if an exception), each taking try_s."""
    made = []

    def try_once():
        made.append(clock.now)
        clock.now += try_s
        outcome = outcomes[len(made) - 1]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return try_once, made


def test_a_slow_server_is_tried_again_with_jittered_backoff_until_it_answers():
    clock = FakeClock()
    slow = ZookeeperSlowError("cannot reach ZooKeeper at zk:2181 within 6s")
    try_once, made = _tries([slow, slow, "session"], clock, 6.0)
    assert connect_patiently(try_once, StartupRetry(60.0), clock=clock, sleep=clock.sleep,
                             random_fraction=lambda: 0.5) == "session"
    assert clock.slept == [0.375, 0.75]
    assert made == [100.0, 106.375, 113.125]


def test_the_last_slow_try_within_the_deadline_is_raised_with_the_tries_counted():
    clock = FakeClock()
    slow = ZookeeperSlowError("cannot reach ZooKeeper at zk:2181 within 6s")
    try_once, made = _tries([slow] * 10, clock, 6.0)
    with pytest.raises(ZookeeperSlowError, match=r"within 6s \(3 tries over 19s, the start-up "
                       r"deadline zookeeper.startup.deadline.ms=15000\)"):
        connect_patiently(try_once, StartupRetry(15.0), clock=clock, sleep=clock.sleep,
                          random_fraction=lambda: 0.0)
    assert len(made) == 3


@pytest.mark.parametrize("failure", [
    ZookeeperUnreachableError("cannot reach ZooKeeper at zk:2181 within 6s"),  # refused
    ZookeeperUnreachableError("bad ZooKeeper connect string 'zk:x': bad port"),
    ZookeeperAccessDeniedError("ZooKeeper at zk:2181 refused the credentials"),
])
def test_what_waiting_cannot_mend_fails_at_the_first_try(failure):
    clock = FakeClock()
    try_once, made = _tries([failure, "session"], clock, 6.0)
    with pytest.raises(type(failure), match=str(failure)[:20]):
        connect_patiently(try_once, StartupRetry(60.0), clock=clock, sleep=clock.sleep)
    assert (len(made), clock.slept) == (1, [])

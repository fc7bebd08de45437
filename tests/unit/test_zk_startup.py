"""A slow first ZooKeeper connection tried again until the start-up deadline, and nothing else
tried again: the decision (`StartupRetry`) and the loop around it, on a fake clock."""

from __future__ import annotations

import socket
import time

import pytest

from zkconsumer.zk.session import (
    ZookeeperAccessDeniedError,
    ZookeeperHostUnknownError,
    ZookeeperSlowError,
    ZookeeperUnreachableError,
    connect,
    connect_patiently,
    unresolved_hosts,
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


def _resolver(known: set[str]):
    def resolve(host: str, _port: int) -> object:
        if host not in known:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [("addr",)]
    return resolve


def test_a_connect_string_none_of_whose_hosts_resolves_is_told_by_name():
    unknown = unresolved_hosts("zk-typo:2181,zk-tpyo:2181/chroot", _resolver(set()))
    assert unknown == {"zk-typo:2181": "Name or service not known",
                       "zk-tpyo:2181": "Name or service not known"}
    assert unresolved_hosts("zk-typo:2181,zk2:2181", _resolver({"zk2"})) == {}


def test_a_zookeeper_host_that_does_not_resolve_is_said_at_once_not_after_the_timeout():
    """`.invalid` never resolves (RFC 6761): the command must not wait out its 10 s."""
    started = time.monotonic()
    with pytest.raises(ZookeeperHostUnknownError) as caught:
        connect("zk.no-such-host.invalid:2181", timeout_s=10.0)
    assert time.monotonic() - started < 5.0
    assert str(caught.value).startswith("cannot reach ZooKeeper at zk.no-such-host.invalid:2181: "
                                        "no host of it resolves (zk.no-such-host.invalid:2181: ")

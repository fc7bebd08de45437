"""Every event the group member reports reaches a waiter, or fails the member: the coordination
thread drops none silently. Driven by hand, without its thread or a broker."""

from __future__ import annotations

import pytest

from zkconsumer.kafka.protocol.group_member import (
    CommitFailed,
    Committed,
    GroupMember,
    OffsetsFetched,
)
from zkconsumer.member.kafka_coordination import KafkaCoordination, UnexpectedGroupEvent
from zkconsumer.member.state import MemberState
from zkconsumer.model import TopicPartition

A = TopicPartition("t", 0)


def coordination() -> tuple[KafkaCoordination, MemberState]:
    member = MemberState(None)
    group = GroupMember("g", ["t"], ("range",), session_timeout_ms=6000,
                        heartbeat_interval_ms=500)
    return KafkaCoordination(group, member, {"bootstrap_servers": "127.0.0.1:9"},
                             lambda topics: {}, withdraw=dict, forget=lambda: None,
                             on_failure=lambda exc: None), member


@pytest.mark.parametrize("event", [Committed({A: 1}), CommitFailed({A: 1}, "gone"),
                                   OffsetsFetched({A: 1})])
def test_an_outcome_nobody_waits_for_raises(event):
    driver, _member = coordination()
    with pytest.raises(UnexpectedGroupEvent):
        driver._learn([event], 0.0)


def test_an_event_of_a_kind_the_driver_does_not_know_raises():
    driver, _member = coordination()
    with pytest.raises(UnexpectedGroupEvent, match="does not know"):
        driver._learn(["something new"], 0.0)  # type: ignore[list-item]


def test_the_gate_has_no_lease_before_the_first_generation():
    _driver, member = coordination()
    assert not member.gate.holds(0.0)

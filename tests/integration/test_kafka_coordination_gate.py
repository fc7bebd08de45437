"""The coordination thread closes the member's gate on the clock: a coordinator that goes
silent on an open connection (heartbeats unanswered, nothing reset) ends the generation a
session after the last answered heartbeat, not when the heartbeat's request times out."""

from __future__ import annotations

import time

import pytest
from support.stalling_coordinator import StallingCoordinator
from support.waiting import wait_until

from zkconsumer.kafka.protocol.group_member import GroupMember
from zkconsumer.member.kafka_coordination import KafkaCoordination
from zkconsumer.member.state import MemberState

pytestmark = pytest.mark.integration

SESSION_S, HEARTBEAT_S = 1.0, 0.2


def test_a_silent_coordinator_closes_the_gate_a_session_after_the_last_answer():
    failures: list[BaseException] = []
    with StallingCoordinator("t", partitions=2) as coordinator:
        member = MemberState(None)
        member.start()
        group = GroupMember("g", ["t"], ("range",), session_timeout_ms=int(SESSION_S * 1000),
                            heartbeat_interval_ms=int(HEARTBEAT_S * 1000),
                            request_timeout_ms=30000)
        coordination = KafkaCoordination(
            group, member, {"bootstrap_servers": f"127.0.0.1:{coordinator.port}",
                            "api_version": (0, 9)},
            lambda topics: {"t": 2}, withdraw=dict, forget=lambda: None,
            on_failure=failures.append)
        coordination.start()
        try:
            wait_until(lambda: coordination.assignment is not None, timeout=10,
                       message="the member's first generation")
            generation = coordination.assignment.generation
            wait_until(lambda: member.reregistered(generation), timeout=5,
                       message="the generation to become the member's session")
            assert member.delivering
            coordinator.stalled.set()
            stalled_at = time.monotonic()
            wait_until(lambda: not member.delivering, timeout=5,
                       message="the gate to close without an answered heartbeat")
            assert time.monotonic() - stalled_at < SESSION_S + HEARTBEAT_S + 0.5
            assert coordinator.heartbeats_unanswered >= 1
            assert member.session is None  # its claims went with it
        finally:
            assert coordination.close(timeout=5)
        assert failures == []

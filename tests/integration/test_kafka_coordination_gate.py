"""The coordination thread closes the member's gate on the clock: a coordinator that goes
silent on an open connection (heartbeats unanswered, nothing reset) ends the generation a
session after the last answered heartbeat, not when the heartbeat's request times out. As the
group's leader (on the fixture's real broker) it counts the group's topics: a count that cannot
be read is asked again rather than failing the member, and a topic that appears later is
assigned once counted."""

from __future__ import annotations

import time

import pytest
from support.stalling_coordinator import StallingCoordinator
from support.waiting import wait_until

from zkconsumer.kafka.protocol.group_member import GroupMember
from zkconsumer.member.kafka_coordination import KafkaCoordination
from zkconsumer.member.state import MemberState
from zkconsumer.topology.sources import TopicMetadataError

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
            wait_until(lambda: member.assignment is not None, timeout=10,
                       message="the member's first generation")
            generation = member.assignment.term
            wait_until(lambda: member.rejoined(generation), timeout=5,
                       message="the generation to become the member's session")
            assert member.delivering
            coordinator.stalled.set()
            stalled_at = time.monotonic()
            wait_until(lambda: not member.delivering, timeout=5,
                       message="the gate to close without an answered heartbeat")
            assert time.monotonic() - stalled_at < SESSION_S + HEARTBEAT_S + 0.5
            assert coordinator.heartbeats_unanswered >= 1
            assert member.term is None  # its claims went with it
        finally:
            assert coordination.close(timeout=5)
        assert failures == []


class _Counts:
    """The leader's partition counts of one topic, one answer per question, then the last
    one for ever; an exception among them is raised instead."""

    def __init__(self, *answers) -> None:
        self._answers = list(answers)
        self.asked = 0

    def __call__(self, topics):
        self.asked += 1
        answer = self._answers.pop(0) if len(self._answers) > 1 else self._answers[0]
        if isinstance(answer, Exception):
            raise answer
        return {topic: answer for topic in topics}


def _leader(cluster, unique_name, counts: _Counts, failures: list, topics=("t",),
            subscription=None) -> KafkaCoordination:
    member = MemberState(None)
    member.start()
    group = GroupMember(unique_name("counted"), topics, ("range",), session_timeout_ms=6000,
                        heartbeat_interval_ms=300, request_timeout_ms=30000)
    coordination = KafkaCoordination(
        group, member, {"bootstrap_servers": cluster.bootstrap_servers,
                        "api_version": cluster.kafka_api_version},
        counts, withdraw=dict, forget=lambda: None, on_failure=failures.append,
        recount_interval_s=0.2, subscription=subscription)
    coordination.start()
    return coordination


def _assignment(coordination: KafkaCoordination):
    """What the coordination's last `Assigned` carried into the member's state."""
    return coordination._member.assignment


def _assigned(coordination: KafkaCoordination) -> frozenset:
    assigned = _assignment(coordination)
    return frozenset() if assigned is None else assigned.partitions


def test_a_leader_that_cannot_count_the_topics_asks_again_and_does_not_fail(
        cluster, unique_name):
    failures: list[BaseException] = []
    unreadable = TopicMetadataError("cannot read topic metadata from Kafka: no broker answers")
    counts = _Counts(unreadable, unreadable, 2)
    coordination = _leader(cluster, unique_name, counts, failures)
    try:
        wait_until(lambda: len(_assigned(coordination)) == 2, timeout=30,
                   message="the leader's assignment once the counts could be read")
        assert counts.asked >= 3
    finally:
        assert coordination.close(timeout=10)
    assert failures == []


def test_a_topic_created_after_the_assignment_is_assigned_once_counted(cluster, unique_name):
    """The first count finds no partitions (the topic is not there yet): the group is assigned
    nothing, and the leader, counting again, joins again and assigns the topic."""
    failures: list[BaseException] = []
    counts = _Counts(0, 0, 3)
    coordination = _leader(cluster, unique_name, counts, failures)
    try:
        wait_until(lambda: len(_assigned(coordination)) == 3, timeout=30,
                   message="the topic's three partitions assigned after a new count")
        assert _assignment(coordination).term.generation_id >= 2
    finally:
        assert coordination.close(timeout=10)
    assert failures == []


def test_a_pattern_matching_nothing_yet_is_assigned_nothing_then_its_topic(cluster, unique_name):
    """A wildcard member whose pattern matches no topic at first: as the leader it assigns
    the group nothing (and does not wait for ever), then joins again once the pattern matches
    a topic, and is given its partitions."""
    failures: list[BaseException] = []
    matched: list[list[str]] = [[]]
    coordination = _leader(cluster, unique_name, _Counts(2), failures, topics=(),
                           subscription=lambda: matched[0])
    try:
        wait_until(lambda: _assignment(coordination) is not None, timeout=30,
                   message="a first generation with nothing to assign")
        assert _assigned(coordination) == frozenset()
        matched[0] = ["t"]
        wait_until(lambda: len(_assigned(coordination)) == 2, timeout=30,
                   message="the matched topic's partitions")
    finally:
        assert coordination.close(timeout=10)
    assert failures == []

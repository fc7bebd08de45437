"""What a member does about the cutover fence: every row of the table, and what it refuses."""

import pytest

from zkconsumer.member.fence_decision import (
    FenceAction,
    FenceDecision,
    FenceDecisionError,
    Stage,
    decide,
)
from zkconsumer.znodes.fence import Fence, FencePhase, OnFence

ZK, KAFKA = "zookeeper", "kafka"
SWITCH, EXIT = OnFence.SWITCH, OnFence.EXIT


def fence(to: str, phase: str) -> Fence:
    return Fence(to, phase, 1_800_000_000_000)


DRAINING_TO_KAFKA = fence(KAFKA, FencePhase.DRAINING)
SWITCHED_TO_KAFKA = fence(KAFKA, FencePhase.SWITCHED)
DRAINING_TO_ZK = fence(ZK, FencePhase.DRAINING)
SWITCHED_TO_ZK = fence(ZK, FencePhase.SWITCHED)

A = FenceAction


@pytest.mark.parametrize(("stage", "on", "the_fence", "on_fence", "expected"), [
    # Starting.
    (Stage.STARTING, ZK, None, SWITCH, FenceDecision(A.CARRY_ON, ZK)),
    (Stage.STARTING, ZK, None, EXIT, FenceDecision(A.CARRY_ON, ZK)),
    (Stage.STARTING, KAFKA, DRAINING_TO_KAFKA, SWITCH, FenceDecision(A.WAIT, None)),
    (Stage.STARTING, KAFKA, DRAINING_TO_KAFKA, EXIT, FenceDecision(A.WAIT, None)),
    (Stage.STARTING, KAFKA, SWITCHED_TO_KAFKA, EXIT, FenceDecision(A.CARRY_ON, KAFKA)),
    (Stage.STARTING, ZK, DRAINING_TO_KAFKA, SWITCH, FenceDecision(A.WAIT, None)),
    (Stage.STARTING, ZK, SWITCHED_TO_KAFKA, SWITCH, FenceDecision(A.JOIN_TARGET, KAFKA)),
    (Stage.STARTING, ZK, DRAINING_TO_KAFKA, EXIT, FenceDecision(A.REFUSE_START, None)),
    (Stage.STARTING, ZK, SWITCHED_TO_KAFKA, EXIT, FenceDecision(A.REFUSE_START, None)),
    (Stage.STARTING, KAFKA, SWITCHED_TO_ZK, SWITCH, FenceDecision(A.JOIN_TARGET, ZK)),
    # Running.
    (Stage.RUNNING, ZK, None, SWITCH, FenceDecision(A.CARRY_ON, ZK)),
    (Stage.RUNNING, KAFKA, None, SWITCH, FenceDecision(A.CARRY_ON, KAFKA)),
    (Stage.RUNNING, KAFKA, SWITCHED_TO_KAFKA, SWITCH, FenceDecision(A.CARRY_ON, KAFKA)),
    (Stage.RUNNING, ZK, DRAINING_TO_ZK, EXIT, FenceDecision(A.CARRY_ON, ZK)),
    (Stage.RUNNING, ZK, DRAINING_TO_KAFKA, SWITCH, FenceDecision(A.DRAIN_AND_WAIT, None)),
    (Stage.RUNNING, ZK, SWITCHED_TO_KAFKA, SWITCH, FenceDecision(A.DRAIN_AND_JOIN, KAFKA)),
    (Stage.RUNNING, ZK, DRAINING_TO_KAFKA, EXIT, FenceDecision(A.DRAIN_AND_EXIT, None)),
    (Stage.RUNNING, ZK, SWITCHED_TO_KAFKA, EXIT, FenceDecision(A.DRAIN_AND_EXIT, None)),
    (Stage.RUNNING, KAFKA, DRAINING_TO_ZK, SWITCH, FenceDecision(A.DRAIN_AND_WAIT, None)),
    # Waiting, drained.
    (Stage.WAITING, ZK, None, SWITCH, FenceDecision(A.ROLLBACK, ZK)),
    (Stage.WAITING, KAFKA, None, SWITCH, FenceDecision(A.ROLLBACK, KAFKA)),
    (Stage.WAITING, ZK, DRAINING_TO_KAFKA, SWITCH, FenceDecision(A.WAIT, None)),
    (Stage.WAITING, ZK, SWITCHED_TO_KAFKA, SWITCH, FenceDecision(A.JOIN_TARGET, KAFKA)),
    (Stage.WAITING, ZK, DRAINING_TO_ZK, SWITCH, FenceDecision(A.WAIT, None)),
    (Stage.WAITING, ZK, SWITCHED_TO_ZK, SWITCH, FenceDecision(A.JOIN_TARGET, ZK)),
])
def test_every_row(stage, on, the_fence, on_fence, expected):
    assert decide(stage, on, the_fence, on_fence) == expected


@pytest.mark.parametrize(("stage", "the_fence", "on_fence", "expected"), [
    # Starting on Kafka's coordinator (with zookeeper.connect) on a group moving back.
    (Stage.STARTING, DRAINING_TO_ZK, SWITCH, FenceDecision(A.WAIT, None)),
    (Stage.STARTING, SWITCHED_TO_ZK, SWITCH, FenceDecision(A.JOIN_TARGET, ZK)),
    (Stage.STARTING, DRAINING_TO_ZK, EXIT, FenceDecision(A.REFUSE_START, None)),
    (Stage.STARTING, SWITCHED_TO_ZK, EXIT, FenceDecision(A.REFUSE_START, None)),
    (Stage.STARTING, None, EXIT, FenceDecision(A.CARRY_ON, KAFKA)),
    # Running on Kafka's coordinator.
    (Stage.RUNNING, DRAINING_TO_KAFKA, SWITCH, FenceDecision(A.CARRY_ON, KAFKA)),
    (Stage.RUNNING, SWITCHED_TO_ZK, SWITCH, FenceDecision(A.DRAIN_AND_JOIN, ZK)),
    (Stage.RUNNING, DRAINING_TO_ZK, EXIT, FenceDecision(A.DRAIN_AND_EXIT, None)),
    (Stage.RUNNING, SWITCHED_TO_ZK, EXIT, FenceDecision(A.DRAIN_AND_EXIT, None)),
    # Drained from Kafka's coordinator, waiting.
    (Stage.WAITING, DRAINING_TO_ZK, SWITCH, FenceDecision(A.WAIT, None)),
    (Stage.WAITING, SWITCHED_TO_ZK, SWITCH, FenceDecision(A.JOIN_TARGET, ZK)),
    (Stage.WAITING, None, SWITCH, FenceDecision(A.ROLLBACK, KAFKA)),
])
def test_the_way_back_a_member_started_on_kafkas_coordinator(stage, the_fence, on_fence,
                                                              expected):
    """The same table seen from the other side: a Kafka-coordinated member that watches the
    fence drains for a fence to ZooKeeper, follows it there, and goes back to Kafka's
    coordinator when the fence is removed while it waits."""
    assert decide(stage, KAFKA, the_fence, on_fence) == expected


def test_only_the_leaving_actions_drain():
    draining = {action for action in FenceAction if FenceDecision(action, None).drains}
    assert draining == {A.DRAIN_AND_WAIT, A.DRAIN_AND_JOIN, A.DRAIN_AND_EXIT}


@pytest.mark.parametrize("the_fence", [None, DRAINING_TO_KAFKA, SWITCHED_TO_KAFKA])
def test_a_member_that_exits_never_waits_so_waiting_with_exit_is_not_listed(the_fence):
    with pytest.raises(FenceDecisionError, match="no fence rule"):
        decide(Stage.WAITING, ZK, the_fence, EXIT)


@pytest.mark.parametrize(("on", "on_fence", "named"), [
    ("etcd", SWITCH, "on"), (ZK, "stay", "on_fence")])
def test_a_value_outside_the_table_raises_naming_it(on, on_fence, named):
    with pytest.raises(FenceDecisionError, match=f"^{named} must be one of"):
        decide(Stage.RUNNING, on, None, on_fence)

"""What a member does about the cutover fence: one table, no I/O.

A member meets the fence at three moments: as it starts (before it registers or joins), while
it runs in a group, and while it waits, drained, for the move to finish. What it does then
depends on where the fence goes relative to the coordination the member is on (or is starting
on, or drained from), on the fence's phase and on `cutover.on.fence`. The connectors and the
worker only read the fence and carry out what `decide` says, so every case is written down
here once and tested without ZooKeeper or Kafka; a case the table does not list is a defect in
the caller and raises, rather than doing something nobody decided.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from zkconsumer.errors import ZkConsumerError
from zkconsumer.fetch.brokers import KafkaAccess
from zkconsumer.znodes.fence import COORDINATIONS, ON_FENCE_CHOICES, Fence, FencePhase, OnFence


class Stage(Enum):
    STARTING = "starting"  # not registered (ZooKeeper) or joined (Kafka) yet
    RUNNING = "running"    # a member of the group on `on`
    WAITING = "waiting"    # drained from `on`, in no group, waiting for the fence to move on


class FenceAction(Enum):
    CARRY_ON = "carry on"                           # start, or stay, on `on`
    WAIT = "wait"                                   # do nothing until the fence changes
    DRAIN_AND_WAIT = "drain and wait"               # leave `on`, then wait for `switched`
    DRAIN_AND_JOIN = "drain and join the target"    # leave `on`, join the fence's target now
    DRAIN_AND_EXIT = "drain and exit"               # leave `on`, then end cleanly
    JOIN_TARGET = "join the target"                 # join the fence's target now
    REFUSE_START = "refuse to start"                # end before joining anything (exit 1)
    ROLLBACK = "rejoin where it drained from"       # the fence went: back where it was


# Where the fence goes, seen from the member: no fence, to where the member is, or away.
_NONE, _SAME, _AWAY = "none", "same", "away"
_ANY = "any"
_DRAINING, _SWITCHED = FencePhase.DRAINING, FencePhase.SWITCHED

# (stage, where the fence goes, its phase, cutover.on.fence) -> action; `_ANY` matches either
# value of its column (looked up after the exact key).
_TABLE: dict[tuple[Stage, str, str, str], FenceAction] = {
    # A member starts where it was started unless a fence moves its group away. One starting
    # on the coordination the group moves *to* waits while the other side drains: it would
    # otherwise consume from offsets not yet carried over.
    (Stage.STARTING, _NONE, _ANY, _ANY): FenceAction.CARRY_ON,
    (Stage.STARTING, _SAME, _DRAINING, _ANY): FenceAction.WAIT,
    (Stage.STARTING, _SAME, _SWITCHED, _ANY): FenceAction.CARRY_ON,
    (Stage.STARTING, _AWAY, _DRAINING, OnFence.SWITCH): FenceAction.WAIT,
    (Stage.STARTING, _AWAY, _SWITCHED, OnFence.SWITCH): FenceAction.JOIN_TARGET,
    (Stage.STARTING, _AWAY, _ANY, OnFence.EXIT): FenceAction.REFUSE_START,
    # A running member is only ever moved by a fence: a fence that goes is no reason to leave.
    (Stage.RUNNING, _NONE, _ANY, _ANY): FenceAction.CARRY_ON,
    (Stage.RUNNING, _SAME, _ANY, _ANY): FenceAction.CARRY_ON,
    (Stage.RUNNING, _AWAY, _DRAINING, OnFence.SWITCH): FenceAction.DRAIN_AND_WAIT,
    (Stage.RUNNING, _AWAY, _SWITCHED, OnFence.SWITCH): FenceAction.DRAIN_AND_JOIN,
    (Stage.RUNNING, _AWAY, _ANY, OnFence.EXIT): FenceAction.DRAIN_AND_EXIT,
    # Only members that switch wait; one that exits ended once drained.
    (Stage.WAITING, _NONE, _ANY, OnFence.SWITCH): FenceAction.ROLLBACK,
    (Stage.WAITING, _AWAY, _DRAINING, OnFence.SWITCH): FenceAction.WAIT,
    (Stage.WAITING, _AWAY, _SWITCHED, OnFence.SWITCH): FenceAction.JOIN_TARGET,
    (Stage.WAITING, _SAME, _DRAINING, OnFence.SWITCH): FenceAction.WAIT,
    (Stage.WAITING, _SAME, _SWITCHED, OnFence.SWITCH): FenceAction.JOIN_TARGET,
}


class FenceDecisionError(ValueError):
    """A combination the table does not list: a defect in whoever asked, never guessed at."""


@dataclass(frozen=True)
class FenceDecision:
    """What to do, and the coordination to be on afterwards (None: none, the member waits or
    ends)."""

    action: FenceAction
    join: str | None

    @property
    def drains(self) -> bool:
        return self.action in (FenceAction.DRAIN_AND_WAIT, FenceAction.DRAIN_AND_JOIN,
                               FenceAction.DRAIN_AND_EXIT)


def decide(stage: Stage, on: str, fence: Fence | None, on_fence: str) -> FenceDecision:
    """What a member at `stage` does, being on `on` (or starting on it, or drained from it),
    when the group's fence is `fence`."""
    for name, value, allowed in (("on", on, COORDINATIONS),
                                 ("on_fence", on_fence, ON_FENCE_CHOICES)):
        if value not in allowed:
            raise FenceDecisionError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    where = _NONE if fence is None else _SAME if fence.to == on else _AWAY
    phase = _ANY if fence is None else fence.phase
    action = _lookup(stage, where, phase, on_fence)
    return FenceDecision(action, _joined(action, on, fence))


def _lookup(stage: Stage, where: str, phase: str, on_fence: str) -> FenceAction:
    for key in ((stage, where, phase, on_fence), (stage, where, _ANY, on_fence),
                (stage, where, phase, _ANY), (stage, where, _ANY, _ANY)):
        if key in _TABLE:
            return _TABLE[key]
    raise FenceDecisionError(f"no fence rule for a member {stage.value} with the fence "
                             f"{where} ({phase}) and cutover.on.fence={on_fence}")


def _joined(action: FenceAction, on: str, fence: Fence | None) -> str | None:
    # A rollback goes back to where the member drained from: the group is still there (the
    # command rolls back by switching the fence to it; a fence deleted by hand means the same),
    # whatever coordination the member was configured with at first.
    if action in (FenceAction.CARRY_ON, FenceAction.ROLLBACK):
        return on
    if action in (FenceAction.JOIN_TARGET, FenceAction.DRAIN_AND_JOIN):
        assert fence is not None  # the table joins a target only when there is a fence
        return fence.to
    return None


@dataclass(frozen=True)
class GroupMoved:
    """Why a connector ended (its streams ended with it): `group cutover` fenced its group,
    and what the member does next (`decision`). `kafka` is how the member reached Kafka, for
    a member that joins Kafka's coordinator next without `bootstrap.servers` of its own."""

    group: str
    fence: Fence | None
    decision: FenceDecision
    kafka: KafkaAccess | None = None

    def describe(self) -> str:
        if self.fence is None:
            return f"group {self.group} has no cutover fence"
        return (f"group {self.group} is moving to {self.fence.to}'s coordination "
                f"(cutover fence {self.fence.phase})")


class GroupMovedError(ZkConsumerError):
    """A member could not start where it was started: the group is moving (or moved) away;
    `moved` says where and what to do (wait, join the target, or refuse)."""

    def __init__(self, moved: GroupMoved) -> None:
        self.moved = moved
        then = ("and cutover.on.fence=exit: not starting"
                if moved.decision.action is FenceAction.REFUSE_START
                else f"so this member must {moved.decision.action.value}")
        super().__init__(f"{moved.describe()} {then}")

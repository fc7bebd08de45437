"""What `group cutover` does next, decided from one look at the group and nothing else.

The command is a loop of look, decide, act: every decision is taken from what ZooKeeper and
Kafka hold now (the fence, who is registered where, the offsets), never from what an earlier
run of the command did, so a run killed at any point is finished by the next one. The fence's
phase is where a move stands (see `zkconsumer.znodes.fence`):

- no fence (or one that finished a move the other way): write the fence, `draining`;
- `draining` to the target: wait until the old coordination has no member that honours the
  fence, then copy every offset forward into the target storage (read back), then `switched`;
- `draining` the other way: the operator asks for the way back, a rollback: the fence is
  switched to where the group was (never deleted: its version only grows, so a run that read
  an older fence cannot overwrite a newer one);
- `switched` to the target: already cut over, nothing to do.

Before any of that, anything that would make the move unsafe is a refusal in one line that
names every such thing found, members that cannot honour the fence (the reference consumer, an
older zkconsumer) first unless forced, then a coordinator that cannot be asked, no offsets to
carry, members already live on the target, a deleted topic in the offsets; an unknown group is
refused on its own. No offsets block only a group with no member that drains: a member that
honours the fence commits to both storages as it drains, before anything is copied.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from zkconsumer.admin.plans import Change, Plan, PlanRow
from zkconsumer.model import TopicPartition, never_backwards
from zkconsumer.znodes.fence import (
    Fence,
    FenceAwareMember,
    FencePhase,
    OnFence,
    other_coordination,
)

ZOOKEEPER: Final = "zookeeper"
KAFKA: Final = "kafka"
# The one state in which Kafka's coordinator describes its members' subscriptions (where a
# fence-aware member's marker is): in any other, DescribeGroups lists members without them.
STABLE: Final = "Stable"
# How long a cutover waits, by default, for the members to leave and then to arrive.
DEFAULT_TIMEOUT_S: Final = 120.0


@dataclass(frozen=True)
class KafkaMember:
    """A member of the group on Kafka's coordinator, as far as the cutover cares."""

    member_id: str
    client_host: str = ""
    marked_as: str | None = None  # `marked_consumer_id` of its subscription's user data

    @property
    def name(self) -> str:
        return f"{self.member_id} ({self.client_host})" if self.client_host else self.member_id


@dataclass(frozen=True)
class CutoverView:
    """One look at the group. `kafka_state` is None when the coordinator does not know the
    group (never joined, or a 0.9 coordinator that forgot it); `coordinator_error` says why
    Kafka's coordinator could not be asked (then nothing else from Kafka is known)."""

    group: str
    fence: Fence | None = None
    in_zookeeper: bool = False
    zookeeper_members: tuple[str, ...] = ()
    fence_aware: Mapping[str, FenceAwareMember] = field(default_factory=dict)
    kafka_state: str | None = None
    kafka_members: tuple[KafkaMember, ...] = ()
    coordinator_error: str | None = None
    zookeeper_offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    kafka_offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    missing_topics: frozenset[str] = frozenset()

    def offsets_in(self, coordination: str) -> Mapping[TopicPartition, int]:
        return self.zookeeper_offsets if coordination == ZOOKEEPER else self.kafka_offsets

    def honours_fence(self, member: str | KafkaMember) -> bool:
        """A ZooKeeper member (its consumer id) with a fence-aware znode; a Kafka member whose
        marker names a fence-aware znode that is there."""
        named = member.marked_as if isinstance(member, KafkaMember) else member
        return named is not None and named in self.fence_aware

    def judged(self, member: str | KafkaMember) -> bool:
        """Whether this look tells if `member` honours the fence: always for a ZooKeeper
        member; for a Kafka member only in a Stable group, the coordinator leaving out every
        member's subscription otherwise (as members leave one by one while they drain)."""
        return not isinstance(member, KafkaMember) or self.kafka_state == STABLE

    def members_on(self, coordination: str) -> list[str | KafkaMember]:
        return list(self.zookeeper_members if coordination == ZOOKEEPER else self.kafka_members)


@dataclass(frozen=True)
class CutoverRequest:
    group: str
    target: str
    force: bool = False
    skip_missing_topics: bool = False


# -- the decisions ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Refuse:
    """Nothing to do safely: one line for the operator."""

    line: str


@dataclass(frozen=True)
class AlreadyCutOver:
    fence: Fence


@dataclass(frozen=True)
class RollBack:
    """`fence` (still draining) gives way to `back`, switched to where the group was: the
    members waiting on it go back there, and so do members started later."""

    fence: Fence
    back: Fence


@dataclass(frozen=True)
class WriteFence:
    fence: Fence
    replaces: Fence | None  # a finished move the other way, or None


@dataclass(frozen=True)
class AwaitDrain:
    """The fence is out; these members (names) are still on the old coordination."""

    fence: Fence
    remaining: tuple[str, ...]


@dataclass(frozen=True)
class CopyOffsets:
    """The old coordination is empty: write this plan, read it back, then switch."""

    fence: Fence
    plan: Plan


Decision = Refuse | AlreadyCutOver | RollBack | WriteFence | AwaitDrain | CopyOffsets


def decide(view: CutoverView, request: CutoverRequest, now_ms: int) -> Decision:
    """The next step of moving `view`'s group to `request.target`."""
    target, source = request.target, other_coordination(request.target)
    group, fence = view.group, view.fence
    known_on_kafka = view.kafka_state is not None or bool(view.kafka_offsets)
    if not view.in_zookeeper and view.coordinator_error is not None:
        return Refuse(_unreachable(view))
    if not view.in_zookeeper and not known_on_kafka:
        return Refuse(f"no group {group} under /consumers or on Kafka's group coordinator")
    if fence is not None and fence.to == target and fence.switched:
        return AlreadyCutOver(fence)
    if fence is not None and fence.to == source and not fence.switched:
        return RollBack(fence, Fence(target, FencePhase.SWITCHED, now_ms))
    moving = fence is not None and fence.to == target  # draining, written by an earlier run
    blockers = _blockers(view, request, moving)
    if blockers:
        return Refuse(_one_line(blockers) + (_RESUME_HINT.format(target=target, source=source)
                                             if moving else "; nothing was written"))
    if fence is None or not moving:
        return WriteFence(Fence(target, FencePhase.DRAINING, now_ms), fence)
    members = view.members_on(source)
    remaining = tuple(_waited(m) for m in members
                      if view.honours_fence(m) or not view.judged(m))
    # A member that promised but has not registered (or joined) yet is one step from
    # consuming on the old coordination: it is waited for too (it sees the fence once in).
    counted = {m if isinstance(m, str) else m.marked_as for m in members}
    remaining += tuple(consumer_id for consumer_id, promise in sorted(view.fence_aware.items())
                       if promise.coordination == source and consumer_id not in counted)
    if remaining:
        return AwaitDrain(fence, remaining)
    return CopyOffsets(fence, copy_plan(view, request))


_RESUME_HINT = ("; the fence (draining to {target}) is left as it is: run the command again to "
                "resume, or with --to {source} to roll back")


def _blockers(view: CutoverView, request: CutoverRequest, moving: bool) -> list[str]:
    """Everything that makes the move unsafe now, all of it at once so that the operator
    fixes it in one go: members that can never honour the fence first (by consumer id), as
    the one thing no second run cures by itself."""
    target, source, group = request.target, other_coordination(request.target), view.group
    members = view.members_on(source)
    blockers = []
    unfenced = sorted((m for m in members if view.judged(m) and not view.honours_fence(m)),
                      key=_name)
    if unfenced and not request.force:
        names = ", ".join(_name(m) for m in unfenced[:5])
        blockers.append(
            f"{len(unfenced)} member(s) of group {group} on {_coordination_name(source)} "
            f"cannot honour the fence: {names}; stop them (or restart them as zkconsumer "
            f"members), or --force to leave them consuming on {_coordination_name(source)}, "
            "where their partitions may be delivered twice")
    if view.coordinator_error is not None:
        blockers.append(_unreachable(view))
    # A member that honours the fence commits to both storages as it drains, before anything
    # is copied: a group with one has offsets by then (or, having consumed nothing, needs none).
    drains = any(view.honours_fence(m) for m in members)
    if not view.zookeeper_offsets and not view.kafka_offsets and not drains and not moving \
            and view.coordinator_error is None:  # else Kafka's offsets are unknown
        blockers.append(f"group {group} has no committed offsets in ZooKeeper or Kafka and no "
                        "member that drains to commit them: there is nothing to carry over")
    live = view.members_on(target)
    if live:
        names = ", ".join(_name(m) for m in live[:5])
        blockers.append(
            f"group {group} is already live on {_coordination_name(target)} with {len(live)} "
            f"member(s) ({names}); a group is on one coordination at a time: stop them first")
    if view.missing_topics and not request.skip_missing_topics:
        topics = ", ".join(sorted(view.missing_topics)[:5])
        blockers.append(f"topic {topics} no longer exists but group {group} has offsets for it; "
                        "they are left where they are and not carried over: run again with "
                        "--skip-missing-topics to cut over without them")
    if any(not view.judged(m) for m in members) and not moving and not request.force:
        blockers.append(
            f"group {group} is rebalancing on Kafka's group coordinator (state "
            f"{view.kafka_state}), which describes its members' subscriptions only once "
            "Stable: whether they honour the fence cannot be told now; run the command again "
            "in a moment")
    return blockers


def _one_line(blockers: list[str]) -> str:
    """One blocker as it is; several numbered, in one line (a refusal is one `error:` line)."""
    if len(blockers) == 1:
        return blockers[0]
    numbered = [f"({n}) {blocker}" for n, blocker in enumerate(blockers, 1)]
    return f"{len(blockers)} things stand in the way: " + ". ".join(numbered)


def _unreachable(view: CutoverView) -> str:
    return (f"cannot cut over group {view.group}: Kafka's group coordinator cannot be asked "
            f"({view.coordinator_error})")


def _coordination_name(coordination: str) -> str:
    return "ZooKeeper" if coordination == ZOOKEEPER else "Kafka's group coordinator"


def _name(member: str | KafkaMember) -> str:
    return member.name if isinstance(member, KafkaMember) else member


def _waited(member: str | KafkaMember) -> str:
    """A member waited for, by the consumer id it promised under (as `members moved` names
    it); a Kafka member that promised none by its member id and host."""
    if isinstance(member, KafkaMember) and member.marked_as is not None:
        return member.marked_as
    return _name(member)


# -- the offsets ---------------------------------------------------------------------------------

def copy_plan(view: CutoverView, request: CutoverRequest) -> Plan:
    """Every offset of the old coordination's storage into the target's, never backwards: a
    partition whose target offset is ahead (a member that drained committed it there) keeps
    it. Offsets of deleted topics stay where they are (with `--skip-missing-topics`)."""
    source = view.offsets_in(other_coordination(request.target))
    target = view.offsets_in(request.target)
    rows = tuple(PlanRow(view.group, tp, target.get(tp), never_backwards(target.get(tp), offset))
                 for tp, offset in sorted(source.items())
                 if tp.topic not in view.missing_topics)
    return Plan(rows, allow_rewind=False)


def copy_words(change: Change, done: bool) -> str:
    """A row of the offsets' copy as the cutover says it, in the dry run (`done` false) and in
    the report alike: `to copy` / `copied`, or `already there` (the target has it: the members
    commit to both storages while they drain, so a row the dry run had to copy is often
    there by the time of the copy)."""
    if change == Change.UNCHANGED:
        return "already there"
    if change == Change.WRITE:
        return "copied" if done else "to copy"
    return change.value


def copy_summary(plan: Plan, done: bool) -> str:
    """The copy's rows counted, in `copy_words`' words."""
    counts = plan.counts()
    copied, there = counts[Change.WRITE.value], counts[Change.UNCHANGED.value]
    if done:
        return (f"offsets: {copied} copied, {there} already there (members that drain "
                "commit to both storages)")
    return (f"offsets: {copied} to copy, {there} already there; members that drain commit to "
            "both storages, so more may be already there when the copy comes")


def unverified(plan: Plan, read_back: Mapping[TopicPartition, int]
               ) -> list[tuple[TopicPartition, int, int | None]]:
    """The rows whose offset did not read back at least as far as planned: (partition,
    planned, read)."""
    return [(row.partition, row.new, read_back.get(row.partition)) for row in plan.rows
            if read_back.get(row.partition, -1) < row.new]


def moving_members(fence_aware: Mapping[str, FenceAwareMember], source: str) -> list[str]:
    """The fence-aware members of the old coordination that join the new one in the same
    process (`cutover.on.fence=switch`); the others end when drained."""
    return sorted(consumer_id for consumer_id, member in fence_aware.items()
                  if member.coordination == source and member.on_fence == OnFence.SWITCH)


# -- the moved members' arrival -------------------------------------------------------------------

def not_yet_arrived(expected: frozenset[TopicPartition], assigned: Iterable[TopicPartition],
                    joined: int, moving: int) -> str | None:
    """What the new coordination still lacks before the move is done, in words (None:
    nothing): a partition the old coordination had that is not assigned there yet, or fewer
    members there than were moving. Every partition assigned is not enough: the moved members
    join one after another, and the first of them to join is given every partition, in a
    group that rebalances again as each of the others arrives."""
    missing = sorted(expected - set(assigned))
    if missing:
        return f"{len(missing)} partition(s) still not assigned there, e.g. {missing[0]}"
    if joined < moving:
        return f"only {joined} of the {moving} member(s) moving there joined"
    return None


# -- the pause each partition saw ------------------------------------------------------------------

FROM_OWNER_RELEASED: Final = "owner released"
FROM_FENCE: Final = "fence written"


@dataclass(frozen=True)
class Pause:
    partition: TopicPartition
    pause_ms: int | None  # None: not assigned on the new coordination within the wait
    since: str            # FROM_OWNER_RELEASED or FROM_FENCE


def partition_pauses(partitions: Iterable[TopicPartition], fence: Fence,
                     released_ms: Mapping[TopicPartition, int],
                     assigned_ms: Mapping[TopicPartition, int]) -> list[Pause]:
    """From when the old owner let go (seen by this run; else from the fence's start) to when
    the new coordination assigned the partition (as seen by this run)."""
    pauses = []
    for tp in sorted(set(partitions)):
        since = FROM_OWNER_RELEASED if tp in released_ms else FROM_FENCE
        start = released_ms.get(tp, fence.started_ms)
        end = assigned_ms.get(tp)
        pauses.append(Pause(tp, None if end is None else max(0, end - start), since))
    return pauses

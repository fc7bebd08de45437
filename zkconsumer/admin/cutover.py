"""`group cutover`'s edge: one look at the group in ZooKeeper and Kafka, the step
`cutover_plan.decide` picks from it, done, and the next look.

Each step is one write that a later run can see (the fence created, the offsets copied, the
fence switched), and each is logged once done, so a run killed anywhere is finished by the next
one from what the znodes say. Every write of the fence is conditional on the version this run
read: two operators (or two runs) racing cannot both move the same fence.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError

from zkconsumer.admin.context import AdminContext
from zkconsumer.admin.cutover_plan import (
    DEFAULT_TIMEOUT_S,
    STABLE,
    ZOOKEEPER,
    AlreadyCutOver,
    AwaitDrain,
    CopyOffsets,
    CutoverRequest,
    CutoverView,
    KafkaMember,
    Pause,
    Refuse,
    RollBack,
    WriteFence,
    copy_plan,
    decide,
    moving_members,
    not_yet_arrived,
    partition_pauses,
    unverified,
)
from zkconsumer.admin.offset_writes import OffsetWrite, write_and_verify
from zkconsumer.admin.plans import Plan
from zkconsumer.errors import ZkConsumerError, ZnodeDataError, describe_error
from zkconsumer.logs import get_logger
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.coordinator_groups import CoordinatorGroup
from zkconsumer.zk.group_state import read_fence, read_owners
from zkconsumer.zk.registry import children
from zkconsumer.znodes.fence import (
    Fence,
    FenceAwareMember,
    marked_consumer_id,
    other_coordination,
)
from zkconsumer.znodes.paths import GroupPaths

log = get_logger(__name__)

# How often the coordinator is asked (and owners read) while waiting: the bound on how late a
# release or an assignment is seen, and so on the pauses reported.
POLL_S = 0.25


class CutoverRefused(ZkConsumerError):
    """The group is in no state to be moved (or moved further); nothing was written by it."""


class CutoverInterrupted(ZkConsumerError):
    """A step failed after the fence was out: the fence stays, and the command resumes."""


@dataclass
class CutoverReport:
    group: str
    source: str
    target: str
    outcome: str                     # dry run | switched | already cut over | rolled back
    next_step: str = ""              # what the run did last, or (dry run) would do next
    plan: Plan | None = None
    members_moved: list[str] = field(default_factory=list)
    partitions: int = 0
    offsets_verified: int = 0
    pauses: list[Pause] = field(default_factory=list)


@dataclass(frozen=True)
class _Look:
    """A `CutoverView` and what the edge needs besides: the fence's version for conditional
    writes, and which partitions each coordination has assigned now."""

    view: CutoverView
    fence_version: int | None
    owned_on: dict[str, frozenset[TopicPartition]]


def cut_over(ctx: AdminContext, request: CutoverRequest, execute: bool,
             timeout_s: float = DEFAULT_TIMEOUT_S,
             clock: Callable[[], float] = time.time) -> CutoverReport:
    """Moves the group one step at a time until it is switched (or rolled back); with
    `execute` false, looks once and says what the next step would be."""
    source = other_coordination(request.target)
    if not execute:
        return _dry_run(ctx, request, source, clock)
    return _Run(ctx, request, timeout_s, clock).until_done()


def _dry_run(ctx: AdminContext, request: CutoverRequest, source: str,
             clock: Callable[[], float]) -> CutoverReport:
    look = _look(ctx, request)
    decision = decide(look.view, request, int(clock() * 1000))
    report = CutoverReport(request.group, source, request.target, "dry run")
    if isinstance(decision, Refuse):
        raise CutoverRefused(decision.line)
    if isinstance(decision, AlreadyCutOver):
        report.outcome = "already cut over"
        return report
    if isinstance(decision, RollBack):
        report.next_step = f"roll back: delete the fence (draining to {decision.fence.to})"
        return report
    if isinstance(decision, WriteFence):
        report.next_step = f"write the fence (draining to {request.target})"
    elif isinstance(decision, AwaitDrain):
        report.next_step = (f"wait for {len(decision.remaining)} member(s) to leave {source}: "
                            f"{', '.join(decision.remaining[:5])}")
    else:
        report.next_step = f"copy the offsets to {request.target}, then switch"
    report.plan = copy_plan(look.view, request)
    report.members_moved = moving_members(look.view.fence_aware, source)
    return report


class _Run:
    """One executing run: the loop of look, decide, act, and what it saw along the way (when
    each partition was let go on the old coordination, which members were moving)."""

    def __init__(self, ctx: AdminContext, request: CutoverRequest, timeout_s: float,
                 clock: Callable[[], float]) -> None:
        self._ctx = ctx
        self._request = request
        self._source = other_coordination(request.target)
        self._timeout_s = timeout_s
        self._clock = clock
        self._paths = GroupPaths(request.group)
        self._released_ms: dict[TopicPartition, int] = {}
        self._owned_before: frozenset[TopicPartition] | None = None
        self._ever_owned: set[TopicPartition] = set()
        self._moving: set[str] = set()
        self._drain_deadline: float | None = None

    def until_done(self) -> CutoverReport:
        fence_out = False
        try:
            while True:
                look = self._observe()
                fence_out = look.view.fence is not None and look.view.fence.to == \
                    self._request.target
                decision = decide(look.view, self._request, self._now_ms())
                if isinstance(decision, Refuse):
                    raise CutoverRefused(decision.line)
                if isinstance(decision, AlreadyCutOver):
                    return self._report("already cut over")
                if isinstance(decision, RollBack):
                    return self._roll_back(decision, look)
                if isinstance(decision, WriteFence):
                    self._write_fence(decision, look)
                    fence_out = True
                elif isinstance(decision, AwaitDrain):
                    self._await_drain(decision)
                elif isinstance(decision, CopyOffsets):
                    return self._copy_and_switch(decision, look)
        except (CutoverRefused, CutoverInterrupted):
            raise
        except (ZkConsumerError, KazooException) as exc:
            if not fence_out:
                raise
            what = describe_error(exc) if isinstance(exc, KazooException) else str(exc)
            raise CutoverInterrupted(f"{what}{self._resume_hint()}") from None

    # -- the steps --------------------------------------------------------------------------

    def _write_fence(self, decision: WriteFence, look: _Look) -> None:
        zk = self._ctx.zk
        try:
            if decision.replaces is None:
                zk.create(self._paths.fence, decision.fence.encode(), makepath=True)
            else:
                zk.set(self._paths.fence, decision.fence.encode(), version=look.fence_version)
        except (NodeExistsError, BadVersionError, NoNodeError):
            raise CutoverRefused(f"the fence of group {self._request.group} changed while "
                                 "this command was writing it (another cutover?); nothing was "
                                 "written: run it again") from None
        log.info("cutover fence written", group=self._request.group, to=decision.fence.to,
                 phase=decision.fence.phase)

    def _await_drain(self, decision: AwaitDrain) -> None:
        now = self._clock()
        if self._drain_deadline is None:
            self._drain_deadline = now + self._timeout_s
            self._ctx.reporter.note(f"waiting up to {self._timeout_s:g}s for "
                                    f"{len(decision.remaining)} member(s) to leave "
                                    f"{self._source}: {', '.join(decision.remaining[:5])}")
        if now > self._drain_deadline:
            raise CutoverInterrupted(
                f"{len(decision.remaining)} member(s) of group {self._request.group} still on "
                f"{self._source} after {self._timeout_s:g}s: "
                f"{', '.join(decision.remaining[:5])}{self._resume_hint()}")
        self._wait_for_change()

    def _copy_and_switch(self, decision: CopyOffsets, look: _Look) -> CutoverReport:
        plan = decision.plan
        target = self._request.target
        write = OffsetWrite(target, self._source, plan)
        if plan.writes():
            write_and_verify(self._ctx, write)
        store = self._ctx.store(target, self._request.group)
        read_back = store.fetch([row.partition for row in plan.rows])
        wrong = unverified(plan, read_back)
        if wrong:
            tp, wanted, found = wrong[0]
            raise CutoverInterrupted(
                f"{len(wrong)} offset(s) of group {self._request.group} did not read back in "
                f"{target} as written, e.g. {tp}: wrote {wanted}, read {found}"
                f"{self._resume_hint()}")
        log.info("cutover offsets copied", group=self._request.group, to=target,
                 rows=len(plan.rows), written=sum(map(len, plan.writes().values())))
        self._moving.update(moving_members(look.view.fence_aware, self._source))
        try:
            self._ctx.zk.set(self._paths.fence, decision.fence.moved_on().encode(),
                             version=look.fence_version)
        except (BadVersionError, NoNodeError):
            raise CutoverInterrupted(f"the fence of group {self._request.group} changed while "
                                     "the offsets were copied (another cutover, or a rollback?)"
                                     f"{self._resume_hint()}") from None
        log.info("cutover switched", group=self._request.group, to=target)
        report = self._report("switched")
        report.plan = plan
        report.offsets_verified = len(plan.rows)
        expected = frozenset(self._ever_owned) or frozenset(row.partition for row in plan.rows)
        report.partitions = len(expected)
        if self._moving:
            report.pauses = self._await_new_owners(decision.fence, expected)
        return report

    def _roll_back(self, decision: RollBack, look: _Look) -> CutoverReport:
        try:
            self._ctx.zk.set(self._paths.fence, decision.back.encode(),
                             version=look.fence_version)
        except (BadVersionError, NoNodeError):
            raise CutoverRefused(f"the fence of group {self._request.group} changed while this "
                                 "command was rolling it back; run it again") from None
        log.info("cutover rolled back", group=self._request.group, fence_to=decision.fence.to)
        report = self._report("rolled back")
        report.next_step = (f"the fence draining to {decision.fence.to} is switched back to "
                            f"{decision.back.to}")
        return report

    def _await_new_owners(self, fence: Fence, expected: frozenset[TopicPartition]
                          ) -> list[Pause]:
        """Until every partition the members let go is assigned again on the new coordination
        (on Kafka's, in a Stable group) and every moving member joined it; bounded by the
        timeout. A partition's pause ends when it is first seen assigned there."""
        target = self._request.target
        assigned_ms: dict[TopicPartition, int] = {}
        deadline = self._clock() + self._timeout_s
        while True:
            look = self._look_now()
            settled = target == ZOOKEEPER or look.view.kafka_state == STABLE
            if settled:
                for tp in look.owned_on[target] & expected:
                    assigned_ms.setdefault(tp, self._now_ms())
            lacking = not_yet_arrived(expected, assigned_ms.keys(),
                                      len(look.view.members_on(target)) if settled else 0,
                                      len(self._moving))
            if lacking is None:
                return partition_pauses(expected, fence, self._released_ms, assigned_ms)
            if self._clock() > deadline:
                raise CutoverInterrupted(
                    f"group {self._request.group} is switched to {target} (running the command "
                    f"again says so), but after {self._timeout_s:g}s {lacking}: see "
                    "`zkconsumer group describe`")
            self._wait_for_change()

    # -- looking --------------------------------------------------------------------------------

    def _observe(self) -> _Look:
        """A look, noting which old-coordination partitions were let go since the last one."""
        look = self._look_now()
        owned = look.owned_on[self._source]
        if self._owned_before is not None:
            now_ms = self._now_ms()
            for tp in self._owned_before - owned:
                self._released_ms.setdefault(tp, now_ms)
        self._owned_before = owned
        self._ever_owned |= owned
        self._moving.update(moving_members(look.view.fence_aware, self._source))
        return look

    def _look_now(self) -> _Look:
        return _look(self._ctx, self._request)

    def _wait_for_change(self) -> None:
        """Until a member comes or goes in ZooKeeper, or the poll interval is up (Kafka's
        coordinator tells nobody, so it is asked again)."""
        changed = threading.Event()
        for path in (self._paths.ids, self._paths.fence_aware):
            try:
                self._ctx.zk.get_children(path, watch=lambda _event: changed.set())
            except NoNodeError:
                pass
        changed.wait(POLL_S)

    def _resume_hint(self) -> str:
        return (f"; the fence stays as it is: run the command again to resume, or with "
                f"--to {self._source} to roll back while it is draining")

    def _report(self, outcome: str) -> CutoverReport:
        return CutoverReport(self._request.group, self._source, self._request.target, outcome,
                             members_moved=sorted(self._moving))

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)


def _look(ctx: AdminContext, request: CutoverRequest) -> _Look:
    zk = ctx.zk
    group = request.group
    paths = GroupPaths(group)
    in_zookeeper = zk.exists(paths.root) is not None
    fence, fence_version = read_fence(zk, group)
    # Promises before members: a member makes its promise before it joins and withdraws it
    # after it left, so one read in between (leaving as the command looks) is seen gone from
    # both, never as a member without a promise.
    fence_aware = _fence_aware(zk, paths)
    # Members before offsets: a member commits its last offsets before it leaves, so offsets
    # read after seeing it gone are its last (read before, they could be older, and a copy
    # made from them would move back what the member carried over itself).
    zookeeper_members = tuple(children(zk, paths.ids))
    coordinator, coordinator_error = None, None
    try:
        coordinator = ctx.coordinator_group(group)
    except ZkConsumerError as exc:
        coordinator_error = str(exc)
    zookeeper_offsets = ctx.read_offsets("zookeeper", group) if in_zookeeper else {}
    # The way back carries every Kafka offset: a group that lived on Kafka's coordinator may
    # have topics ZooKeeper never heard of.
    kafka_offsets = {} if coordinator_error else _kafka_offsets(
        ctx, group, in_zookeeper and request.target != ZOOKEEPER, coordinator)
    topics = {tp.topic for tp in (*zookeeper_offsets, *kafka_offsets)}
    # Without the coordinator the command refuses anyway: the brokers are not asked again.
    existing = {tp.topic for tp in ctx.partitions_of(topics)} \
        if topics and not coordinator_error else topics
    view = CutoverView(
        group, fence, in_zookeeper, zookeeper_members, fence_aware,
        None if coordinator is None else coordinator.state,
        () if coordinator is None else tuple(
            KafkaMember(m.member_id, m.client_host, marked_consumer_id(m.user_data))
            for m in coordinator.members),
        coordinator_error, zookeeper_offsets, kafka_offsets, frozenset(topics - existing))
    return _Look(view, fence_version,
                 {"zookeeper": frozenset(read_owners(zk, group)) if in_zookeeper else frozenset(),
                  "kafka": frozenset() if coordinator is None else frozenset(coordinator.owners())})


def _kafka_offsets(ctx: AdminContext, group: str, of_zookeeper_topics: bool,
                   coordinator: CoordinatorGroup | None) -> dict[TopicPartition, int]:
    """`of_zookeeper_topics` (a group ZooKeeper has, moving to Kafka): its Kafka offsets of
    every topic it has anything for there and of those its Kafka members are assigned.
    Otherwise every Kafka offset it has."""
    if of_zookeeper_topics:
        assigned = {tp.topic for tp in (coordinator.owners() if coordinator else ())}
        return ctx.read_offsets("kafka", group, assigned)
    answer = ctx.every_kafka_offset([group])
    if group in answer.failed:
        raise ZkConsumerError(f"reading the Kafka offsets of group {group} failed: "
                              f"{answer.failed[group]}")
    return answer.found.get(group, {})


def _fence_aware(zk: KazooClient, paths: GroupPaths) -> dict[str, FenceAwareMember]:
    """Every fence-aware member's promise; one whose znode went while being read is gone."""
    found = {}
    for consumer_id in children(zk, paths.fence_aware):
        path = paths.fence_aware_member(consumer_id)
        try:
            data, _ = zk.get(path)
        except NoNodeError:
            continue
        try:
            found[consumer_id] = FenceAwareMember.decode(path, data)
        except ZnodeDataError as exc:
            # A promise that cannot be read is no promise: that member is named among those
            # that cannot honour the fence, and this says why.
            log.warning("unreadable fence-aware znode; its member counts as not honouring the "
                        "fence", error=str(exc))
    return found


def cutover_json(report: CutoverReport) -> dict:
    """The report as `--json` prints it: what the text shows, field for field."""
    plan = report.plan
    return {
        "group": report.group, "from": report.source, "to": report.target,
        "outcome": report.outcome, "dry_run": report.outcome == "dry run",
        "next_step": report.next_step or None,
        "rows": [] if plan is None else [
            {"topic": r.partition.topic, "partition": r.partition.partition,
             "current": r.current, "new": r.new, "change": plan.change_of(r).value}
            for r in plan.rows],
        "members_moved": report.members_moved, "partitions": report.partitions,
        "offsets_verified": report.offsets_verified,
        "pauses": [{"topic": p.partition.topic, "partition": p.partition.partition,
                    "pause_ms": p.pause_ms, "since": p.since} for p in report.pauses],
    }

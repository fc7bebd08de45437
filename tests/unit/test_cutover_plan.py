"""`group cutover`'s decisions, from looks at a group made up here: every phase of the fence,
every refusal, the offsets copied never backwards, and the pauses reported."""

from __future__ import annotations

from dataclasses import replace

import pytest

from zkconsumer.admin.cutover_plan import (
    FROM_FENCE,
    FROM_OWNER_RELEASED,
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
    copy_summary,
    copy_words,
    decide,
    moving_members,
    not_yet_arrived,
    partition_pauses,
    unverified,
)
from zkconsumer.admin.plans import Change
from zkconsumer.model import TopicPartition as TP
from zkconsumer.znodes.fence import (
    Fence,
    FenceAwareMember,
    FencePhase,
    OnFence,
    marked_consumer_id,
)

NOW = 1_800_000_000_000
ZK_MEMBER = "g_host-a-1700000000000-abcdef01"
AWARE_ZK = {ZK_MEMBER: FenceAwareMember("zookeeper", OnFence.SWITCH)}
DRAINING_TO_KAFKA = Fence("kafka", FencePhase.DRAINING, NOW - 5000)
SWITCHED_TO_KAFKA = DRAINING_TO_KAFKA.moved_on()
TO_KAFKA = CutoverRequest("g", "kafka")
TO_ZOOKEEPER = CutoverRequest("g", "zookeeper")


def idle(**changes) -> CutoverView:
    """A stopped legacy group with ZooKeeper offsets, unknown to Kafka's coordinator."""
    base = CutoverView("g", in_zookeeper=True,
                       zookeeper_offsets={TP("t", 0): 10, TP("t", 1): 20})
    return replace(base, **changes)


def kafka_member(marked_as: str | None = None) -> KafkaMember:
    return KafkaMember("kafka-python-1-abc", "/10.0.0.9", marked_as)


# -- phases ---------------------------------------------------------------------------------------

def test_no_fence_writes_one_draining_to_the_target():
    assert decide(idle(), TO_KAFKA, NOW) == WriteFence(Fence("kafka", FencePhase.DRAINING, NOW),
                                                       None)


def test_a_draining_fence_waits_for_the_members_that_honour_it():
    view = idle(fence=DRAINING_TO_KAFKA, zookeeper_members=(ZK_MEMBER,), fence_aware=AWARE_ZK)
    assert decide(view, TO_KAFKA, NOW) == AwaitDrain(DRAINING_TO_KAFKA, (ZK_MEMBER,))


def test_a_member_that_promised_but_has_not_registered_yet_is_waited_for():
    """One step from consuming on ZooKeeper: it sees the fence once registered, and drains."""
    view = idle(fence=DRAINING_TO_KAFKA, fence_aware=AWARE_ZK)
    assert decide(view, TO_KAFKA, NOW) == AwaitDrain(DRAINING_TO_KAFKA, (ZK_MEMBER,))


def test_a_promise_on_the_target_coordination_is_not_waited_for():
    view = idle(fence=DRAINING_TO_KAFKA,
                fence_aware={ZK_MEMBER: FenceAwareMember("kafka", OnFence.SWITCH)})
    assert isinstance(decide(view, TO_KAFKA, NOW), CopyOffsets)


def test_a_drained_group_gets_its_offsets_copied_then_switched():
    decision = decide(idle(fence=DRAINING_TO_KAFKA), TO_KAFKA, NOW)
    assert isinstance(decision, CopyOffsets) and decision.fence == DRAINING_TO_KAFKA
    assert [(r.partition, r.current, r.new) for r in decision.plan.rows] == [
        (TP("t", 0), None, 10), (TP("t", 1), None, 20)]


def test_a_switched_fence_to_the_target_is_already_cut_over():
    view = idle(fence=SWITCHED_TO_KAFKA, kafka_state="Stable",
                kafka_members=(kafka_member(ZK_MEMBER),), fence_aware=AWARE_ZK)
    assert decide(view, TO_KAFKA, NOW) == AlreadyCutOver(SWITCHED_TO_KAFKA)


def test_the_way_back_while_draining_is_a_rollback():
    view = idle(fence=DRAINING_TO_KAFKA, zookeeper_members=("someone-else",))
    assert decide(view, TO_ZOOKEEPER, NOW) == RollBack(
        DRAINING_TO_KAFKA, Fence("zookeeper", FencePhase.SWITCHED, NOW))


def test_the_way_back_after_a_switch_is_a_move_of_its_own():
    view = idle(fence=SWITCHED_TO_KAFKA, kafka_state="Stable", fence_aware=AWARE_ZK,
                kafka_members=(kafka_member(ZK_MEMBER),), kafka_offsets={TP("t", 0): 12})
    assert decide(view, TO_ZOOKEEPER, NOW) == WriteFence(
        Fence("zookeeper", FencePhase.DRAINING, NOW), SWITCHED_TO_KAFKA)
    draining_back = Fence("zookeeper", FencePhase.DRAINING, NOW)
    assert decide(replace(view, fence=draining_back), TO_ZOOKEEPER, NOW) == AwaitDrain(
        draining_back, (ZK_MEMBER,))  # by the consumer id it promised under
    gone = replace(view, fence=draining_back, kafka_state="Empty", kafka_members=())
    decision = decide(gone, TO_ZOOKEEPER, NOW)
    assert isinstance(decision, CopyOffsets)
    assert [(r.partition, r.current, r.new) for r in decision.plan.rows] == [(TP("t", 0), 10, 12)]


def test_forced_members_that_cannot_honour_the_fence_are_not_waited_for():
    view = idle(fence=DRAINING_TO_KAFKA, zookeeper_members=("reference-1",))
    assert isinstance(decide(view, replace(TO_KAFKA, force=True), NOW), CopyOffsets)


# -- refusals ---------------------------------------------------------------------------------------

def refusal(view: CutoverView, request: CutoverRequest = TO_KAFKA) -> str:
    decision = decide(view, request, NOW)
    assert isinstance(decision, Refuse), decision
    return decision.line


def test_an_unknown_group_is_refused():
    line = refusal(CutoverView("g"))
    assert line == "no group g under /consumers or on Kafka's group coordinator"


def test_a_group_only_on_kafka_is_known():
    view = CutoverView("g", kafka_state="Empty", kafka_offsets={TP("t", 0): 3})
    assert isinstance(decide(view, TO_ZOOKEEPER, NOW), WriteFence)


def test_a_group_without_offsets_or_a_member_to_drain_is_refused():
    assert refusal(idle(zookeeper_offsets={})) == (
        "group g has no committed offsets in ZooKeeper or Kafka and no member that drains to "
        "commit them: there is nothing to carry over; nothing was written")


def test_a_member_that_cannot_honour_the_fence_is_named_before_the_missing_offsets():
    """The group's one member is a reference consumer that has not committed yet: both in one
    line, the member first, so the operator does not learn of it only after committing."""
    reference = "g_build-host-1700000000000-0a1b2c3d"
    line = refusal(idle(zookeeper_offsets={}, zookeeper_members=(reference,)))
    assert line.startswith(f"2 things stand in the way: (1) 1 member(s) of group g on "
                           f"ZooKeeper cannot honour the fence: {reference}; stop them")
    assert ". (2) group g has no committed offsets in ZooKeeper or Kafka" in line
    assert line.endswith("nothing to carry over; nothing was written")
    forced = decide(idle(zookeeper_offsets={}, zookeeper_members=(reference,)),
                    replace(TO_KAFKA, force=True), NOW)
    assert isinstance(forced, Refuse) and forced.line.startswith("group g has no committed")


def test_every_blocker_is_named_members_by_consumer_id_first():
    later, earlier = "g_b-1700000000000-00000002", "g_a-1700000000000-00000001"
    view = idle(zookeeper_members=(later, earlier), zookeeper_offsets={TP("gone", 0): 4},
                missing_topics=frozenset({"gone"}), kafka_state="Stable",
                kafka_members=(kafka_member(),))
    line = refusal(view)
    assert line.startswith(f"3 things stand in the way: (1) 2 member(s) of group g on "
                           f"ZooKeeper cannot honour the fence: {earlier}, {later}; ")
    assert line.index("(2) group g is already live on Kafka's group coordinator") < \
        line.index("(3) topic gone no longer exists")
    assert len(line.splitlines()) == 1


def test_a_live_group_whose_members_honour_the_fence_needs_no_offsets_yet():
    """Their drain commits to both storages before anything is copied; once drained, a group
    that consumed nothing has an empty copy to make and is switched."""
    view = idle(zookeeper_offsets={}, zookeeper_members=(ZK_MEMBER,), fence_aware=AWARE_ZK)
    assert decide(view, TO_KAFKA, NOW) == WriteFence(Fence("kafka", FencePhase.DRAINING, NOW),
                                                     None)
    drained = idle(zookeeper_offsets={}, fence=DRAINING_TO_KAFKA)
    decision = decide(drained, TO_KAFKA, NOW)
    assert isinstance(decision, CopyOffsets) and decision.plan.rows == ()


@pytest.mark.parametrize("in_zookeeper", [True, False])
def test_an_unreachable_coordinator_is_refused(in_zookeeper):
    line = refusal(idle(in_zookeeper=in_zookeeper, coordinator_error="no broker at x:1"))
    assert "Kafka's group coordinator cannot be asked (no broker at x:1)" in line


def test_a_group_live_on_kafka_is_refused_even_forced():
    view = idle(kafka_state="Stable", kafka_members=(kafka_member(),))
    for request in (TO_KAFKA, replace(TO_KAFKA, force=True)):
        line = refusal(view, request)
        assert "already live on Kafka's group coordinator with 1 member(s) " \
               "(kafka-python-1-abc (/10.0.0.9))" in line


def test_a_fence_aware_kafka_member_is_live_on_kafka_too_before_a_switch():
    view = idle(fence=DRAINING_TO_KAFKA, fence_aware=AWARE_ZK, kafka_state="Stable",
                kafka_members=(kafka_member(ZK_MEMBER),))
    line = refusal(view)
    assert "already live on Kafka's group coordinator" in line
    assert "run the command again to resume, or with --to zookeeper to roll back" in line


def test_a_group_live_on_zookeeper_is_refused_going_there():
    view = idle(zookeeper_members=(ZK_MEMBER,), fence_aware=AWARE_ZK,
                kafka_offsets={TP("t", 0): 10})
    assert "already live on ZooKeeper with 1 member(s)" in refusal(view, TO_ZOOKEEPER)


def test_a_deleted_topic_is_refused_unless_skipped():
    view = idle(zookeeper_offsets={TP("t", 0): 10, TP("gone", 0): 4},
                missing_topics=frozenset({"gone"}))
    line = refusal(view)
    assert line.startswith("topic gone no longer exists but group g has offsets for it; "
                           "they are left where they are and not carried over")
    assert "--skip-missing-topics" in line and line.endswith("nothing was written")
    skipping = replace(TO_KAFKA, skip_missing_topics=True)
    assert isinstance(decide(view, skipping, NOW), WriteFence)
    assert [r.partition for r in copy_plan(view, skipping).rows] == [TP("t", 0)]


def test_zookeeper_members_without_a_fence_aware_znode_are_named():
    reference = "g_build-host-1700000000000-0a1b2c3d"
    view = idle(zookeeper_members=(reference, ZK_MEMBER), fence_aware=AWARE_ZK)
    line = refusal(view)
    assert f"1 member(s) of group g on ZooKeeper cannot honour the fence: {reference};" in line
    assert "their partitions may be delivered twice" in line and "--force" in line
    assert isinstance(decide(view, replace(TO_KAFKA, force=True), NOW), WriteFence)


@pytest.mark.parametrize("marker", [None, "not-registered-id"])
def test_kafka_members_without_a_live_marker_are_named(marker):
    view = idle(fence=SWITCHED_TO_KAFKA, kafka_state="Stable", fence_aware=AWARE_ZK,
                kafka_members=(kafka_member(marker),), kafka_offsets={TP("t", 0): 12})
    line = refusal(view, TO_ZOOKEEPER)
    assert "on Kafka's group coordinator cannot honour the fence: " \
           "kafka-python-1-abc (/10.0.0.9)" in line


def test_a_draining_kafka_group_rebalancing_is_waited_for_not_judged():
    """A member leaving sends the group into a rebalance, in which the coordinator describes
    the others without their subscriptions: no marker is seen, and none is missing."""
    draining_back = Fence("zookeeper", FencePhase.DRAINING, NOW)
    view = idle(fence=draining_back, kafka_state="PreparingRebalance", fence_aware=AWARE_ZK,
                kafka_members=(kafka_member(None),), kafka_offsets={TP("t", 0): 12})
    assert decide(view, TO_ZOOKEEPER, NOW) == AwaitDrain(draining_back,
                                                         (kafka_member(None).name,))
    stable = replace(view, kafka_state="Stable")
    assert "cannot honour the fence: kafka-python-1-abc (/10.0.0.9)" in refusal(stable,
                                                                                 TO_ZOOKEEPER)


def test_a_kafka_group_rebalancing_before_the_fence_is_refused_until_it_can_be_judged():
    view = idle(kafka_state="CompletingRebalance", fence_aware=AWARE_ZK,
                kafka_members=(kafka_member(None),), kafka_offsets={TP("t", 0): 12})
    assert refusal(view, TO_ZOOKEEPER) == (
        "group g is rebalancing on Kafka's group coordinator (state CompletingRebalance), "
        "which describes its members' subscriptions only once Stable: whether they honour the "
        "fence cannot be told now; run the command again in a moment; nothing was written")
    assert isinstance(decide(view, replace(TO_ZOOKEEPER, force=True), NOW), WriteFence)


def test_a_refusal_after_the_fence_is_out_says_how_to_resume_or_roll_back():
    view = idle(fence=DRAINING_TO_KAFKA, zookeeper_members=("reference-1",))
    line = refusal(view)
    assert line.endswith("; the fence (draining to kafka) is left as it is: run the command "
                         "again to resume, or with --to zookeeper to roll back")


# -- offsets, members, pauses --------------------------------------------------------------------

def test_the_copy_never_moves_an_offset_backwards():
    view = idle(zookeeper_offsets={TP("t", 0): 10, TP("t", 1): 20, TP("t", 2): 30},
                kafka_offsets={TP("t", 0): 15, TP("t", 1): 20, TP("t", 2): 25, TP("t", 3): 1})
    plan = copy_plan(view, TO_KAFKA)
    assert [(r.partition.partition, r.current, r.new, plan.change_of(r)) for r in plan.rows] == [
        (0, 15, 15, Change.UNCHANGED), (1, 20, 20, Change.UNCHANGED),
        (2, 25, 30, Change.WRITE)]
    assert plan.writes() == {"g": {TP("t", 2): 30}}


def test_the_dry_run_and_the_report_say_the_copy_in_the_same_words():
    """What the dry run had to copy is often already there by the copy (the draining members
    commit to both storages): `already there` then, in both, never an `unchanged` that reads
    as a failure after a `write`."""
    before = copy_plan(idle(), TO_KAFKA)
    after = copy_plan(idle(kafka_offsets={TP("t", 0): 10, TP("t", 1): 20}), TO_KAFKA)
    assert [copy_words(before.change_of(r), done=False) for r in before.rows] == \
        ["to copy", "to copy"]
    assert [copy_words(after.change_of(r), done=True) for r in after.rows] == \
        ["already there", "already there"]
    assert copy_words(Change.WRITE, done=True) == "copied"
    assert copy_summary(before, done=False).startswith("offsets: 2 to copy, 0 already there; ")
    assert copy_summary(after, done=True).startswith("offsets: 0 copied, 2 already there ")


def test_a_read_back_short_of_the_plan_is_unverified():
    plan = copy_plan(idle(), TO_KAFKA)
    assert unverified(plan, {TP("t", 0): 10, TP("t", 1): 20}) == []
    assert unverified(plan, {TP("t", 0): 10, TP("t", 1): 21}) == []
    assert unverified(plan, {TP("t", 0): 9}) == [(TP("t", 0), 10, 9), (TP("t", 1), 20, None)]


def test_the_marker_names_a_consumer_id_and_nothing_else_counts():
    assert marked_consumer_id(b"zkconsumer-fence-aware:" + ZK_MEMBER.encode()) == ZK_MEMBER
    for other in (None, b"", b"zkconsumer-fence-aware:", b"zkconsumer-fence-aware:\xff",
                  b"something else", b"ZKCONSUMER-FENCE-AWARE:x"):
        assert marked_consumer_id(other) is None


def test_moving_members_are_the_switching_ones_of_the_old_coordination():
    aware = {"a": FenceAwareMember("zookeeper", OnFence.SWITCH),
             "b": FenceAwareMember("zookeeper", OnFence.EXIT),
             "c": FenceAwareMember("kafka", OnFence.SWITCH)}
    assert moving_members(aware, "zookeeper") == ["a"]
    assert moving_members(aware, "kafka") == ["c"]


def test_a_pause_runs_from_the_release_seen_or_else_from_the_fence():
    pauses = partition_pauses([TP("t", 1), TP("t", 0), TP("t", 2)], DRAINING_TO_KAFKA,
                              {TP("t", 0): NOW - 1000},
                              {TP("t", 0): NOW, TP("t", 1): NOW + 500})
    assert pauses == [Pause(TP("t", 0), 1000, FROM_OWNER_RELEASED),
                      Pause(TP("t", 1), 5500, FROM_FENCE),
                      Pause(TP("t", 2), None, FROM_FENCE)]


def test_the_move_is_done_once_every_partition_is_assigned_and_every_moving_member_joined():
    expected = frozenset({TP("t", 0), TP("t", 1)})
    assert not_yet_arrived(expected, [TP("t", 1)], joined=3, moving=3) == \
        "1 partition(s) still not assigned there, e.g. t-0"
    # The first moved member to join is given every partition; two more are on their way.
    assert not_yet_arrived(expected, expected, joined=1, moving=3) == \
        "only 1 of the 3 member(s) moving there joined"
    assert not_yet_arrived(expected, expected, joined=3, moving=3) is None
    assert not_yet_arrived(expected, [*expected, TP("u", 0)], joined=4, moving=3) is None
    assert not_yet_arrived(expected, expected, joined=0, moving=0) is None

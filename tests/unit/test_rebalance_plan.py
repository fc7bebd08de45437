"""Incremental rebalance plans: only what moves is released or claimed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.member.plan import plan_rebalance
from zkconsumer.model import TopicPartition as TP


def test_unchanged_ownership_plans_nothing():
    owned = {TP("t", 0): "c-0", TP("t", 1): "c-0"}
    plan = plan_rebalance(owned, dict(owned))
    assert not plan.changes_anything
    assert plan.keep == owned


def test_only_moved_partitions_are_released_and_only_new_ones_claimed():
    owned = {TP("t", 0): "c-0", TP("t", 1): "c-0", TP("t", 2): "c-0"}
    target = {TP("t", 0): "c-0", TP("t", 3): "c-0"}
    plan = plan_rebalance(owned, target)
    assert plan.keep == {TP("t", 0): "c-0"}
    assert plan.release == {TP("t", 1): "c-0", TP("t", 2): "c-0"}
    assert plan.claim == {TP("t", 3): "c-0"}


def test_a_partition_moving_between_our_own_threads_is_released_and_reclaimed():
    plan = plan_rebalance({TP("t", 0): "c-0"}, {TP("t", 0): "c-1"})
    assert plan.release == {TP("t", 0): "c-0"}
    assert plan.claim == {TP("t", 0): "c-1"}
    assert plan.keep == {}


assignments = st.dictionaries(st.builds(TP, st.sampled_from("ab"), st.integers(0, 9)),
                              st.sampled_from(["c-0", "c-1"]), max_size=12)


@given(assignments, assignments)
def test_after_the_plan_we_own_exactly_the_target(owned, target):
    plan = plan_rebalance(owned, target)
    after = {tp: t for tp, t in owned.items() if tp not in plan.release} | dict(plan.claim)
    assert after == target
    assert not set(plan.release) & set(plan.keep)
    assert not set(plan.claim) & set(plan.keep)

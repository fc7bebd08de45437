"""When a Spark read may commit its offsets back to the group: never over a live member's
partitions, never into a group with members on Kafka's group coordinator, never moving an offset
back (pure decision, fake group states)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.model import TopicPartition as TP
from zkconsumer.offsets.coordinator_groups import CoordinatorGroup, CoordinatorMember
from zkconsumer.spark.commit_guard import (
    CommitRefusedError,
    check_commit,
    check_coordinator_group_idle,
)

OURS = {TP("t", 0): 40, TP("t", 1): 25}


def test_partitions_owned_by_a_live_member_are_refused_naming_one_and_its_owner():
    with pytest.raises(CommitRefusedError, match=r"live members owning 1 .*t-1 by m-17-0"):
        check_commit("g", OURS, {TP("t", 1): "m-17-0"}, {TP("t", 0): 10, TP("t", 1): 10})


def test_owners_of_other_partitions_do_not_matter():
    check_commit("g", OURS, {TP("t", 2): "m-17-0", TP("u", 0): "m-17-1"}, {})


@pytest.mark.parametrize("committed", [{}, {TP("t", 0): 40}, {TP("t", 0): 3, TP("t", 1): 25}])
def test_offsets_that_stay_or_move_forward_are_committed(committed):
    check_commit("g", OURS, {}, committed)


def test_an_offset_lower_than_the_groups_is_refused_naming_both():
    with pytest.raises(CommitRefusedError, match=r"t-1 up to 30, past this read's 25"):
        check_commit("g", OURS, {}, {TP("t", 0): 40, TP("t", 1): 30})


def test_a_planned_read_is_refused_when_the_group_moved_since_the_plan():
    with pytest.raises(CommitRefusedError, match=r"moved since this read was planned .*t-0: 5 "
                                                 r"then, 7 now"):
        check_commit("g", OURS, {}, {TP("t", 0): 7}, planned={TP("t", 0): 5})
    check_commit("g", OURS, {}, {TP("t", 0): 5}, planned={TP("t", 0): 5})


PARTITIONS = st.sampled_from([TP("t", p) for p in range(4)])


@given(st.dictionaries(PARTITIONS, st.integers(0, 100), min_size=1),
       st.dictionaries(PARTITIONS, st.just("m-1-0")),
       st.dictionaries(PARTITIONS, st.integers(0, 100)))
def test_whatever_is_allowed_lowers_no_offset_and_touches_no_owned_partition(ours, owners,
                                                                            committed):
    try:
        check_commit("g", ours, owners, committed)
    except CommitRefusedError:
        refused = True
    else:
        refused = False
    racing = any(tp in owners or ours[tp] < committed.get(tp, 0) for tp in ours)
    assert refused == racing


def _described(*member_ids: str, **fields) -> CoordinatorGroup:
    return CoordinatorGroup("g", tuple(CoordinatorMember(m, (TP("t", 0),)) for m in member_ids),
                            **fields)


def test_a_group_the_coordinator_does_not_know_or_that_is_empty_may_be_committed():
    check_coordinator_group_idle("g", None)
    check_coordinator_group_idle("g", _described(state="Empty"))


def test_a_group_with_members_on_the_coordinator_is_refused_naming_them_in_one_line():
    with pytest.raises(CommitRefusedError) as refused:
        check_coordinator_group_idle("g", _described("b-2", "a-1", state="Stable"))
    assert str(refused.value) == (
        "group g is live on Kafka's group coordinator (Stable, 2 member(s): a-1, b-2), which "
        "takes offsets from outside a group only while it has no members; nothing committed")
    with pytest.raises(CommitRefusedError, match=r"5 member\(s\): m-0, m-1, m-2 and 2 more\)"):
        check_coordinator_group_idle("g", _described(*(f"m-{i}" for i in range(5))))


def test_a_group_the_coordinator_could_not_describe_is_refused():
    with pytest.raises(CommitRefusedError, match=r"cannot tell .* \(DescribeGroups error 14\); "
                                                 "nothing committed"):
        check_coordinator_group_idle("g", _described(error="DescribeGroups error 14"))

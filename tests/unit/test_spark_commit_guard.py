"""When a Spark read may commit its offsets back to the group: never over a live member's
partitions, never moving an offset back (pure decision, fake group states)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.model import TopicPartition as TP
from zkconsumer.spark.commit_guard import CommitRefusedError, check_commit

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

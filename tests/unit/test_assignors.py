"""range and roundrobin: fixed reference cases and properties every member relies on."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkconsumer.assignment import (
    MemberSubscription,
    assign,
    consumer_of_thread,
    partitions_owned_by,
    range_assign,
    resolve_member_subscription,
    roundrobin_assign,
)
from zkconsumer.errors import AssignmentError
from zkconsumer.model import TopicPartition as TP


def test_range_gives_the_first_threads_one_extra_partition():
    members = [MemberSubscription(c, {"t": 1}) for c in ("g_a", "g_b", "g_c")]
    result = range_assign(members, {"t": list(range(10))})
    counts = Counter(result.values())
    assert counts == {"g_a-0": 4, "g_b-0": 3, "g_c-0": 3}
    assert [result[TP("t", p)] for p in range(10)] == ["g_a-0"] * 4 + ["g_b-0"] * 3 + ["g_c-0"] * 3


def test_thread_ids_sort_as_strings_so_ten_comes_before_two():
    member = MemberSubscription("g_c", {"t": 11})
    result = range_assign([member], {"t": list(range(11))})
    # string order: -0, -1, -10, -2, ..., -9
    assert result[TP("t", 2)] == "g_c-10"
    assert result[TP("t", 3)] == "g_c-2"


def test_partitions_sort_as_integers():
    member = MemberSubscription("g_c", {"t": 2})
    result = range_assign([member], {"t": [10, 9, 2, 1]})
    assert result == {TP("t", 1): "g_c-0", TP("t", 2): "g_c-0",
                      TP("t", 9): "g_c-1", TP("t", 10): "g_c-1"}


def test_more_threads_than_partitions_leaves_the_last_threads_idle():
    members = [MemberSubscription(c, {"t": 1}) for c in ("g_a", "g_b", "g_c")]
    assert range_assign(members, {"t": [0, 1]}) == {TP("t", 0): "g_a-0", TP("t", 1): "g_b-0"}


def test_topics_without_known_partitions_are_skipped():
    assert range_assign([MemberSubscription("g_a", {"missing": 1})], {}) == {}


def test_roundrobin_deals_partitions_in_java_hash_order():
    # Java hashCode (checked with jshell): "[a,0]" 86974003, "[a,1]" 86974034,
    # "[b,0]" 87003794, "[b,1]" 87003825
    members = [MemberSubscription(c, {"a": 1, "b": 1}) for c in ("g_x", "g_y")]
    result = roundrobin_assign(members, {"a": [0, 1], "b": [0, 1]})
    assert result == {TP("a", 0): "g_x-0", TP("a", 1): "g_y-0",
                      TP("b", 0): "g_x-0", TP("b", 1): "g_y-0"}


def test_roundrobin_follows_the_hash_not_the_partition_number():
    # Java hashCode (checked with jshell): "[t,10]" -1581226645 sorts before "[t,9]" 87540311
    members = [MemberSubscription("g_x", {"t": 1}), MemberSubscription("g_y", {"t": 1})]
    result = roundrobin_assign(members, {"t": [9, 10]})
    assert result == {TP("t", 10): "g_x-0", TP("t", 9): "g_y-0"}


@pytest.mark.parametrize("second", [{"a": 1}, {"a": 2, "b": 1}, {"a": 1, "b": 1, "c": 1}])
def test_roundrobin_refuses_mismatched_subscriptions(second):
    members = [MemberSubscription("g_x", {"a": 1, "b": 1}), MemberSubscription("g_y", second)]
    with pytest.raises(AssignmentError, match="same topics with the same number of streams"):
        roundrobin_assign(members, {"a": [0], "b": [0], "c": [0]})


def test_roundrobin_allows_members_with_different_but_uniform_stream_counts():
    # The reference only requires each topic to be consumed by the same set of threads.
    members = [MemberSubscription("g_x", {"a": 1, "b": 1}), MemberSubscription("g_y", {"a": 2, "b": 2})]
    result = roundrobin_assign(members, {"a": [0, 1, 2], "b": [0, 1, 2]})
    assert Counter(result.values()) == {"g_x-0": 2, "g_y-0": 2, "g_y-1": 2}


def test_unknown_strategy_is_refused():
    with pytest.raises(AssignmentError, match="unknown partition.assignment.strategy"):
        assign("sticky", [], {})


def test_wildcard_registrations_resolve_against_all_topics():
    topics = ["orders", "orders-eu", "payments", "__consumer_offsets"]
    white = resolve_member_subscription("g_a", "white_list", {"orders.*": 2}, topics)
    assert dict(white.topic_streams) == {"orders": 2, "orders-eu": 2}
    black = resolve_member_subscription("g_a", "black_list", {"orders.*": 1}, topics)
    assert dict(black.topic_streams) == {"payments": 1}
    with_internal = resolve_member_subscription("g_a", "black_list", {"orders.*": 1}, topics,
                                                exclude_internal_topics=False)
    assert dict(with_internal.topic_streams) == {"payments": 1, "__consumer_offsets": 1}
    static = resolve_member_subscription("g_a", "static", {"x": 3}, topics)
    assert dict(static.topic_streams) == {"x": 3}


# -- properties ------------------------------------------------------------------------------

topic_names = st.sampled_from(["a", "b", "c"])
member_ids = st.lists(st.sampled_from([f"g_m{i}" for i in range(12)]), min_size=1, max_size=6,
                      unique=True)


@st.composite
def groups(draw, same_subscription: bool):
    ids = draw(member_ids)
    if same_subscription:
        topics = draw(st.sets(topic_names, min_size=1))
        streams = draw(st.integers(1, 4))
        members = [MemberSubscription(c, {t: streams for t in topics}) for c in ids]
    else:
        members = [MemberSubscription(c, draw(st.dictionaries(topic_names, st.integers(1, 12),
                                                              min_size=1)))
                   for c in ids]
    partitions = {t: list(range(draw(st.integers(0, 40)))) for t in "abc"}
    return members, partitions


def _shuffled(members, partitions, seed):
    rng = random.Random(seed)
    members = [MemberSubscription(m.consumer_id,
                                  dict(rng.sample(list(m.topic_streams.items()),
                                                  len(m.topic_streams))))
               for m in rng.sample(members, len(members))]
    partitions = {t: rng.sample(ps, len(ps)) for t, ps in rng.sample(list(partitions.items()),
                                                                       len(partitions))}
    return members, partitions


def _check_complete_and_exclusive(members, partitions, result):
    subscribed = {t for m in members for t in m.topic_streams}
    expected = {TP(t, p) for t in subscribed for p in partitions.get(t, [])}
    assert set(result) == expected
    for tp, thread in result.items():
        owner = consumer_of_thread(thread)
        member = next(m for m in members if m.consumer_id == owner)
        assert tp.topic in member.topic_streams
        assert int(thread.rsplit("-", 1)[1]) < member.topic_streams[tp.topic]


@settings(max_examples=200)
@given(groups(same_subscription=False), st.integers())
def test_range_assigns_every_partition_once_balanced_per_topic_whatever_the_input_order(
        group, seed):
    members, partitions = group
    result = range_assign(members, partitions)
    _check_complete_and_exclusive(members, partitions, result)
    for topic in {t for m in members for t in m.topic_streams}:
        threads = [f"{m.consumer_id}-{i}" for m in members
                   for i in range(m.topic_streams.get(topic, 0))]
        counts = Counter(thread for tp, thread in result.items() if tp.topic == topic)
        loads = [counts.get(thread, 0) for thread in threads]
        assert max(loads) - min(loads) <= 1
    assert range_assign(*_shuffled(members, partitions, seed)) == result


@settings(max_examples=200)
@given(groups(same_subscription=True), st.integers())
def test_roundrobin_assigns_every_partition_once_balanced_whatever_the_input_order(group, seed):
    members, partitions = group
    result = roundrobin_assign(members, partitions)
    _check_complete_and_exclusive(members, partitions, result)
    threads = [f"{m.consumer_id}-{i}" for m in members
               for i in range(next(iter(m.topic_streams.values())))]
    counts = Counter(result.values())
    loads = [counts.get(thread, 0) for thread in threads]
    assert max(loads) - min(loads) <= 1
    assert roundrobin_assign(*_shuffled(members, partitions, seed)) == result


@given(groups(same_subscription=False))
def test_member_slices_partition_the_group_assignment(group):
    members, partitions = group
    result = range_assign(members, partitions)
    slices = [partitions_owned_by(result, m.consumer_id) for m in members]
    merged = {}
    for part in slices:
        assert not set(part) & set(merged)
        merged.update(part)
    assert merged == result


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=12), st.integers(0, 40),
       st.sampled_from(["range", "roundrobin"]))
def test_one_consumers_slice_is_its_part_of_the_whole_assignment(streams, count, strategy):
    members = [MemberSubscription(f"g_c{index:02d}", {"a": n, "b": n})
               for index, n in enumerate(streams)]
    if strategy == "roundrobin":
        members = [MemberSubscription(m.consumer_id, {"a": 1, "b": 1}) for m in members]
    partitions = {"a": list(range(count)), "b": list(range(count // 2))}
    whole = assign(strategy, members, partitions)
    for member in members:
        assert assign(strategy, members, partitions, member.consumer_id) == \
            partitions_owned_by(whole, member.consumer_id)

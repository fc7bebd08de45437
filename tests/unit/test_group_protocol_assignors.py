"""The leader's assignors of a Kafka-coordinated group: the Java consumer's worked examples,
and what every member relies on (each partition to exactly one subscribed member, whatever the
order of the input)."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkconsumer.assignment.group_assignors import group_assign, range_assign, roundrobin_assign
from zkconsumer.errors import AssignmentError
from zkconsumer.model import TopicPartition as TP


def tps(*names: str) -> list[TP]:
    """"t0p2" or "t-2": partition 2 of topic t0 or t."""
    found = [re.fullmatch(r"(.+?)[p-](\d+)", name) for name in names]
    assert all(found), names
    return [TP(match[1], int(match[2])) for match in found if match]


def test_range_two_members_two_topics_of_three_partitions():
    """RangeAssignor's own example: C0 gets t0p0, t0p1, t1p0, t1p1; C1 gets t0p2, t1p2."""
    result = range_assign({"C1": ["t0", "t1"], "C0": ["t1", "t0"]}, {"t0": 3, "t1": 3})
    assert result == {"C0": tps("t0p0", "t0p1", "t1p0", "t1p1"), "C1": tps("t0p2", "t1p2")}


def test_range_gives_the_first_n_mod_m_members_one_more_and_only_the_subscribed_any():
    result = range_assign({"c": ["t"], "a": ["t"], "b": ["t", "u"], "d": ["u"]},
                          {"t": 10, "u": 3})
    assert result == {"a": tps("t-0", "t-1", "t-2", "t-3"), "b": tps("t-4", "t-5", "t-6",
                                                                      "u-0", "u-1"),
                      "c": tps("t-7", "t-8", "t-9"), "d": tps("u-2")}


def test_roundrobin_same_subscriptions():
    """RoundRobinAssignor's first example: C0 gets t0p0, t0p2, t1p1; C1 gets t0p1, t1p0,
    t1p2."""
    result = roundrobin_assign({"C0": ["t0", "t1"], "C1": ["t0", "t1"]}, {"t0": 3, "t1": 3})
    assert result == {"C0": tps("t0p0", "t0p2", "t1p1"), "C1": tps("t0p1", "t1p0", "t1p2")}


def test_roundrobin_passes_over_members_not_subscribed():
    """Its second example: C0 on t0, C1 on t0 and t1, C2 on t0, t1 and t2, with 1, 2 and 3
    partitions: C0 gets t0p0, C1 t1p0, C2 t1p1, t2p0, t2p1 and t2p2."""
    result = roundrobin_assign({"C2": ["t0", "t1", "t2"], "C0": ["t0"], "C1": ["t0", "t1"]},
                               {"t0": 1, "t1": 2, "t2": 3})
    assert result == {"C0": tps("t0p0"), "C1": tps("t1p0"),
                      "C2": tps("t1p1", "t2p0", "t2p1", "t2p2")}


def test_members_are_ordered_as_java_orders_strings():
    """UTF-16 code units: a character beyond the BMP (a surrogate pair, from 0xD800) sorts
    before U+FFFF in Java, after it in Python."""
    beyond, last_bmp = "m-\U00010000", "m-\uffff"
    assert range_assign({last_bmp: ["t"], beyond: ["t"]}, {"t": 3}) == {
        beyond: tps("t-0", "t-1"), last_bmp: tps("t-2")}


def test_topics_without_known_partitions_and_members_without_any_get_nothing():
    assert range_assign({"a": ["gone"], "b": ["t"]}, {"t": 1}) == {"a": [], "b": tps("t-0")}
    assert roundrobin_assign({"a": ["gone"], "b": ["t"]}, {"t": 1}) == {"a": [],
                                                                        "b": tps("t-0")}


def test_an_unknown_strategy_is_named():
    with pytest.raises(AssignmentError, match="unknown partition.assignment.strategy 'sticky'"):
        group_assign("sticky", {"a": ["t"]}, {"t": 1})


groups = st.dictionaries(
    st.text(alphabet="abcxyz-0123\uffff\U00010000", min_size=1, max_size=6),
    st.lists(st.sampled_from(["t0", "t1", "t2", "t3"]), min_size=1, max_size=4, unique=True),
    min_size=1, max_size=6)
counts = st.fixed_dictionaries({t: st.integers(0, 9) for t in ("t0", "t1", "t2", "t3")})


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["range", "roundrobin"]), groups, counts, st.randoms())
def test_every_partition_goes_to_exactly_one_subscribed_member_whatever_the_order(
        strategy, subscriptions, partition_counts, rnd):
    result = group_assign(strategy, subscriptions, partition_counts)
    assert set(result) == set(subscriptions)
    given_out = Counter(tp for partitions in result.values() for tp in partitions)
    wanted = {TP(topic, p) for topics in subscriptions.values() for topic in topics
              for p in range(partition_counts[topic])}
    assert set(given_out) == wanted and set(given_out.values()) <= {1}
    for member, partitions in result.items():
        assert all(tp.topic in subscriptions[member] for tp in partitions)
    shuffled = list(subscriptions.items())
    rnd.shuffle(shuffled)
    reordered = {member: list(reversed(topics)) for member, topics in shuffled}
    assert group_assign(strategy, reordered, partition_counts) == result
    if strategy == "range":
        for topic in partition_counts:
            shares = [sum(tp.topic == topic for tp in partitions)
                      for member, partitions in result.items() if topic in subscriptions[member]]
            assert not shares or max(shares) - min(shares) <= 1

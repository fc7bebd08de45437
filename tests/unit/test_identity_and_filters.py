"""Consumer and thread ids, Java string order and hash, topic filters."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.assignment import (
    Blacklist,
    Whitelist,
    consumer_of_thread,
    java_string_hash,
    java_string_sort_key,
    make_consumer_id,
    normalize_filter_regex,
    thread_ids,
    topic_filter_for,
    wildcard_filter,
)
from zkconsumer.errors import TopicFilterError


def test_consumer_id_has_the_reference_shape():
    consumer_id = make_consumer_id("grp", hostname="host-1", now_ms=1700000000123,
                                   random_hex="0a1b2c3d")
    assert consumer_id == "grp_host-1-1700000000123-0a1b2c3d"
    generated = make_consumer_id("grp")
    assert re.fullmatch(r"grp_.+-\d{13}-[0-9a-f]{8}", generated)
    assert make_consumer_id("grp", "fixed") == "grp_fixed"


def test_thread_ids_and_their_consumer():
    assert thread_ids("grp_c", 3) == ["grp_c-0", "grp_c-1", "grp_c-2"]
    assert consumer_of_thread("grp_host-1-17-ab-10") == "grp_host-1-17-ab"
    with pytest.raises(ValueError, match="not a consumer thread id"):
        consumer_of_thread("no-number-")


@pytest.mark.parametrize(("text", "expected"), [
    ("", 0), ("hello", 99162322), ("[t,0]", 87540032), ("[t,10]", -1581226645),
    ("[a-very-long-topic-name,11]", -1350379685),
    ("\u00e9t\u00e9", 227742), ("\U0001F600", 1772899),  # a surrogate pair counts as two units
])
def test_java_string_hash(text, expected):
    assert java_string_hash(text) == expected


def test_java_order_differs_from_python_order_beyond_the_bmp():
    high_bmp, astral = "\uffff", "\U00010000"
    assert sorted([high_bmp, astral]) == [high_bmp, astral]
    assert sorted([high_bmp, astral], key=java_string_sort_key) == [astral, high_bmp]


@given(st.text(max_size=30))
def test_java_hash_is_a_signed_32_bit_int(text):
    assert -(2**31) <= java_string_hash(text) < 2**31


@pytest.mark.parametrize(("raw", "normalised"), [
    (" 'a, b' ", "a|b"), ('"orders.*"', "orders.*"), ("x , y,z", "x|y|z"), ("plain", "plain"),
])
def test_filter_regexes_are_normalised_like_the_reference(raw, normalised):
    assert normalize_filter_regex(raw) == normalised
    assert Whitelist(raw).regex == normalised


def test_whitelist_matches_whole_names_only():
    whitelist = Whitelist("foo")
    assert whitelist.allows("foo")
    assert not whitelist.allows("foobar")
    assert Whitelist("foo.*").allows("foobar")


def test_internal_topics_are_excluded_unless_asked_for():
    assert not Whitelist(".*").allows("__consumer_offsets")
    assert Whitelist(".*").allows("__consumer_offsets", exclude_internal_topics=False)
    assert not Blacklist("x").allows("__consumer_offsets")
    assert Blacklist("x").allows("y")
    assert not Blacklist("x").allows("x")


def test_an_invalid_regex_is_a_typed_error_naming_it():
    with pytest.raises(TopicFilterError, match=r"invalid topic filter regex '\(unclosed'"):
        Whitelist("(unclosed")


def test_filters_rebuild_from_registration_patterns():
    assert topic_filter_for("white_list", "a.*") == Whitelist("a.*")
    assert topic_filter_for("black_list", "a.*") == Blacklist("a.*")
    with pytest.raises(ValueError):
        topic_filter_for("static", "a")


def test_a_subscription_by_pattern_is_the_filter_of_the_one_pattern_given():
    assert wildcard_filter("a.*", None) == Whitelist("a.*")
    assert wildcard_filter(None, "a.*") == Blacklist("a.*")
    with pytest.raises(ValueError):
        wildcard_filter(None, None)

"""Offset files, migration and reset plans, and group rows: the pure core of the admin CLI."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.admin.group_view import (
    list_row,
    look_once,
    offsets_differ,
    partition_rows,
    storage_of,
)
from zkconsumer.admin.offset_files import (
    OffsetFileError,
    format_json,
    format_text,
    parse_offsets,
)
from zkconsumer.admin.plans import (
    Change,
    ResetError,
    ResetSpec,
    merge_plans,
    plan_migration,
    plan_reset,
    reset_targets,
)
from zkconsumer.lag.report import GroupState, ZookeeperOffset
from zkconsumer.model import TopicPartition as TP

names = st.from_regex(r"[a-zA-Z0-9._-]{1,20}", fullmatch=True).filter(
    lambda name: name not in (".", ".."))  # no znode can have those names
group_offsets = st.dictionaries(
    names, st.dictionaries(st.builds(TP, names, st.integers(0, 500)), st.integers(-1, 10**12),
                           min_size=1, max_size=5), max_size=4)


@given(group_offsets)
def test_both_file_formats_round_trip(offsets):
    assert parse_offsets(format_text(offsets)) == offsets
    assert parse_offsets(format_json(offsets)) == offsets


def test_text_is_the_reference_line_format_sorted_by_partition_number():
    text = format_text({"g": {TP("t", 10): 5, TP("t", 2): 7}})
    assert text == "/consumers/g/offsets/t/2:7\n/consumers/g/offsets/t/10:5\n"


@pytest.mark.parametrize(("text", "message"), [
    ("/consumers/g/offsets/t/0:1\ngarbage\n", "line 2"),
    ("/consumers/g/offsets/t/x:1\n", "line 1"),
    ("/consumers/g/offsets/t/0:1\n/consumers/g/offsets/t/0:2\n", "appears twice"),
    ('{"version": 9, "offsets": []}', "version"),
    ('{"version": 1, "offsets": [{"group": "g"}]}', "not a zkconsumer offsets document"),
    ('{"version": 1, "offsets": [{"group": "g", "topic": "t", "partition": "0", "offset": 1}]}',
     "wrong type"),
    ("/consumers/g/offsets/t/0:-2\n", "offset -2 is not an offset"),
    ("/consumers/g/offsets/t/2147483648:1\n", "partition 2147483648 is not a partition"),
    ("/consumers/g/offsets/t/0:9223372036854775808\n", "is not an offset"),
    ("/consumers/g/offsets/t/" + "9" * 5000 + ":1\n", "more digits than any has"),
    ("/consumers/g/offsets/t/0:" + "9" * 5000 + "\n", "more digits than any has"),
    ("/consumers/../offsets/t/0:1\n", "group name '..'"),
    ("/consumers/g/offsets/\x01/0:1\n", "topic name"),
    ('{"version": 1, "offsets": [{"group": "g", "topic": "t", "partition": -1, "offset": 1}]}',
     "partition -1"),
    ('{"version": 1, "offsets": [{"group": "g", "topic": "t", "partition": 0, "offset": -7}]}',
     "offset -7"),
    ('{"version": 1, "offsets": [{"group": "g", "topic": "t", "partition": 0, "offset": 1e99}]}',
     "wrong type"),
    ('{"version": 1, "offsets": [{"group": "", "topic": "t", "partition": 0, "offset": 1}]}',
     "group name"),
    ('{"version": 1, "offsets": {"group": "g"}}', "not a zkconsumer offsets document"),
    ('{"version": 1, "offsets": "abc"}', "not a zkconsumer offsets document"),
    ('{"version": 1, "offsets": [' + "[" * 100_000, "not a zkconsumer offsets document"),
    ("{" + '"a":[' * 100_000, "not a zkconsumer offsets document"),
    ('{"version": 1, "offsets": [{"group": "g", "topic": "t", "partition": 0, "offset": 1'
     + "0" * 5000 + "}]}", "not a zkconsumer offsets document"),
    ("{[1, 2]", "not a zkconsumer offsets document"),
])
def test_bad_files_name_the_problem(text, message):
    with pytest.raises(OffsetFileError, match=message):
        parse_offsets(text, "f.txt")


def test_migration_writes_forward_skips_equal_and_refuses_backwards():
    plan = plan_migration("g", {TP("t", 0): 5, TP("t", 1): 7, TP("t", 2): 3},
                          {TP("t", 1): 7, TP("t", 2): 9, TP("t", 3): 1})
    assert [plan.change_of(r) for r in plan.rows] == [Change.WRITE, Change.UNCHANGED,
                                                      Change.REFUSED]
    assert plan.writes() == {}, "a refused row stops every write"
    allowed = plan_migration("g", {TP("t", 0): 5, TP("t", 2): 3}, {TP("t", 2): 9},
                             allow_rewind=True)
    assert allowed.writes() == {"g": {TP("t", 0): 5, TP("t", 2): 3}}
    assert allowed.counts() == {"write": 1, "unchanged": 0, "rewind": 1, "refused": 0}


@given(st.dictionaries(st.builds(TP, st.just("t"), st.integers(0, 50)), st.integers(0, 10**6)))
def test_migrating_twice_writes_nothing_the_second_time(source):
    first = plan_migration("g", source, {})
    second = plan_migration("g", source, first.writes().get("g", {}))
    assert second.writes() == {}


def test_merged_plans_keep_every_group():
    merged = merge_plans([plan_migration("a", {TP("t", 0): 1}, {}),
                          plan_migration("b", {TP("t", 0): 2}, {})], allow_rewind=False)
    assert merged.writes() == {"a": {TP("t", 0): 1}, "b": {TP("t", 0): 2}}


EARLIEST = {TP("t", 0): 10, TP("t", 1): 0}
LATEST = {TP("t", 0): 50, TP("t", 1): 20}
PARTS = sorted(EARLIEST)


@pytest.mark.parametrize(("spec", "expected"), [
    (ResetSpec("earliest"), {0: 10, 1: 0}),
    (ResetSpec("latest"), {0: 50, 1: 20}),
    (ResetSpec("offset", 15), {0: 15, 1: 15}),
    (ResetSpec("offset", 5), {0: 10, 1: 5}),
    (ResetSpec("shift", -20), {0: 10, 1: 0}),
    (ResetSpec("shift", 5), {0: 35, 1: 13}),
])
def test_reset_targets_stay_within_the_log(spec, expected):
    current = {TP("t", 0): 30, TP("t", 1): 8}
    targets = reset_targets(spec, PARTS, current, EARLIEST, LATEST)
    assert {tp.partition: o for tp, o in targets.items()} == expected


def test_reset_by_time_goes_to_the_log_end_where_nothing_is_that_recent():
    targets = reset_targets(ResetSpec("datetime", 1_700_000_000_000), PARTS, {}, EARLIEST, LATEST,
                            {TP("t", 0): 42, TP("t", 1): None})
    assert targets == {TP("t", 0): 42, TP("t", 1): 20}


def test_shifting_a_partition_without_an_offset_is_an_error():
    with pytest.raises(ResetError, match="t-1 has no committed offset"):
        reset_targets(ResetSpec("shift", 1), PARTS, {TP("t", 0): 30}, EARLIEST, LATEST)


def test_a_reset_may_move_backwards():
    plan = plan_reset("g", {TP("t", 0): 1}, {TP("t", 0): 9})
    assert plan.writes() == {"g": {TP("t", 0): 1}}


def test_describe_rows_take_lag_from_the_larger_offset_and_judge_from_one_look():
    state = GroupState("g", owners={TP("t", 0): "c-0"}, zookeeper_offsets={
        TP("t", 0): ZookeeperOffset(5, 900.0), TP("t", 2): ZookeeperOffset(9, 100.0)})
    [report] = look_once([state], {"g": [TP("t", 0), TP("t", 1), TP("t", 2)]},
                         {TP("t", 0): 10, TP("t", 1): 4, TP("t", 2): 12}, {"g": {TP("t", 0): 8}},
                         window_s=300, now=1000.0)
    assert partition_rows(report) == [
        {"topic": "t", "partition": 0, "zookeeper_offset": 5, "kafka_offset": 8,
         "log_end_offset": 10, "lag": 2, "owner": "c-0", "status": "OK"},
        {"topic": "t", "partition": 1, "zookeeper_offset": None, "kafka_offset": None,
         "log_end_offset": 4, "lag": None, "owner": None, "status": None},
        {"topic": "t", "partition": 2, "zookeeper_offset": 9, "kafka_offset": None,
         "log_end_offset": 12, "lag": 3, "owner": None, "status": "STOP"},
    ]
    assert report.status.name == "STOP" and report.total_lag == 5
    assert storage_of(report) == "both"


def test_an_offset_past_the_log_end_shows_negative_lag_as_the_reference_does():
    state = GroupState("g", zookeeper_offsets={TP("t", 0): ZookeeperOffset(15, 999.0)})
    [report] = look_once([state], {"g": [TP("t", 0)]}, {TP("t", 0): 10}, {}, 300, 1000.0)
    assert partition_rows(report)[0]["lag"] == -5
    assert report.total_lag == 0 and storage_of(report) == "zookeeper"


def test_differences_include_partitions_only_one_side_has():
    assert offsets_differ({TP("t", 0): 1, TP("t", 1): 2}, {TP("t", 1): 2, TP("t", 2): 3}) == [
        {"topic": "t", "partition": 0, "zookeeper_offset": 1, "kafka_offset": None},
        {"topic": "t", "partition": 2, "zookeeper_offset": None, "kafka_offset": 3},
    ]


def test_a_listed_group_without_figures_keeps_its_row_and_one_with_no_lag_says_none():
    assert list_row("broken", "zookeeper", None, None, None) == {
        "group": "broken", "where": "zookeeper", "state": None, "members": None,
        "zookeeper_offsets": None, "owned_partitions": None, "storage": None, "lag": None,
        "status": None, "cutover": None}
    state = GroupState("g", zookeeper_offsets={TP("t", 0): ZookeeperOffset(3, 999.0)})
    [report] = look_once([state], {"g": [TP("t", 0)]}, {}, {}, 300, 1000.0)
    assert list_row("g", "zookeeper", None, state, report) == {
        "group": "g", "where": "zookeeper", "state": None, "members": 0,
        "zookeeper_offsets": 1, "owned_partitions": 0, "storage": "zookeeper", "lag": None,
        "status": "OK", "cutover": None}

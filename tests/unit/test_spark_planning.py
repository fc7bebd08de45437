"""The data source's pure parts: options, offsets JSON, start/end resolution and range cuts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.admin.offset_files import offsets_from_json, offsets_to_json
from zkconsumer.errors import ConfigError
from zkconsumer.model import TopicPartition as TP
from zkconsumer.spark.options import SourceOptions
from zkconsumer.spark.planning import DeletedStartError, resolve_ends, resolve_starts
from zkconsumer.spark.ranges import cap_total, split_ranges

BASE = {"zookeeper.connect": "zk:2181", "group.id": "g", "topics": "t"}


def parse(**extra: str) -> SourceOptions:
    return SourceOptions.parse({**BASE, **extra})


def test_defaults_read_from_the_group_to_the_log_end():
    options = parse()
    assert (options.starting, options.ending) == ("group", "latest")
    assert options.config.topics == ("t",) and options.max_offsets_per_trigger is None


def test_data_loss_fails_a_read_unless_told_otherwise():
    assert parse().fail_on_data_loss is True
    assert parse(failOnDataLoss="False").fail_on_data_loss is False


@pytest.mark.parametrize(("extra", "option"), [
    ({"group.id": ""}, "group.id"),
    ({"topics": "", "whitelist": ""}, "topics"),
    ({"whitelist": "a.*"}, "topics"),
    ({"startingOffsets": "soon"}, "startingOffsets"),
    ({"endingOffsets": "{\"t\": [1]}"}, "endingOffsets"),
    ({"startingOffsets": "{\"t\": {\"0\": -3}}"}, "startingOffsets"),
    ({"maxOffsetsPerTrigger": "-5"}, "maxOffsetsPerTrigger"),
    ({"decodeUtf8": "yes"}, "decodeUtf8"),
    ({"failOnDataLoss": "sometimes"}, "failOnDataLoss"),
    ({"offsets.storage": "s3"}, "offsets.storage"),
])
def test_bad_options_name_the_option(extra, option):
    with pytest.raises(ConfigError, match=option):
        parse(**extra)


@pytest.mark.parametrize(("starting", "complaint"), [
    ("{" + '"t":{' * 100_000, "nested too deeply"),
    ('{"t":' + "[" * 100_000, "nested too deeply"),
    ('{"t": {"\u0663": 5}}', "is not a partition number"),  # an Arabic-Indic digit three
    ('{"t": {"3_0": 5}}', "is not a partition number"),
    ('{"t": {" 3": 5}}', "is not a partition number"),
    ('{"t": {"2147483648": 5}}', "is not a partition number"),
    ('{"t": {"0": 9223372036854775808}}', "offset must be an integer from -2"),
    ('{"../t": {"0": 5}}', "topic name"),
], ids=["nested-objects", "nested-arrays", "other-script-digit", "underscore", "space",
        "past-int32", "past-long", "topic-a-path"])
def test_starting_offsets_json_that_no_writer_makes_is_one_config_error_of_one_short_line(
        starting, complaint):
    """Before, JSON nested deeply raised RecursionError, and `int` read partition keys that
    are no number (a digit of another script, an underscore, a space) as partitions."""
    with pytest.raises(ConfigError, match="startingOffsets") as raised:
        parse(startingOffsets=starting)
    assert complaint in str(raised.value)
    assert "\n" not in str(raised.value) and len(str(raised.value)) < 300


def test_missing_group_is_named():
    with pytest.raises(ConfigError, match="group.id"):
        SourceOptions.parse({"zookeeper.connect": "zk:2181", "topics": "t"})


@given(st.dictionaries(st.builds(TP, st.sampled_from(["a", "b.c"]), st.integers(0, 99)),
                       st.integers(-2, 10**9)))
def test_offsets_json_round_trips(offsets):
    assert offsets_from_json(offsets_to_json(offsets), "o", "test") == offsets


EARLIEST = {TP("t", 0): 10, TP("t", 1): 0, TP("t", 2): 0}
LATEST = {TP("t", 0): 50, TP("t", 1): 20, TP("t", 2): 30}
PARTS = sorted(EARLIEST)


def test_starts_follow_the_group_then_the_reset_policy():
    committed = {TP("t", 0): 5, TP("t", 1): 12}   # 5 is below the log start (retention)
    starts = resolve_starts(parse(**{"auto.offset.reset": "smallest"}), PARTS, committed,
                            EARLIEST, LATEST)
    assert starts == {TP("t", 0): 10, TP("t", 1): 12, TP("t", 2): 0}
    starts = resolve_starts(parse(), PARTS, committed, EARLIEST, LATEST)
    assert starts == {TP("t", 0): 50, TP("t", 1): 12, TP("t", 2): 30}


def test_explicit_offsets_json_with_earliest_and_latest_markers():
    options = parse(startingOffsets='{"t": {"0": -2, "1": -1}}',
                    endingOffsets='{"t": {"2": 7}}')
    starts = resolve_starts(options, PARTS, {TP("t", 2): 3}, EARLIEST, LATEST)
    assert starts == {TP("t", 0): 10, TP("t", 1): 20, TP("t", 2): 3}
    assert resolve_ends(options, PARTS, starts, LATEST) == {TP("t", 0): 50, TP("t", 1): 20,
                                                            TP("t", 2): 7}


@given(st.dictionaries(st.builds(TP, st.just("t"), st.integers(0, 20)),
                       st.tuples(st.integers(0, 1000), st.integers(0, 1000)), max_size=8),
       st.integers(1, 300))
def test_ranges_cover_every_offset_once_within_the_size_limit(bounds, max_records):
    starts = {tp: min(a, b) for tp, (a, b) in bounds.items()}
    ends = {tp: max(a, b) for tp, (a, b) in bounds.items()}
    ranges = split_ranges(starts, ends, max_records)
    covered = [(r.topic, r.partition, o) for r in ranges for o in range(r.start, r.end)]
    assert sorted(covered) == sorted((tp.topic, tp.partition, o) for tp in starts
                                     for o in range(starts[tp], ends[tp]))
    assert all(0 < r.end - r.start <= max_records for r in ranges)


@given(st.dictionaries(st.builds(TP, st.just("t"), st.integers(0, 20)),
                       st.integers(0, 1000), min_size=1, max_size=8), st.integers(1, 2000))
def test_a_trigger_cap_is_exact_and_shares_the_backlog(backlog, cap):
    starts = {tp: 100 for tp in backlog}
    ends = {tp: 100 + n for tp, n in backlog.items()}
    capped = cap_total(starts, ends, cap)
    taken = {tp: capped[tp] - starts[tp] for tp in starts}
    assert sum(taken.values()) == min(cap, sum(backlog.values()))
    assert all(0 <= taken[tp] <= backlog[tp] for tp in starts)


def test_records_without_compiled_columns_become_spark_batches_with_every_field():
    """The executors' path where the compiled decoder was not built: tuples, through the same
    Arrow batch as `arrow_batches()`, into the source's schema; invalid UTF-8 replaced."""
    from zkconsumer.arrow_records import record_batch
    from zkconsumer.model import Message
    from zkconsumer.spark.reading import arrow_schema, for_spark

    records = [Message("t", 3, 7, None, b"caf\xc3\xa9", 1_700_000_000_123),
               Message("t", 3, 8, b"k", b"\xff", None)]
    binary = for_spark(record_batch(records), arrow_schema(False), False).to_pylist()
    assert [(r["key"], r["value"], r["offset"], r["partition"], r["topic"]) for r in binary] == [
        (None, b"caf\xc3\xa9", 7, 3, "t"), (b"k", b"\xff", 8, 3, "t")]
    assert binary[0]["timestamp"].timestamp() == 1_700_000_000.123
    assert binary[1]["timestamp"] is None
    text = for_spark(record_batch(records), arrow_schema(True), True).to_pylist()
    assert [r["value"] for r in text] == ["café", "\ufffd"]


def test_an_explicit_start_deleted_by_retention_fails_or_starts_at_the_earliest():
    pinned = '{"t": {"0": 4, "1": 12, "2": 3}}'   # t-0's 4..9 are gone (log start 10)
    with pytest.raises(DeletedStartError, match="offsets 4 to 9 of t-0 were deleted"):
        resolve_starts(parse(startingOffsets=pinned), PARTS, {}, EARLIEST, LATEST)
    starts = resolve_starts(parse(startingOffsets=pinned, failOnDataLoss="false"), PARTS, {},
                            EARLIEST, LATEST)
    assert starts == {TP("t", 0): 10, TP("t", 1): 12, TP("t", 2): 3}, \
        "the group's reset policy (largest) would have skipped t-0's 10..49"

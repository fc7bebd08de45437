"""An executor's bounded read never skips records silently: a fetcher reset past records it did
not return fails the read (`failOnDataLoss=true`) or is warned about (false); compaction gaps are
no loss; executors reset to the earliest offset whatever the group's `auto.offset.reset`."""

from __future__ import annotations

import pytest
from support.log_capture import captured_logs
from support.record_columns import fetched

from zkconsumer.fetch import KafkaAccess
from zkconsumer.model import Message, TopicPartition
from zkconsumer.spark import reading
from zkconsumer.spark.planning import ReadPlan
from zkconsumer.spark.ranges import OffsetRange
from zkconsumer.spark.reading import RangeReadError, fetch_range, read_range


class ScriptedFetcher:
    """Answers each poll with the next scripted step: the offsets it returns and where its
    position is afterwards (beyond the last offset + 1 when it reset past a deleted stretch)."""

    def __init__(self, steps: list[tuple[list[int], int | None]]) -> None:
        self.steps = list(steps)
        self.settings: dict | None = None
        self.closed = False

    def assign(self, positions, restart=()) -> None:
        ((self.tp, self.at),) = positions.items()

    def poll(self, timeout_ms: int) -> dict:
        offsets, self.at = self.steps.pop(0)
        if not offsets:
            return {}
        return {self.tp: fetched([Message(self.tp.topic, self.tp.partition, o, None,
                                          b"v%d" % o, None) for o in offsets])}

    def position(self, tp: TopicPartition) -> int | None:
        return self.at

    def close(self) -> None:
        self.closed = True


def offsets_read(steps, start: int, end: int, fail: bool, log_start: int) -> list[int]:
    fetcher = ScriptedFetcher(steps)
    chunks = fetch_range(fetcher, OffsetRange("t", 0, start, end), fail, lambda: log_start)
    return [m.offset for chunk in chunks for m in chunk]


RESET_BETWEEN_POLLS = [([0, 1, 2, 3, 4], 5), ([], 8), ([8, 9], 10)]
RESET_WITHIN_A_POLL = [([0, 1, 2, 3, 4], 5), ([8, 9], 10)]   # as kafka-python does


@pytest.mark.parametrize("steps", [RESET_BETWEEN_POLLS, RESET_WITHIN_A_POLL])
def test_a_reset_past_deleted_records_fails_the_read_naming_what_was_lost(steps):
    with pytest.raises(RangeReadError, match=r"offsets 5 to 7 of t-0 \(3 records\) were "
                                             r"deleted .*failOnDataLoss=false"):
        offsets_read(steps, 0, 10, fail=True, log_start=8)


@pytest.mark.parametrize("steps", [RESET_BETWEEN_POLLS, RESET_WITHIN_A_POLL])
def test_without_fail_on_data_loss_the_read_goes_on_and_warns_how_many_were_skipped(steps):
    with captured_logs() as logs:
        assert offsets_read(steps, 0, 10, fail=False, log_start=8) == [0, 1, 2, 3, 4, 8, 9]
    (warning,) = [e for e in logs if e["log_level"] == "warning"]
    assert (warning["partition"], warning["skipped"], warning["first"], warning["last"]) == (
        "t-0", 3, 5, 7)


def test_a_range_deleted_entirely_is_lost_entirely():
    with pytest.raises(RangeReadError, match=r"offsets 5 to 9 of t-0 \(5 records\)"):
        offsets_read([([], None), ([], 20)], 5, 10, fail=True, log_start=20)


def test_compaction_gaps_are_not_data_loss():
    with captured_logs() as logs:
        assert offsets_read([([3, 4], 5), ([7, 9], 10), ([12], 13)], 0, 13, fail=True,
                            log_start=0) == [3, 4, 7, 9, 12]
    assert not [e for e in logs if e["log_level"] == "warning"]


def test_a_position_that_goes_back_fails_instead_of_returning_records_twice():
    with pytest.raises(RangeReadError, match=r"t-0 went back from offset 5 to 0"):
        offsets_read([([0, 1, 2, 3, 4], 5), ([0, 1], 2)], 0, 10, fail=False, log_start=0)


def test_executors_reset_to_the_earliest_offset_and_fetch_in_bulk_whatever_the_group_says(monkeypatch):
    fetcher = ScriptedFetcher([([0, 1], 2)])

    def fake_fetcher_for(settings, backend):
        fetcher.settings = dict(settings)
        return fetcher

    monkeypatch.setattr(reading, "fetcher_for", fake_fetcher_for)
    plan = ReadPlan("g", KafkaAccess("127.0.0.1:9092", (0, 9)),
                    {"auto_offset_reset": "latest", "client_id": "c",
                     "max_partition_fetch_bytes": 1 << 20}, "auto", {}, {}, {})
    batches = list(read_range(plan, OffsetRange("t", 0, 0, 2), decode_utf8=False,
                              fail_on_data_loss=True))
    assert [o for b in batches for o in b.column("offset").to_pylist()] == [0, 1]
    assert fetcher.settings == {"auto_offset_reset": "earliest", "client_id": "c",
                                "max_partition_fetch_bytes": reading.BULK_FETCH_BYTES}
    assert plan.consumer_settings["auto_offset_reset"] == "latest", "the plan is left as it is"
    assert fetcher.closed

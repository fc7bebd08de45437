"""Reading one offset range on an executor, as Arrow record batches.

Arrow batches cross from the Python worker to Spark without per-row conversion, which is most of
the cost of a Python data source; a batch per fetched chunk keeps memory flat.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from zkconsumer.arrow_records import as_text
from zkconsumer.errors import ZkConsumerError
from zkconsumer.fetch import LogOffsets, fetcher_for
from zkconsumer.fetch.fetcher import Fetcher
from zkconsumer.logs import get_logger
from zkconsumer.model import TopicPartition
from zkconsumer.records.columns import RecordColumns
from zkconsumer.spark.planning import ReadPlan
from zkconsumer.spark.ranges import OffsetRange

BULK_FETCH_BYTES = 8 << 20
POLL_MS = 500
# How long a range may make no progress before the task fails instead of hanging. Timed, not
# counted in polls: a poll ends early whenever a broker answers, even with nothing.
STALL_LIMIT_S = 60.0

log = get_logger(__name__)


def schema_ddl(decode_utf8: bool) -> str:
    payload = "string" if decode_utf8 else "binary"
    return (f"key {payload}, value {payload}, topic string, partition int, offset long, "
            "timestamp timestamp")


def arrow_schema(decode_utf8: bool) -> pa.Schema:
    payload = pa.string() if decode_utf8 else pa.binary()
    return pa.schema([("key", payload), ("value", payload), ("topic", pa.string()),
                      ("partition", pa.int32()), ("offset", pa.int64()),
                      ("timestamp", pa.timestamp("us", tz="UTC"))])


class RangeReadError(ZkConsumerError):
    """An executor could not read its offset range."""


def executor_settings(plan: ReadPlan) -> dict[str, Any]:
    """The member's fetch settings, resetting to the earliest offset whatever the group's
    `auto.offset.reset`: a range's offsets come from the plan, so a reset only ever means the
    log lost them under the read, and a reset to the log end would skip the rest of the log.
    A range is a backlog, read in bulk: fetches of at least `BULK_FETCH_BYTES` per partition
    (a member's default, 1 MiB, made each fetch a round trip per 7,000 small records)."""
    settings = plan.consumer_settings
    return {**settings, "auto_offset_reset": "earliest",
            "max_partition_fetch_bytes": max(settings.get("max_partition_fetch_bytes", 0),
                                             BULK_FETCH_BYTES)}


def read_range(plan: ReadPlan, offsets: OffsetRange, decode_utf8: bool, fail_on_data_loss: bool
               ) -> Iterator[pa.RecordBatch]:
    schema = arrow_schema(decode_utf8)
    tp = TopicPartition(offsets.topic, offsets.partition)
    # The backend and settings a group member fetches with (legacy fetch keys, security,
    # protocol): the wire fetcher unless the settings need kafka-python.
    settings = executor_settings(plan)
    fetcher = fetcher_for(settings, plan.fetch_backend)
    log_offsets: LogOffsets | None = None

    def log_start() -> int:
        nonlocal log_offsets
        if log_offsets is None:   # only needed once the fetcher has skipped offsets
            log_offsets = LogOffsets(plan.access.bootstrap_servers, plan.access.api_version,
                                     settings, request_timeout_ms=settings["request_timeout_ms"])
        return log_offsets.earliest([tp])[tp]

    try:
        for records in fetch_range(fetcher, offsets, fail_on_data_loss, log_start):
            yield for_spark(records.record_batch(), schema, decode_utf8)
    finally:
        fetcher.close()
        if log_offsets is not None:
            log_offsets.close()


def fetch_range(fetcher: Fetcher, offsets: OffsetRange, fail_on_data_loss: bool,
                log_start: Callable[[], int]) -> Iterator[RecordColumns]:
    """The range's records in offset order, as the fetcher (either backend) returns them.

    When the fetcher moves past offsets it did not return, they were either compacted away (no
    loss) or deleted by retention, which made it reset to the log start: `log_start` tells
    which. Deleted records fail the read, or with `fail_on_data_loss` false are warned about
    and the read goes on from the log start."""
    tp = TopicPartition(offsets.topic, offsets.partition)
    fetcher.assign({tp: offsets.start})
    position, progressed_at = offsets.start, time.monotonic()
    while position < offsets.end:
        records = fetcher.poll(timeout_ms=POLL_MS).get(tp)
        # Where the fetcher went on from: None while a reset is pending.
        landed = records.offset_at(0) if records else fetcher.position(tp)
        if landed is not None and landed < position:
            raise RangeReadError(f"the position in {tp} went back from offset {position} to "
                                 f"{landed}: the log was truncated or the topic recreated")
        if landed is None or (not records and landed == position):
            if time.monotonic() - progressed_at > STALL_LIMIT_S:
                raise RangeReadError(f"no progress reading {tp} at offset {position} (range "
                                     f"ends at {offsets.end})")
            continue
        progressed_at = time.monotonic()
        if landed > position:
            _account_for_skipped(tp, position, min(landed, offsets.end), log_start(),
                                 fail_on_data_loss)
        if not records:
            position = landed
            continue
        position = records.offset_at(-1) + 1
        if position > offsets.end:
            records = records[:records.count_before(offsets.end)]
        yield records


def _account_for_skipped(tp: TopicPartition, first: int, end: int, log_start: int,
                         fail_on_data_loss: bool) -> None:
    """Offsets `first` to `end - 1` were skipped: those below the log start were deleted."""
    lost_end = min(end, log_start)
    if lost_end <= first:
        return   # compacted away
    count = lost_end - first
    if fail_on_data_loss:
        raise RangeReadError(
            f"offsets {first} to {lost_end - 1} of {tp} ({count} records) were deleted by "
            "retention before this read got to them; set failOnDataLoss=false to read on from "
            "the earliest offset")
    log.warning("records deleted before this read got to them; reading on from the earliest "
                "offset", partition=str(tp), skipped=count, first=first, last=lost_end - 1)


def for_spark(batch: pa.RecordBatch, schema: pa.Schema, decode_utf8: bool) -> pa.RecordBatch:
    """A batch of `zkconsumer.arrow_records.SCHEMA` as the source's schema: no headers,
    microsecond timestamps, text keys and values if asked."""
    keys, values = batch.column("key"), batch.column("value")
    if decode_utf8:
        keys, values = as_text(keys), as_text(values)
    return pa.RecordBatch.from_arrays([
        keys, values, batch.column("topic"), batch.column("partition"), batch.column("offset"),
        _in_microseconds(batch.column("timestamp")),
    ], schema=schema)


# Milliseconds that microseconds in an int64 can hold: about 292,000 years either side of 1970.
_MICROSECONDS_HOLD_MS = (2**63 - 1) // 1000


def _in_microseconds(millis: pa.Array) -> pa.Array:
    """Spark's timestamps are microseconds. A record's timestamp is whatever its producer wrote;
    one too far out to convert (no clock's reading, but a bad producer's) is null, not a failed
    query."""
    as_numbers = millis.cast(pa.int64())
    bounds = pc.min_max(as_numbers)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low is not None and (high > _MICROSECONDS_HOLD_MS or low < -_MICROSECONDS_HOLD_MS):
        unconvertible = pc.or_(pc.greater(as_numbers, _MICROSECONDS_HOLD_MS),
                               pc.less(as_numbers, -_MICROSECONDS_HOLD_MS))
        millis = pc.if_else(unconvertible, pa.scalar(None, millis.type), millis)
    return millis.cast(pa.timestamp("us", tz="UTC"))

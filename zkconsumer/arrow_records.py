"""Consumed records as Arrow record batches, for code that works on columns (pandas, Polars,
DuckDB, Parquet writers). Needs pyarrow (the `spark` extra brings it).

A chunk is turned around in one pass: the records are tuples, so `zip(*chunk)` hands each
field's values to Arrow as one sequence, and Arrow copies them into its buffers in C; topic and
partition, the same for a whole chunk, are written once.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from zkconsumer.model import Message

HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])
SCHEMA = pa.schema([
    ("key", pa.binary()),
    ("value", pa.binary()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("timestamp", pa.timestamp("ms", tz="UTC")),  # null where the broker keeps none (< 0.10)
    ("headers", pa.list_(HEADER)),
])


def record_batch(chunk: Sequence[Message]) -> pa.RecordBatch:
    """The records of one chunk (one partition's, as `batches()` hands them out)."""
    if not chunk:
        return pa.RecordBatch.from_pylist([], schema=SCHEMA)
    topics, _partitions, offsets, keys, values, timestamps, headers = zip(*chunk)
    count = len(chunk)
    return pa.RecordBatch.from_arrays([
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
        pa.repeat(pa.scalar(topics[0], pa.string()), count),
        pa.repeat(pa.scalar(chunk[0].partition, pa.int32()), count),
        pa.array(offsets, pa.int64()),
        pa.array(timestamps, pa.int64()).cast(SCHEMA.field("timestamp").type),
        _headers(headers, count),
    ], schema=SCHEMA)


def _headers(headers: Sequence[tuple], count: int) -> pa.Array:
    """Records without headers (all before format v2, most after) cost one empty list array."""
    if not any(headers):
        return pa.ListArray.from_arrays(pa.array([0] * (count + 1), pa.int32()),
                                        pa.array([], HEADER))
    return pa.array([[{"key": key, "value": value} for key, value in record_headers]
                     for record_headers in headers], pa.list_(HEADER))

"""Consumed records as Arrow record batches, for code that works on columns (pandas, Polars,
DuckDB, Parquet writers). Needs pyarrow (the `arrow` extra brings it).

Records decoded by the compiled decoder are already columns: `batch_of_columns` wraps its
buffers as Arrow arrays, with no Python object per record. Records decoded without it are
tuples, turned around in one pass by `record_batch`: `zip(*chunk)` hands each field's values to
Arrow as one sequence. Either way topic and partition, the same for a whole chunk, are written
once.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from zkconsumer.model import Message

_BINARY = pa.binary()
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
    topics, _partitions, offsets, keys, values, timestamps, headers = zip(*chunk, strict=True)
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


def batch_of_columns(buffers: tuple, topic: str, partition: int, start: int, stop: int
                     ) -> pa.RecordBatch:
    """Records `start:stop` of the compiled decoder's columns (`Columns.buffers()`)."""
    (count, offsets, timestamps, keys, values, header_ends, header_count, header_keys,
     header_values) = buffers
    millis, millis_validity, millis_nulls = timestamps
    headers = pa.ListArray.from_arrays(
        pa.Array.from_buffers(pa.int32(), count + 1, [None, pa.py_buffer(header_ends)]),
        pa.StructArray.from_arrays([_header_keys(header_keys, header_count),
                                    _binary(header_values, header_count)],
                                   fields=list(HEADER)))
    whole = pa.RecordBatch.from_arrays([
        _binary(keys, count),
        _binary(values, count),
        pa.repeat(pa.scalar(topic, pa.string()), count),
        pa.repeat(pa.scalar(partition, pa.int32()), count),
        pa.Array.from_buffers(pa.int64(), count, [None, pa.py_buffer(offsets)]),
        pa.Array.from_buffers(SCHEMA.field("timestamp").type, count,
                              [_py_buffer(millis_validity), pa.py_buffer(millis)],
                              null_count=millis_nulls),
        headers,
    ], schema=SCHEMA)
    return whole.slice(start, stop - start)


def _binary(column: tuple, length: int, kind: pa.DataType = _BINARY) -> pa.Array:
    data, ends, validity, null_count = column
    return pa.Array.from_buffers(
        kind, length, [_py_buffer(validity), pa.py_buffer(ends), pa.py_buffer(data)],
        null_count=null_count)


def _py_buffer(data: bytes | None) -> pa.Buffer | None:
    return None if data is None else pa.py_buffer(data)


def _header_keys(keys: tuple, length: int) -> pa.Array:
    """Header keys as text, bytes that are not UTF-8 made U+FFFD as Java's consumer does."""
    return as_text(_binary(keys, length))


def as_text(column: pa.Array) -> pa.Array:
    """A binary column as text: the same buffers, checked as UTF-8 (no compute kernel on the
    way); otherwise invalid bytes are replaced value by value, as
    `bytes.decode(errors="replace")` does."""
    text = pa.Array.from_buffers(pa.string(), len(column), column.buffers(),
                                 null_count=column.null_count, offset=column.offset)
    try:
        text.validate(full=True)
    except pa.ArrowInvalid:
        return pa.array([None if value is None else value.decode("utf-8", "replace")
                         for value in column.to_pylist()], pa.string())
    return text

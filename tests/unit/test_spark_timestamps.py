"""The Spark reader's timestamps: a producer's out-of-range timestamp is null, not a failed
query (found by fuzzing the decoders: the cast to microseconds raised ArrowInvalid)."""

from __future__ import annotations

import pyarrow as pa

from zkconsumer.arrow_records import record_batch
from zkconsumer.model import Message
from zkconsumer.spark.reading import arrow_schema, for_spark


def test_a_timestamp_microseconds_cannot_hold_becomes_null_and_the_others_stay():
    far_out = (2**63 - 1) // 1000 + 1
    batch = record_batch([Message("t", 0, offset, b"k", b"v", timestamp)
                          for offset, timestamp in enumerate([1_700_000_000_000, far_out,
                                                              -far_out, None])])
    converted = for_spark(batch, arrow_schema(False), False)
    micros = converted.column("timestamp").cast(pa.int64()).to_pylist()
    assert micros == [1_700_000_000_000_000, None, None, None]

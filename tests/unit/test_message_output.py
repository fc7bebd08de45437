"""Message output formats of `zkconsumer consume`."""

from __future__ import annotations

import base64
import json

from zkconsumer.cli.message_output import formatter, jsonl, value_line
from zkconsumer.model import Message


def test_jsonl_has_the_documented_fields_with_text_values():
    line = jsonl(Message("t", 3, 42, b"k", "h\u00e9".encode(), 1700000000000))
    assert line.endswith(b"\n")
    assert json.loads(line) == {"topic": "t", "partition": 3, "offset": 42, "key": "k",
                                "value": "h\u00e9", "timestamp": 1700000000000}


def test_jsonl_marks_binary_values_as_base64_and_keeps_nulls():
    raw = b"\xff\x00\xfe"
    record = json.loads(jsonl(Message("t", 0, 1, None, raw, None)))
    assert record["key"] is None
    assert record["value_encoding"] == "base64"
    assert base64.b64decode(record["value"]) == raw
    assert "timestamp" not in record
    assert "key_encoding" not in record


def test_jsonl_writes_headers_in_order_with_values_encoded_as_the_value_is():
    headers = (("trace", b"abc"), ("raw", b"\xff\x00"), ("none", None),
               ("trace", "\u00e9".encode()))
    record = json.loads(jsonl(Message("t", 0, 1, None, b"v", None, headers)))
    assert record["headers"] == [["trace", "abc"],
                                 ["raw", base64.b64encode(b"\xff\x00").decode(), "base64"],
                                 ["none", None], ["trace", "\u00e9"]]


def test_jsonl_leaves_headers_out_when_a_message_has_none():
    assert "headers" not in json.loads(jsonl(Message("t", 0, 1, None, b"v", None)))


def test_value_format_prints_the_raw_value_per_line():
    assert value_line(Message("t", 0, 1, None, b"abc", None)) == b"abc\n"
    assert value_line(Message("t", 0, 1, None, None, None)) == b"\n"


def test_none_format_prints_nothing():
    assert formatter("none") is None
    assert formatter("jsonl") is jsonl

"""The multi-read request and its answer: what is sent, what is parsed, and untrusted answers
that do not add up end in the one named error."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kazoo.exceptions import NoAuthError, NoNodeError

from zkconsumer.zk.multi_read import (
    GET_CHILDREN,
    GET_DATA,
    MultiRead,
    MultiReadAnswerError,
    error_of,
    parse_answer,
    serves_version,
)

HEADER = struct.Struct("!iBi")
STAT = struct.Struct("!qqqqiiiqiiq")
A_STAT = (1, 2, 3000, 4000, 5, 6, 7, 42, 9, 10, 11)


def data_result(data: bytes | None) -> bytes:
    size = -1 if data is None else len(data)
    return HEADER.pack(GET_DATA, False, 0) + struct.pack("!i", size) + (data or b"") + \
        STAT.pack(*A_STAT)


def children_result(names: list[str]) -> bytes:
    out = HEADER.pack(GET_CHILDREN, False, 0) + struct.pack("!i", len(names))
    for name in names:
        encoded = name.encode()
        out += struct.pack("!i", len(encoded)) + encoded
    return out


def error_result(code: int) -> bytes:
    return HEADER.pack(-1, False, code) + struct.pack("!i", code)


END = HEADER.pack(-1, True, -1)


def test_a_request_is_each_read_with_its_header_then_the_end_marker():
    sent = MultiRead(GET_DATA, ("/a", "/bc")).serialize()
    assert sent == (HEADER.pack(4, False, -1) + struct.pack("!i", 2) + b"/a" + b"\x00"
                    + HEADER.pack(4, False, -1) + struct.pack("!i", 3) + b"/bc" + b"\x00"
                    + END)
    assert MultiRead.type == 22


def test_an_answer_gives_each_read_its_own_result_in_order():
    answer = b"pad" + data_result(b"x") + error_result(NoNodeError.code) + data_result(None) + END
    results = parse_answer(answer, 3, GET_DATA, 3)
    assert results[0][0] == b"x" and results[0][1].ephemeralOwner == 42
    assert results[1] == NoNodeError.code
    assert results[2][0] == b""
    assert parse_answer(children_result(["m1", "m2"]) + children_result([]) + END, 0,
                        GET_CHILDREN, 2) == [["m1", "m2"], []]


def test_an_error_code_becomes_the_exception_a_single_read_raises():
    assert isinstance(error_of(NoAuthError.code), NoAuthError)


@pytest.mark.parametrize("answer, reason", [
    (data_result(b"x"), "asked at"),  # no end marker
    (data_result(b"x")[:-3] + END, "asked at"),  # the stat cut short
    (HEADER.pack(4, False, 0) + struct.pack("!i", 1 << 30) + END, "asked at"),  # data too long
    (HEADER.pack(4, False, 0) + struct.pack("!i", -7) + END, "asked at"),  # negative length
    (data_result(b"x") + data_result(b"y") + END, "more than"),  # a result not asked for
    (END, "0 results to 1"),  # a result missing
    (children_result(["a"]) + END, "op 8"),  # a result of another op
])
def test_an_answer_that_does_not_add_up_is_the_named_error(answer, reason):
    with pytest.raises(MultiReadAnswerError, match=reason):
        parse_answer(answer, 0, GET_DATA, 1)


def test_a_child_count_beyond_the_answer_is_refused_before_anything_is_read():
    answer = HEADER.pack(8, False, 0) + struct.pack("!i", 2_000_000_000) + END
    with pytest.raises(MultiReadAnswerError, match="children"):
        parse_answer(answer, 0, GET_CHILDREN, 1)
    with pytest.raises(MultiReadAnswerError, match="UTF-8"):
        parse_answer(HEADER.pack(8, False, 0) + struct.pack("!i", 1) + struct.pack("!i", 1)
                     + b"\xff" + END, 0, GET_CHILDREN, 1)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 5))
def test_any_bytes_parse_or_are_the_named_error(noise, count):
    for op in (GET_DATA, GET_CHILDREN):
        try:
            results = parse_answer(noise, 0, op, count)
        except MultiReadAnswerError:
            continue
        assert len(results) == count


def test_the_servers_that_serve_it_are_3_6_and_later():
    assert serves_version("Zookeeper version: 3.8.0-abc, built on 2024-12-29")
    assert serves_version("Zookeeper version: 3.6.3--6401e4ad2087, built on 04/08/2021")
    assert not serves_version("Zookeeper version: 3.4.6-1569965, built on 02/20/2014")
    assert not serves_version("Zookeeper version: 3.5.9-83df9301aa5c2a5d284a9940177808c01bc35cef")
    assert not serves_version("srvr is not executed because it is not in the whitelist.\n")

"""The multi-read request and its answer: what is sent, what is parsed, and untrusted answers
that do not add up end in the one named error."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kazoo.exceptions import NoAuthError, NoNodeError

from zkconsumer.zk.multi_read import (
    ASK_AGAIN_S,
    GET_CHILDREN,
    GET_DATA,
    MultiRead,
    MultiReadAnswerError,
    error_of,
    not_served,
    parse_answer,
    served,
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
    assert results[2][0] is None  # no data at all, as kazoo's single read gives it
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


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=20),
                          st.lists(st.text(max_size=5), max_size=3)), min_size=1, max_size=4),
       st.data())
def test_a_well_formed_answer_with_any_byte_changed_parses_or_is_the_named_error(results, data):
    op = GET_CHILDREN if any(isinstance(result, list) for result in results) else GET_DATA
    answer = b"".join(children_result(result if isinstance(result, list) else [])
                      if op == GET_CHILDREN else data_result(result) for result in results) + END
    at = data.draw(st.integers(0, len(answer) - 1))
    changed = answer[:at] + bytes([data.draw(st.integers(0, 255))]) + answer[at + 1:]
    try:
        parsed = parse_answer(changed, 0, op, len(results))
    except MultiReadAnswerError:
        return
    assert len(parsed) == len(results)


def test_the_servers_that_serve_it_are_3_6_and_later():
    assert serves_version("Zookeeper version: 3.8.0-abc, built on 2024-12-29")
    assert serves_version("Zookeeper version: 3.6.3--6401e4ad2087, built on 04/08/2021")
    assert not serves_version("Zookeeper version: 3.4.6-1569965, built on 02/20/2014")
    assert not serves_version("Zookeeper version: 3.5.9-83df9301aa5c2a5d284a9940177808c01bc35cef")
    assert not serves_version("srvr is not executed because it is not in the whitelist.\n")


def test_an_unknown_error_code_is_the_named_error_not_kazoos_runtime_error():
    for code in (0, 7, -12345):
        with pytest.raises(MultiReadAnswerError, match="error code"):
            parse_answer(error_result(code) + END, 0, GET_DATA, 1)


# --- whether a server is asked, and what is kept of its answer --------------------------------

class Probe:
    """A side connection that answers `srvr` with the next of `answers` (an exception: fails)."""

    def __init__(self, *answers) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, int]] = []
        self._answer = b""

    def __call__(self, peer, _timeout_s, _hostname):
        self.asked.append(peer)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        self._answer = answer.encode()
        return self

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        return False

    def settimeout(self, _timeout_s) -> None:
        pass

    def sendall(self, word: bytes) -> None:
        assert word == b"srvr"

    def recv(self, _size: int) -> bytes:
        answer, self._answer = self._answer, b""
        return answer


class Session:
    """Stands for a kazoo client: the server its connection's socket is connected to."""

    def __init__(self, probe: Probe, peer=("10.0.0.1", 2181)) -> None:
        self.handler = type("Handler", (), {"side_connection": staticmethod(probe)})()
        self._connection = type("Connection", (), {})()
        self.connect_to(peer)

    def connect_to(self, peer) -> None:
        self._connection._socket = type("Socket", (), {"getpeername": lambda _self: peer})()


V38 = "Zookeeper version: 3.8.0-abc, built on 2024-12-29 17:54 UTC\n"
V34 = "Zookeeper version: 3.4.6-1569965, built on 02/20/2014 09:09 GMT\n"


def test_a_server_is_asked_once_per_connection_to_it():
    probe = Probe(V38, V34)
    session = Session(probe)
    assert served(session) and served(session)
    session.connect_to(("10.0.0.2", 2181))
    assert not served(session) and not served(session)
    assert probe.asked == [("10.0.0.1", 2181), ("10.0.0.2", 2181)]


def test_a_question_that_failed_is_asked_again_later_not_at_once():
    now = [0.0]
    probe = Probe(ConnectionRefusedError(), V38)
    session = Session(probe)
    assert not served(session, clock=lambda: now[0])
    now[0] = ASK_AGAIN_S - 1
    assert not served(session, clock=lambda: now[0])
    now[0] = ASK_AGAIN_S
    assert served(session, clock=lambda: now[0])
    assert len(probe.asked) == 2


def test_a_server_that_refused_one_is_sent_none_again_whatever_it_says():
    probe = Probe(V38, V38)
    session = Session(probe)
    assert served(session)
    not_served(session)
    assert not served(session)
    session.connect_to(("10.0.0.2", 2181))
    assert served(session)  # another server is asked afresh
    session.connect_to(("10.0.0.1", 2181))
    assert not served(session)
    assert probe.asked == [("10.0.0.1", 2181), ("10.0.0.2", 2181)]

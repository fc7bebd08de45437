from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.errors import ZnodeDataError
from zkconsumer.znodes.consumers import (
    LONG_MAX,
    MAX_STREAMS,
    NO_OFFSET,
    ConsumerRegistration,
    SubscriptionPattern,
    decode_offset,
    decode_owner,
    encode_offset,
    encode_owner,
)

MEMBER = "/consumers/g/ids/g_host-1700000000000-1a2b3c4d"
OWNER = "/consumers/g/owners/t/0"
OFFSET = "/consumers/g/offsets/t/0"
TS = 1700000000000


def decode(data: bytes) -> ConsumerRegistration:
    return ConsumerRegistration.decode(MEMBER, data)


def test_static_registration_is_byte_identical_to_the_reference() -> None:
    registration = ConsumerRegistration.static({"topicA": 1}, TS)
    assert registration.encode() == (
        b'{"version":1,"subscription":{"topicA":1},"pattern":"static","timestamp":"1700000000000"}'
    )
    assert not registration.is_wildcard
    assert registration.filter_regex is None
    assert decode(registration.encode()) == registration


def test_static_registration_keeps_topic_order() -> None:
    registration = ConsumerRegistration.static({"b": 2, "a": 1, "c.x_y-z": 3}, TS)
    assert registration.encode() == (
        b'{"version":1,"subscription":{"b":2,"a":1,"c.x_y-z":3},"pattern":"static",'
        b'"timestamp":"1700000000000"}'
    )


def test_reading_a_reference_static_registration() -> None:
    registration = decode(
        b'{"version":1,"subscription":{"t1":1,"t2":2},"pattern":"static","timestamp":"1466985807242"}'
    )
    assert registration == ConsumerRegistration(
        1, {"t1": 1, "t2": 2}, SubscriptionPattern.STATIC, "1466985807242"
    )


def test_whitelist_regex_is_escaped_as_the_reference_escapes_it() -> None:
    registration = ConsumerRegistration.wildcard(SubscriptionPattern.WHITE_LIST, r"a\d+/x", 3, TS)
    encoded = registration.encode()
    assert encoded == (
        rb'{"version":1,"subscription":{"a\\d+\/x":3},"pattern":"white_list",'
        rb'"timestamp":"1700000000000"}'
    )
    decoded = decode(encoded)
    assert decoded == registration
    assert decoded.is_wildcard
    assert decoded.filter_regex == r"a\d+/x"
    assert decoded.subscription == {r"a\d+/x": 3}


def test_blacklist_regex_escapes_control_characters_like_the_reference() -> None:
    regex = 'q"\b\f\n\r\t\x01\x1f\x7f\x80\x9f\xa0é'
    registration = ConsumerRegistration.wildcard(SubscriptionPattern.BLACK_LIST, regex, 1, TS)
    assert registration.encode() == (
        b'{"version":1,"subscription":{"q\\"\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\\u0080\\u009f'
        + "\xa0é".encode()
        + b'":1},"pattern":"black_list","timestamp":"1700000000000"}'
    )
    assert decode(registration.encode()).filter_regex == regex


def test_reference_quirks_are_mirrored() -> None:
    empty = decode(b'{"version":1,"subscription":{},"pattern":"white_list","timestamp":"1"}')
    assert empty.pattern == SubscriptionPattern.STATIC
    assert not empty.is_wildcard
    assert decode(b'{"subscription":{"t":1},"pattern":"static"}') == ConsumerRegistration(
        1, {"t": 1}, "static", None
    )
    assert (
        decode(b'{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":17}').timestamp
        == "17"
    )


def test_a_registration_without_timestamp_encodes_without_one() -> None:
    registration = ConsumerRegistration(1, {"t": 1}, SubscriptionPattern.STATIC, None)
    assert registration.encode() == b'{"version":1,"subscription":{"t":1},"pattern":"static"}'


@pytest.mark.parametrize("streams", [0, -1, True, "1", 1.0, MAX_STREAMS + 1, 2**31])
def test_constructors_refuse_bad_stream_counts(streams: object) -> None:
    with pytest.raises(ValueError):
        ConsumerRegistration.static({"t": streams}, TS)  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        ConsumerRegistration.wildcard("white_list", ".*", streams, TS)  # type: ignore[arg-type]


def test_constructors_refuse_bad_topics_and_patterns() -> None:
    with pytest.raises(ValueError):
        ConsumerRegistration.static({"a/b": 1}, TS)
    with pytest.raises(ValueError):
        ConsumerRegistration.wildcard("static", ".*", 1, TS)


MALFORMED_REGISTRATIONS = [
    (b"", "no data"),
    (b"\xc3", "UTF-8"),
    (b"{'pattern':'static'}", "not valid JSON"),
    (b'[{"pattern":"static"}]', "expected a JSON object, got array"),
    (b'{"version":1,"subscription":{"t":1}}', "'pattern' is missing"),
    (b'{"version":1,"pattern":"static"}', "'subscription' is missing"),
    (b'{"version":1,"subscription":{"t":1},"pattern":"regex"}', "'pattern' must be one of"),
    (b'{"version":1,"subscription":{"t":1},"pattern":1}', "'pattern' must be a string"),
    (
        b'{"version":1,"subscription":[["t",1]],"pattern":"static"}',
        "'subscription' must be an object",
    ),
    (
        b'{"version":1,"subscription":{"t":0},"pattern":"static"}',
        "'subscription.t' must be between 1",
    ),
    (
        b'{"version":1,"subscription":{"t":-1},"pattern":"static"}',
        "'subscription.t' must be between 1",
    ),
    (
        b'{"version":1,"subscription":{"t":"1"},"pattern":"static"}',
        "'subscription.t' must be an integer",
    ),
    (
        b'{"version":1,"subscription":{"t":true},"pattern":"static"}',
        "'subscription.t' must be an integer",
    ),
    (
        b'{"version":1,"subscription":{"t":1.0},"pattern":"static"}',
        "'subscription.t' must be an integer",
    ),
    (
        b'{"version":1,"subscription":{"t":null},"pattern":"static"}',
        "'subscription.t' must be an integer",
    ),
    (b'{"version":1,"subscription":{"t":2147483648},"pattern":"static"}', "must be between"),
    (b'{"version":1,"subscription":{"t":2147483647},"pattern":"static"}',
     f"must be between 1 and {MAX_STREAMS}"),
    (b'{"version":1,"subscription":{"t":1' + b"0" * 5000 + b'},"pattern":"static"}',
     "not valid JSON"),
    (b'{"version":1,"subscription":{"a/b":1},"pattern":"static"}', "subscription: topic name"),
    (b'{"version":1,"subscription":{"":1},"pattern":"static"}', "subscription: topic name"),
    (b'{"version":1,"subscription":{"..":1},"pattern":"static"}', "subscription: topic name"),
    (b'{"version":1,"subscription":' + b'{"t":' * 100_000 + b"1" + b"}" * 100_000 + b',"p":1}',
     "nested too deeply"),
    (b"[" * 100_000, "nested too deeply"),
    (
        b'{"version":1,"subscription":{"a.*":1,"b.*":1},"pattern":"white_list"}',
        "a white_list registration needs exactly one regex in 'subscription', got 2",
    ),
    (b'{"version":0,"subscription":{"t":1},"pattern":"static"}', "'version' must be between"),
    (b'{"version":"1","subscription":{"t":1},"pattern":"static"}', "'version' must be an integer"),
    (b'{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":[1]}', "'timestamp'"),
    (b'{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":false}', "'timestamp'"),
]


@pytest.mark.parametrize(("data", "reason"), MALFORMED_REGISTRATIONS)
def test_malformed_registrations_raise_with_the_path(data: bytes, reason: str) -> None:
    with pytest.raises(ZnodeDataError) as error:
        decode(data)
    assert str(error.value).startswith(f"malformed data in znode {MEMBER}: ")
    assert reason in error.value.reason


def test_owner_is_the_thread_id_as_written() -> None:
    thread_id = "g_host-1700000000000-1a2b3c4d-10"
    assert encode_owner(thread_id) == thread_id.encode()
    assert decode_owner(OWNER, encode_owner(thread_id)) == thread_id
    assert decode_owner(OWNER, b" spaced \n") == " spaced \n"
    assert decode_owner(OWNER, "grüppe-0".encode()) == "grüppe-0"
    with pytest.raises(ValueError):
        encode_owner("")


@pytest.mark.parametrize(("data", "reason"), [(b"", "no data"), (b"\xff", "UTF-8")])
def test_malformed_owners_raise_with_the_path(data: bytes, reason: str) -> None:
    with pytest.raises(ZnodeDataError, match=OWNER) as error:
        decode_owner(OWNER, data)
    assert reason in error.value.reason


@pytest.mark.parametrize(
    ("data", "offset"),
    [
        (b"10", 10),
        (b"0", 0),
        (b" 10\n", 10),
        (b"\t42\r\n", 42),
        (b"007", 7),
        (b"-1", NO_OFFSET),
        (b"9223372036854775807", LONG_MAX),
    ],
)
def test_offsets_are_decimal_text(data: bytes, offset: int) -> None:
    assert decode_offset(OFFSET, data) == offset


MALFORMED_OFFSETS = [
    (b"", "no data"),
    (b"   ", "must be a decimal integer"),
    (b"abc", "must be a decimal integer, got 'abc'"),
    (b"1.5", "must be a decimal integer"),
    (b"1e3", "must be a decimal integer"),
    (b"+5", "must be a decimal integer"),
    (b"0x10", "must be a decimal integer"),
    (b"1_000", "must be a decimal integer"),
    (b"1 2", "must be a decimal integer"),
    ("\u0661".encode(), "must be a decimal integer"),
    (b"\xff", "UTF-8"),
    (b"-2", "must be between -1 and"),
    (b"9223372036854775808", "must be between -1 and"),
    (b"9" * 5000, "must be between -1 and"),
]


@pytest.mark.parametrize(("data", "reason"), MALFORMED_OFFSETS)
def test_malformed_offsets_raise_with_the_path(data: bytes, reason: str) -> None:
    with pytest.raises(ZnodeDataError) as error:
        decode_offset(OFFSET, data)
    assert str(error.value).startswith(f"malformed data in znode {OFFSET}: ")
    assert reason in error.value.reason


def test_offsets_encode_as_the_reference_writes_them() -> None:
    assert encode_offset(10) == b"10"
    assert encode_offset(NO_OFFSET) == b"-1"


@pytest.mark.parametrize("offset", [-2, LONG_MAX + 1, True, 1.0, "10"])
def test_encoding_a_bad_offset_is_refused(offset: object) -> None:
    with pytest.raises(ValueError):
        encode_offset(offset)  # type: ignore[arg-type]


@given(st.integers(min_value=NO_OFFSET, max_value=LONG_MAX))
def test_offsets_round_trip(offset: int) -> None:
    assert decode_offset(OFFSET, encode_offset(offset)) == offset


topics = st.from_regex(r"[a-zA-Z0-9._-]{1,40}", fullmatch=True).filter(
    lambda t: t not in (".", "..")
)
stream_counts = st.integers(min_value=1, max_value=MAX_STREAMS)
timestamps = st.integers(min_value=0, max_value=2**63 - 1)


@given(st.dictionaries(topics, st.integers(min_value=1, max_value=MAX_STREAMS // 8), max_size=8),
       timestamps)
def test_static_registrations_round_trip(subscription: dict[str, int], timestamp: int) -> None:
    registration = ConsumerRegistration.static(subscription, timestamp)
    encoded = registration.encode()
    assert decode(encoded) == registration
    assert list(json.loads(encoded)) == ["version", "subscription", "pattern", "timestamp"]


@given(
    st.sampled_from([SubscriptionPattern.WHITE_LIST, SubscriptionPattern.BLACK_LIST]),
    st.text(min_size=1),
    stream_counts,
    timestamps,
)
def test_wildcard_registrations_round_trip(
    pattern: str, regex: str, streams: int, timestamp: int
) -> None:
    registration = ConsumerRegistration.wildcard(pattern, regex, streams, timestamp)
    encoded = registration.encode()
    assert json.loads(encoded)["subscription"] == {regex: streams}
    decoded = decode(encoded)
    assert decoded == registration
    assert decoded.filter_regex == regex


def test_a_static_registration_of_too_many_streams_in_all_is_refused_both_ways() -> None:
    subscription = {"a": MAX_STREAMS, "b": 1}
    with pytest.raises(ValueError, match="streams in all"):
        ConsumerRegistration.static(subscription, 0)
    with pytest.raises(ZnodeDataError, match="streams in all"):
        decode(json.dumps({"version": 1, "subscription": subscription, "pattern": "static",
                           "timestamp": "0"}).encode())

"""The wire fetcher's protocol decisions, without sockets: a `FetchSession` handed answers and
times, and asked what to send.

Error codes: retriable ones set only their partition aside until its leader is looked up again,
after refresh.leader.backoff.ms, and are warned about at most every 30 s; the others fail the
member with one line naming partition, code and name; OFFSET_OUT_OF_RANGE resets the position
per auto.offset.reset.

Versions: the broker's ApiVersions answer chooses the newest version of each request both sides
know; silence until the timeout from a broker that never answered means the legacy versions. A
broker that answers a version in a form that cannot be read, with UNSUPPORTED_VERSION, or
(having offered it) by closing a connection before it answered that request on it, is asked
again a few times, then the member fails with one line naming broker and request.

The broker's answers are encoded by kafka-python, an independent implementation of the same
layouts, from what our requests asked as kafka-python decodes them. Time is whatever the test
says it is: nothing sleeps, and no socket is opened."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from support.kafka_answers import (
    API_VERSIONS,
    FETCH,
    HEALTHY,
    KAFKA_0_10_0,
    KAFKA_4_0,
    LIST_OFFSETS,
    MESSAGES,
    METADATA,
    NOT_LEADER,
    SICK,
    UNKNOWN_SERVER_ERROR,
    api_versions_answer,
    fetch_answer,
    list_offsets_answer,
    metadata_answer,
)
from support.log_capture import captured_logs

from zkconsumer.kafka.errors import ChannelError, FetchError
from zkconsumer.kafka.protocol import codec as protocol
from zkconsumer.kafka.protocol import fetch_session
from zkconsumer.kafka.protocol.broker_versions import Link
from zkconsumer.kafka.protocol.fetch_session import (
    LEADER_WAIT_WARN_S,
    FetchSession,
    Received,
    Request,
)
from zkconsumer.model import TopicPartition
from zkconsumer.throttled_log import WARN_EVERY_S

BOTH = {SICK: 0, HEALTHY: 0}
ADDRESS, OTHER = ("fake", 9092), ("other", 9093)
OFFSET_NOT_AVAILABLE, KAFKA_STORAGE_ERROR = 78, 56
OFFSET_OUT_OF_RANGE, UNSUPPORTED_VERSION = 1, 35
KAFKA_0_10_2 = {FETCH: (0, 3), LIST_OFFSETS: (0, 1), METADATA: (0, 2), API_VERSIONS: (0, 0)}
TIMED_OUT = ChannelError("reading from broker fake:9092 failed: timed out", timed_out=True)
CLOSED = ChannelError("reading from broker fake:9092 failed: the broker closed the connection",
                      closed_by_broker=True)
GARBLED = b"\x00\x00\x00\x00\x00\x00"  # a correlation id, then too little of anything
BACKOFF_S = 1.0


def open_session(backoff_ms: int = 1000, api_version: tuple[int, ...] | None = (0, 10),
                 **settings) -> FetchSession:
    return FetchSession({
        "api_version": api_version, "fetch_max_wait_ms": 100, "fetch_min_bytes": 1,
        "max_partition_fetch_bytes": 1 << 20, "request_timeout_ms": 30_000,
        "retry_backoff_ms": backoff_ms, "auto_offset_reset": "earliest", **settings},
        [ADDRESS])


# -- a broker's answers, from what was asked (see `support.kafka_answers`) -----------------------

def metadata(request: Request, leaders: Mapping[TopicPartition, int] | None = None,
             brokers: Mapping[int, tuple[str, int]] | None = None) -> bytes:
    """Both partitions led by node 0 at ADDRESS unless told otherwise (-1: no leader)."""
    return metadata_answer(request.version, {SICK: 0, HEALTHY: 0} if leaders is None else leaders,
                           {0: ADDRESS} if brokers is None else brokers)


def offsets(request: Request, errors: Mapping[TopicPartition, int] | None = None) -> bytes:
    return list_offsets_answer(request.version, request.body, (errors or {}).get)


def fetched(request: Request, errors: Mapping[TopicPartition, int] | None = None,
            aborted: list[tuple[int, int]] | None = None, high_watermark: int = MESSAGES
            ) -> bytes:
    return fetch_answer(request.version, request.body, high_watermark, (errors or {}).get,
                        aborted or ())


# -- the driver's part, played by hand ----------------------------------------------------------

def connect(session: FetchSession, offered: Mapping[int, tuple[int, int]] = KAFKA_0_10_0,
            address: tuple[str, int] = ADDRESS) -> Link:
    """A new connection, asking the broker for its versions if the session says to."""
    host, port = address
    name = f"{host}:{port}"
    return session.link(name) or session.api_versions_answered(name, api_versions_answer(offered))


def look_up(session: FetchSession, now: float, link: Link | None = None, **answer) -> Received:
    """A metadata round answered by the first broker asked."""
    assert session.metadata_due(now)
    session.metadata_round(now)
    request = session.metadata_request(link or connect(session), now)
    return session.receive(request, metadata(request, **answer), now)


def fetch(session: FetchSession, link: Link, now: float, **answer) -> Received:
    request = session.fetch_request(0, link, now)
    assert request is not None
    return session.receive(request, fetched(request, **answer), now)


def reset(session: FetchSession, link: Link, now: float, **answer) -> Received:
    (node,) = session.reset_nodes()
    request = session.offsets_request(node, link, now)
    return session.receive(request, offsets(request, **answer), now)


def started(positions: Mapping[TopicPartition, int | None] = BOTH,
            offered: Mapping[int, tuple[int, int]] = KAFKA_0_10_0, **settings
            ) -> tuple[FetchSession, Link]:
    """A session fetching these partitions from time 0, their leader known, and a connection
    to it."""
    session = open_session(**settings)
    session.assign(positions, (), now=0.0)
    link = connect(session, offered)
    look_up(session, 0.0, link)
    return session, link


def delivered(received: Received) -> dict[TopicPartition, list[int]]:
    return {tp: [m.offset for m in messages] for tp, messages in received.records.items()}


EVERYTHING = list(range(MESSAGES))


# -- Kafka error codes --------------------------------------------------------------------------

@pytest.mark.parametrize("code", [UNKNOWN_SERVER_ERROR, KAFKA_STORAGE_ERROR, NOT_LEADER,
                                  OFFSET_NOT_AVAILABLE])
def test_a_retriable_fetch_error_sets_the_partition_aside_until_the_backoff_has_passed(code):
    session, link = started()
    received = fetch(session, link, now=2.0, errors={SICK: code})
    assert delivered(received) == {HEALTHY: EVERYTHING} and received.answered
    assert session.position(SICK) == 0
    for now in (2.1, 2.5, 2.9):  # the others keep flowing; it is not asked meanwhile
        request = session.fetch_request(0, link, now)
        assert request is not None and set(request.asked) == {HEALTHY}
        session.receive(request, fetched(request), now)
        assert not session.metadata_due(now)
    assert session.metadata_due(2.0 + BACKOFF_S)
    look_up(session, 3.0, link)
    assert delivered(fetch(session, link, now=3.0)) == {SICK: EVERYTHING}  # nothing lost


def test_a_leader_that_moved_is_fetched_from_at_its_new_node():
    session, link = started()
    fetch(session, link, now=1.0, errors={SICK: NOT_LEADER})
    look_up(session, 2.0, link, leaders={SICK: 1, HEALTHY: 0}, brokers={0: ADDRESS, 1: OTHER})
    assert session.fetch_nodes() == {0, 1} and session.address_of(1) == OTHER
    moved = session.fetch_request(1, connect(session, address=OTHER), now=2.0)
    assert moved is not None and moved.asked == {SICK: 0}


def test_a_broker_at_another_address_has_its_connections_closed_and_its_fetch_forgotten():
    session = open_session()
    session.assign(BOTH, (), now=0.0)
    link = connect(session)
    look_up(session, 0.0, link, leaders={SICK: -1, HEALTHY: 0})
    assert session.fetch_request(0, link, now=0.5) is not None
    received = look_up(session, BACKOFF_S, link, brokers={0: OTHER})
    assert received.lost == [0] and not session.in_flight
    assert session.fetch_nodes() == {0} and session.address_of(0) == OTHER


def test_a_retriable_list_offsets_error_retries_the_reset():
    session, link = started({SICK: None, HEALTHY: 0})
    reset(session, link, now=1.0, errors={SICK: UNKNOWN_SERVER_ERROR})
    assert session.position(SICK) is None and session.reset_nodes() == []
    assert not session.metadata_due(1.5) and session.metadata_due(1.0 + BACKOFF_S)
    look_up(session, 2.0, link)
    reset(session, link, now=2.0)
    assert session.position(SICK) == 0


@pytest.mark.parametrize("reset_to, time", [("earliest", protocol.EARLIEST),
                                            ("latest", protocol.LATEST)])
def test_an_offset_out_of_range_resets_the_position_per_auto_offset_reset(reset_to, time):
    session, link = started(auto_offset_reset=reset_to)
    with captured_logs() as logs:
        fetch(session, link, now=1.0, errors={SICK: OFFSET_OUT_OF_RANGE})
    assert session.position(SICK) is None and session.reset_nodes() == [0]
    assert [(e["log_level"], e["partition"], e["reset_to"]) for e in logs
            if e["event"] == "offset out of range, resetting"] == [("warning", "t-0", reset_to)]
    request = session.offsets_request(0, link, now=1.0)
    asked = ListOffsetsRequest.decode(request.body, version=request.version)
    assert [(p.partition_index, p.timestamp) for t in asked.topics for p in t.partitions] == [
        (0, time)]


@pytest.mark.parametrize("code, line", [
    (29, "Kafka error 29 TOPIC_AUTHORIZATION_FAILED for t-0"),
    (2, "Kafka error 2 CORRUPT_MESSAGE for t-0"),
    (9999, "Kafka error 9999 UNRECOGNIZED for t-0"),
])
@pytest.mark.parametrize("request_kind", ["fetch", "list-offsets"])
def test_an_error_no_retry_can_fix_fails_with_one_line_naming_it(code, line, request_kind):
    session, link = started({SICK: 0 if request_kind == "fetch" else None, HEALTHY: 0})
    answer = fetch if request_kind == "fetch" else reset
    with pytest.raises(FetchError) as failure:
        answer(session, link, now=1.0, errors={SICK: code})
    assert str(failure.value) == line


def test_an_answer_for_a_partition_no_longer_assigned_or_moved_is_ignored():
    session, link = started()
    request = session.fetch_request(0, link, now=1.0)
    assert request is not None
    session.assign({HEALTHY: 2}, restart=[HEALTHY], now=1.0)  # SICK released, HEALTHY moved
    received = session.receive(request, fetched(request, errors={SICK: 29}), now=1.1)
    assert received.records == {} and received.answered
    assert session.position(HEALTHY) == 2 and session.high_watermark(SICK) is None


# -- trouble, as the log tells it ---------------------------------------------------------------

@pytest.mark.parametrize("on_and_off", [False, True])
def test_an_error_that_keeps_coming_back_is_warned_about_at_most_every_30_s(on_and_off):
    session, link = started({SICK: 0}, backoff_ms=0)
    with captured_logs() as logs:
        for now in (1.0, 2.0, 1.0 + WARN_EVERY_S):
            fetch(session, link, now, errors={SICK: NOT_LEADER})
            look_up(session, now, link)
            if on_and_off:
                fetch(session, link, now)
        fetch(session, link, now=40.0)
    waits, fetches = "partitions wait for their leader", "every partition fetches again"
    assert [(e["log_level"], e["event"]) for e in logs if e["log_level"] != "debug"] == (
        [("warning", waits), ("info", fetches)] * 2 if on_and_off
        else [("warning", waits), ("warning", waits), ("info", fetches)])


@pytest.mark.parametrize("waited_s, warned", [(LEADER_WAIT_WARN_S - 0.1, False),
                                               (LEADER_WAIT_WARN_S, True)])
def test_a_leader_unknown_is_warned_about_only_once_the_wait_has_lasted(waited_s, warned):
    """Not for a moment, as when a topic was just created: every member meeting it warned, a
    line per member."""
    session = open_session(backoff_ms=0)
    session.assign(BOTH, (), now=0.0)
    link = connect(session)
    with captured_logs() as logs:
        look_up(session, 0.0, link, leaders={SICK: -1, HEALTHY: 0})
        look_up(session, waited_s, link, leaders={SICK: -1, HEALTHY: 0})
        look_up(session, waited_s + 1, link)
        fetch(session, link, now=waited_s + 1)
    expected = [("warning", "waiting for partition leaders"),
                ("info", "every partition fetches again")] if warned else []
    assert [(e["log_level"], e["event"]) for e in logs if e["log_level"] != "debug"] == expected


def test_no_broker_answering_metadata_is_retried_after_the_backoff_naming_the_failures():
    session = open_session()
    session.assign(BOTH, (), now=0.0)
    assert session.metadata_round(0.0) == [ADDRESS]
    session.metadata_unreachable("cannot connect to broker fake:9092: refused")
    with captured_logs() as logs:
        session.metadata_unanswered(0.0)
    (retry,) = [e for e in logs if e["event"] == "no broker answered a metadata request; "
                                                 "retrying"]
    assert retry["errors"] == ["cannot connect to broker fake:9092: refused"]
    assert not session.metadata_due(0.5) and session.metadata_due(BACKOFF_S)
    assert session.wait_until(deadline=5.0, now=0.5) == BACKOFF_S  # nothing can come before


def test_the_known_brokers_are_asked_for_metadata_before_the_bootstrap_ones():
    session, _link = started()
    session.node_lost(0, "connection reset", now=1.0)
    look_up(session, 1.0 + BACKOFF_S, brokers={0: OTHER, 1: ADDRESS})
    assert session.metadata_round(10.0) == [OTHER, ADDRESS]


def test_a_fetch_unanswered_for_the_request_timeout_loses_its_broker():
    session, link = started()
    session.fetch_request(0, link, now=1.0)
    assert session.wait_until(deadline=99.0, now=1.0) == 99.0  # an answer may come
    assert session.expire(now=31.0) == []
    assert session.expire(now=31.1) == [0]
    assert not session.in_flight and session.fetch_nodes() == set()


# -- versions -----------------------------------------------------------------------------------

@pytest.mark.parametrize("offered, expected", [
    (KAFKA_0_10_0, (1, 0, 2)), (KAFKA_0_10_2, (2, 1, 3)), (KAFKA_4_0, (12, 10, 12))])
def test_the_brokers_api_versions_ranges_choose_the_version_of_each_request(offered, expected):
    session = open_session(api_version=None)
    session.assign({SICK: None, HEALTHY: 0}, (), now=0.0)
    link = connect(session, offered)
    assert session.link("fake:9092").versions == link.versions  # asked once per address
    metadata_request = session.metadata_request(link, 0.0)
    session.receive(metadata_request, metadata(metadata_request), 0.0)
    offsets_request = session.offsets_request(0, link, 0.0)
    session.receive(offsets_request, offsets(offsets_request), 0.0)
    fetch_request = session.fetch_request(0, link, 0.0)
    assert fetch_request is not None
    assert (metadata_request.version, offsets_request.version, fetch_request.version) == expected
    assert fetch_request.asked == {HEALTHY: 0, SICK: 0}


def test_a_broker_leaving_api_versions_unanswered_gets_the_legacy_versions():
    session = open_session(api_version=None)
    assert session.link("fake:9092") is None
    with captured_logs() as logs:
        link = session.api_versions_failed("fake:9092", TIMED_OUT)
    assert (link.versions.metadata, link.versions.list_offsets, link.versions.fetch) == (0, 0, 2)
    assert session.link("fake:9092").versions == link.versions  # not asked again
    assert [e["event"] for e in logs if e["log_level"] == "info"] == [
        "broker does not answer ApiVersions; speaking the pre-0.10 versions"]


def test_brokers_known_to_predate_api_versions_are_not_asked():
    link = open_session(api_version=(0, 9)).link("fake:9092")
    assert link is not None
    assert (link.versions.metadata, link.versions.list_offsets, link.versions.fetch) == (0, 0, 1)


def test_a_broker_whose_versions_do_not_meet_ours_fails_at_once_naming_it():
    with pytest.raises(FetchError, match="^broker fake:9092 speaks Fetch v13-v18 and zkconsumer "
                                         "v0-v12: no version in common"):
        connect(open_session(api_version=None), {**KAFKA_4_0, FETCH: (13, 18)})


@pytest.mark.parametrize("answer, api_version, fetch_version", [
    pytest.param(KAFKA_0_10_2, None, 3, id="0.10.2"),
    pytest.param(TIMED_OUT, None, 2, id="0.9-unanswered"),
    pytest.param(None, (0, 9), 1, id="0.9-configured"),
])
def test_read_committed_from_a_broker_older_than_0_11_fails_with_one_line(
        answer, api_version, fetch_version):
    """A Fetch below v4 has no isolation level: the broker would deliver aborted records."""
    session = open_session(api_version=api_version, isolation_level="read_committed")
    with pytest.raises(FetchError) as failure:
        if answer is TIMED_OUT:
            session.api_versions_failed("fake:9092", TIMED_OUT)
        else:
            connect(session, answer)
    assert str(failure.value) == (
        "isolation.level=read_committed needs Kafka 0.11 or newer; broker fake:9092 speaks "
        f"Fetch v{fetch_version}")


@pytest.mark.parametrize("request_kind, request_name", [("fetch", "Fetch v2"),
                                                        ("list-offsets", "ListOffsets v0")])
def test_unsupported_version_has_the_broker_asked_again_then_fails_with_one_line(
        request_kind, request_name):
    session, link = started({SICK: 0 if request_kind == "fetch" else None, HEALTHY: 0})
    answer = fetch if request_kind == "fetch" else reset
    for attempt in (1, 2):
        received = answer(session, link, now=attempt, errors={SICK: UNSUPPORTED_VERSION})
        assert received == Received({}, [0], False)  # its connections close
        assert session.link("fake:9092") is None  # asked ApiVersions again at the next one
        assert not session.metadata_due(attempt + 0.5)
        link = connect(session)
        look_up(session, attempt + BACKOFF_S, link)
    with pytest.raises(FetchError) as failure:
        answer(session, link, now=3.0, errors={SICK: UNSUPPORTED_VERSION})
    assert str(failure.value) == (
        f"broker fake:9092 did not answer {request_name} in a form we can read (Kafka error 35 "
        "UNSUPPORTED_VERSION) 3 times; the broker offered this version in its ApiVersions "
        "answer")


def test_a_broker_that_rejects_a_version_and_then_offers_older_ones_is_asked_in_those():
    """A broker rolled back to an older Kafka: its next ApiVersions answer is believed."""
    session, link = started(offered=KAFKA_4_0, api_version=None)
    assert fetch(session, link, now=1.0, errors={SICK: UNSUPPORTED_VERSION}).lost == [0]
    older = connect(session, {**KAFKA_4_0, FETCH: (4, 11)})
    look_up(session, 1.0 + BACKOFF_S, older)
    request = session.fetch_request(0, older, now=2.0)
    assert request is not None and request.version == 11


@pytest.mark.parametrize("api_key, request_name, positions", [
    (LIST_OFFSETS, "ListOffsets v0", {SICK: None, HEALTHY: 0}),
    (FETCH, "Fetch v2", BOTH),
    (METADATA, "Metadata v1", BOTH),
])
def test_answers_that_do_not_parse_fail_after_three_attempts_with_one_line(
        api_key, request_name, positions):
    session = open_session()
    session.assign(positions, (), now=0.0)
    with pytest.raises(FetchError) as failure:
        for attempt in range(3):
            link = connect(session)  # asked ApiVersions again each time, in case it changed
            if api_key == METADATA:
                session.metadata_round(float(attempt))
                session.receive(session.metadata_request(link, attempt), GARBLED, attempt)
                session.metadata_unanswered(float(attempt))
                continue
            look_up(session, float(attempt), link)
            request = (session.offsets_request(0, link, attempt) if api_key == LIST_OFFSETS
                       else session.fetch_request(0, link, attempt))
            assert request is not None
            assert session.receive(request, GARBLED, attempt) == Received({}, [0], False)
            assert session.link("fake:9092") is None
    assert str(failure.value) == (
        f"broker fake:9092 did not answer {request_name} in a form we can read (response ends "
        "early: 6 bytes, a field of 4 at byte 4) 3 times; the broker offered this version in "
        "its ApiVersions answer")


def test_a_garbled_answer_from_a_broker_configured_as_old_names_the_setting():
    session, link = started({SICK: None, HEALTHY: 0}, api_version=(0, 9))
    with pytest.raises(FetchError, match=r"ListOffsets v0 .* 3 times; kafka.api.version \(or "
                                         r"the broker registrations in ZooKeeper\) says"):
        for attempt in range(3):
            session.receive(session.offsets_request(0, link, attempt), GARBLED, attempt)
            look_up(session, attempt + BACKOFF_S, link)


def test_answers_that_parse_in_between_reset_the_count():
    session, link = started(backoff_ms=0)
    for attempt in range(6):
        for garbled in (True, True, False):
            request = session.fetch_request(0, link, attempt)
            if request is None:
                look_up(session, attempt, link)
                request = session.fetch_request(0, link, attempt)
            assert request is not None
            session.receive(request, GARBLED if garbled else fetched(request), attempt)
    assert session.position(SICK) == session.position(HEALTHY) == MESSAGES


def test_a_broker_closing_the_connection_on_a_version_it_offered_fails_after_three_attempts():
    session, link = started(offered=KAFKA_4_0, api_version=None)
    with pytest.raises(FetchError) as failure:
        for attempt in range(3):
            request = session.fetch_request(0, link, attempt)
            assert request is not None
            assert session.failed(request, CLOSED, attempt) == [0]
            link = connect(session, KAFKA_4_0)  # a new connection, the broker asked again
            look_up(session, attempt + BACKOFF_S, link)
    assert str(failure.value) == (
        "broker fake:9092 did not answer Fetch v12 in a form we can read (it closed the "
        "connection) 3 times; the broker offered this version in its ApiVersions answer")


def test_a_close_on_a_connection_that_already_answered_the_request_is_not_a_rejection():
    """A broker closes idle connections, and long-polling fetches when it shuts down: once a
    connection had an answer to a request, closing it cannot reject that request's version."""
    session, link = started(offered=KAFKA_4_0, api_version=None)
    fetch(session, link, now=1.0)
    with captured_logs() as logs:
        for now in (2.0, 3.0, 4.0):  # the answered connection, then two new ones: one short
            request = session.fetch_request(0, link, now)
            assert request is not None
            session.failed(request, CLOSED, now)
            link = connect(session, KAFKA_4_0)
            look_up(session, now + BACKOFF_S, link)
    rejected = ("broker fake:9092 did not answer Fetch v12 in a form we can read (it closed the "
                "connection)")
    assert [e["reason"] for e in logs if e["event"] == "partitions wait for their leader"] == [
        str(CLOSED), rejected, rejected]


def test_closed_connections_to_a_legacy_broker_are_retried_for_as_long_as_they_last():
    """0.9 never offered the version, so a closed connection is trouble of the connection (a
    broker restarting, a proxy cut off), not a rejection."""
    session, link = started(api_version=(0, 9))
    for attempt in range(12):
        request = session.fetch_request(0, link, attempt)
        assert request is not None and session.failed(request, CLOSED, attempt) == [0]
        look_up(session, attempt + BACKOFF_S, link)
    assert delivered(fetch(session, link, now=20.0)) == {SICK: EVERYTHING, HEALTHY: EVERYTHING}


def test_a_metadata_answer_rejected_too_often_fails_once_no_broker_answers():
    session = open_session()
    session.assign(BOTH, (), now=0.0)
    for attempt in range(2):
        session.metadata_round(float(attempt))
        request = session.metadata_request(connect(session), attempt)
        assert session.failed(request, CLOSED, attempt) == []
        session.metadata_unanswered(float(attempt))
    session.metadata_round(2.0)
    request = session.metadata_request(connect(session), 2.0)
    session.failed(request, CLOSED, 2.0)
    with pytest.raises(FetchError, match="did not answer Metadata v1 in a form we can read "
                                         r"\(it closed the connection\) 3 times"):
        session.metadata_unanswered(2.0)


# -- what the requests carry --------------------------------------------------------------------

@pytest.mark.parametrize("isolation_level, code", [("read_uncommitted", 0),
                                                   ("read_committed", 1)])
def test_the_isolation_level_goes_to_a_broker_that_knows_it_and_aborted_transactions_come_back(
        monkeypatch, isolation_level, code):
    decoded_with = []
    real_decode = fetch_session.decode_records

    def decode_records(data, topic, partition, fetch_offset, check_crcs, aborted, **_bounds):
        decoded_with.append(aborted)
        return real_decode(data, topic, partition, fetch_offset, check_crcs, aborted)

    monkeypatch.setattr(fetch_session, "decode_records", decode_records)
    session, link = started({SICK: None, HEALTHY: 0}, KAFKA_4_0, api_version=None,
                            isolation_level=isolation_level)
    offsets_request = session.offsets_request(0, link, 0.0)
    session.receive(offsets_request, offsets(offsets_request), 0.0)
    fetch_request = session.fetch_request(0, link, 0.0)
    assert fetch_request is not None
    session.receive(fetch_request, fetched(fetch_request, aborted=[(5, 0)]), 0.0)
    assert {ListOffsetsRequest.decode(offsets_request.body,
                                      version=offsets_request.version).isolation_level,
            FetchRequest.decode(fetch_request.body,
                                version=fetch_request.version).isolation_level} == {code}
    assert set(map(repr, decoded_with)) == {"[(5, 0)]" if code else "None"}


def test_the_high_watermark_of_each_partition_is_kept_while_it_is_assigned():
    session, link = started()
    assert session.high_watermark(SICK) is None
    fetch(session, link, now=1.0, high_watermark=7)
    assert (session.high_watermark(SICK), session.high_watermark(HEALTHY)) == (7, 7)
    session.assign({HEALTHY: MESSAGES}, (), now=1.0)
    assert (session.high_watermark(SICK), session.high_watermark(HEALTHY)) == (None, 7)


def test_a_partition_that_got_data_is_asked_for_last_in_the_next_fetch():
    """From Fetch v3 a broker fills a response in the order asked, up to a limit: a partition
    that keeps getting data must not keep the ones after it waiting."""
    session, link = started({HEALTHY: 0, SICK: MESSAGES})  # only HEALTHY has something new
    request = session.fetch_request(0, link, 1.0)
    assert request is not None and list(request.asked) == [HEALTHY, SICK]
    session.receive(request, fetched(request), 1.0)
    request = session.fetch_request(0, link, 1.0)
    assert request is not None and list(request.asked) == [SICK, HEALTHY]


def test_one_fetch_at_a_time_per_leader_and_one_asking_what_the_last_asked_is_not_built_again():
    """A member that keeps up asks the same offsets poll after poll: its request is built once.
    Any other offset, or order, is a new request."""
    session, link = started({HEALTHY: MESSAGES, SICK: MESSAGES})  # nothing new to fetch
    bodies = []
    for now in (1.0, 2.0, 3.0):
        assert session.fetch_nodes() == {0}
        request = session.fetch_request(0, link, now)
        assert request is not None and session.fetch_request(0, link, now) is None
        assert session.fetch_nodes() == set()
        session.receive(request, fetched(request), now)
        bodies.append(request.body)
    assert all(body is bodies[0] for body in bodies)
    session.assign({HEALTHY: MESSAGES - 2, SICK: MESSAGES}, restart=[HEALTHY], now=4.0)
    request = session.fetch_request(0, link, 4.0)
    assert request is not None and request.asked == {HEALTHY: MESSAGES - 2, SICK: MESSAGES}
    assert request.body is not bodies[0]


def test_a_partition_dropped_takes_its_whole_fetch_state_with_it():
    """One record per partition: dropped, its position, high watermark, leader and trouble go
    at once; assigned again, it starts from the position given, with no high watermark, and
    its leader is looked up again, as it was set aside."""
    session, link = started()
    fetch(session, link, now=1.0, high_watermark=7, errors={SICK: NOT_LEADER})
    assert session.metadata_due(1.0 + BACKOFF_S), "SICK waits for its leader"
    session.assign({HEALTHY: MESSAGES}, (), now=1.5)
    assert not session.metadata_due(1.0 + BACKOFF_S), "no partition waits any more"
    assert (session.position(SICK), session.high_watermark(SICK)) == (None, None)
    session.assign({HEALTHY: MESSAGES, SICK: 3}, (), now=2.0)
    assert (session.position(SICK), session.high_watermark(SICK)) == (3, None)
    assert session.high_watermark(HEALTHY) == 7 and session.metadata_due(2.0)


def test_an_idle_answer_that_repeats_the_last_one_is_not_decoded_again(monkeypatch):
    """An idle member is answered the same bytes poll after poll: decoded once; an answer that
    differs (a message came, a high watermark moved, an error) is decoded."""
    session, link = started()
    assert delivered(fetch(session, link, 0.1)) == {SICK: EVERYTHING, HEALTHY: EVERYTHING}
    decodes = []
    decode = protocol.decode_fetch
    monkeypatch.setattr(protocol, "decode_fetch",
                        lambda *args: decodes.append(args) or decode(*args))
    assert fetch(session, link, 0.2) == Received({}, [], True)
    assert fetch(session, link, 0.3) == Received({}, [], True)
    assert len(decodes) == 1, "the repeated idle answer was decoded again"
    arrived = fetch(session, link, 0.4, high_watermark=MESSAGES + 1)
    assert delivered(arrived) == {SICK: [MESSAGES], HEALTHY: [MESSAGES]}
    assert session.high_watermark(SICK) == MESSAGES + 1
    assert len(decodes) == 2
    fetch(session, link, 0.5, high_watermark=MESSAGES + 1)
    session.assign({SICK: MESSAGES + 1}, (), now=0.6)  # assigned anew: decoded again
    fetch(session, link, 0.7, high_watermark=MESSAGES + 1)
    assert len(decodes) == 4
    # A new connection, whose Fetch version no answer proved yet: decoded (and proven).
    fresh = session.api_versions_answered(f"{ADDRESS[0]}:{ADDRESS[1]}",
                                          api_versions_answer(KAFKA_0_10_0))
    assert fresh is not link
    fetch(session, fresh, 0.8, high_watermark=MESSAGES + 1)
    fetch(session, fresh, 0.9, high_watermark=MESSAGES + 1)
    assert len(decodes) == 5


def test_a_partition_without_a_leader_ends_the_wait_at_its_look_up_while_others_are_in_flight():
    # A long fetch.wait.max.ms: the healthy partition's fetch may be answered only at the
    # deadline; the one set aside is looked up again once the backoff has passed, not then.
    session, link = started()
    fetch(session, link, now=1.0, errors={SICK: NOT_LEADER})
    in_flight = session.fetch_request(0, link, now=1.0)
    assert in_flight is not None and set(in_flight.asked) == {HEALTHY}
    assert session.wait_until(deadline=61.0, now=1.0) == 1.0 + BACKOFF_S
    look_up(session, 1.0 + BACKOFF_S, link)
    assert session.wait_until(deadline=61.0, now=1.0 + BACKOFF_S) == 61.0  # every leader known

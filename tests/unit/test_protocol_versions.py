"""Which request versions the wire fetcher speaks to a broker, from its ApiVersions answer (or its
silence) and the settings: the newest both sides know, never a Fetch a 4.x broker refuses."""

from __future__ import annotations

import pytest
from support.kafka_answers import api_versions_answer

from zkconsumer.kafka.errors import ChannelError, FetchError
from zkconsumer.kafka.protocol.broker_versions import BrokerVersions, Link, RejectedRequests
from zkconsumer.kafka.protocol.codec import (
    FETCH,
    LIST_OFFSETS,
    METADATA,
    READ_COMMITTED,
    READ_UNCOMMITTED,
)
from zkconsumer.kafka.protocol.versions import (
    CONFIGURED,
    NEGOTIATED,
    UNANSWERED,
    Versions,
    asks_api_versions,
    fetch_version,
    legacy_after_silence,
    legacy_versions,
    negotiate,
)

# ApiVersions answers (Fetch, ListOffsets, Metadata only) of a few broker generations.
KAFKA_0_10_0 = {FETCH: (0, 2), LIST_OFFSETS: (0, 0), METADATA: (0, 1)}
KAFKA_0_10_2 = {FETCH: (0, 3), LIST_OFFSETS: (0, 1), METADATA: (0, 2)}
KAFKA_2_8 = {FETCH: (0, 12), LIST_OFFSETS: (0, 6), METADATA: (0, 11)}
KAFKA_4_0 = {FETCH: (4, 17), LIST_OFFSETS: (1, 10), METADATA: (0, 13)}
TANSU_0_6 = {FETCH: (0, 17), LIST_OFFSETS: (0, 9), METADATA: (0, 12)}


@pytest.mark.parametrize("api_version,expected", [
    ((0, 8, 2), 0), ((0, 9), 1), ((0, 10), 2), ((2, 8), 2), (None, 2)])
def test_the_legacy_fetch_version_follows_the_broker_generation(api_version, expected):
    assert fetch_version(api_version) == expected


@pytest.mark.parametrize("api_version,asks", [
    ((0, 8, 2), False), ((0, 9), False), ((0, 9, 0, 1), False), ((0, 10), True),
    ((3, 7), True), (None, True)])
def test_brokers_are_asked_for_their_versions_unless_known_to_predate_the_question(
        api_version, asks):
    assert asks_api_versions(api_version) is asks


def test_a_broker_that_does_not_answer_api_versions_gets_the_legacy_versions():
    versions = legacy_versions((0, 9), UNANSWERED)
    assert versions == Versions(fetch=1, list_offsets=0, metadata=0, source=UNANSWERED)
    assert not versions.negotiated
    assert "did not answer ApiVersions" in versions.hint()
    assert "kafka.api.version" in legacy_versions((0, 9), CONFIGURED).hint()


@pytest.mark.parametrize("offered,expected", [
    (KAFKA_0_10_0, (2, 0, 1)),
    (KAFKA_0_10_2, (3, 1, 2)),
    (KAFKA_2_8, (12, 6, 11)),
    (KAFKA_4_0, (12, 10, 12)),
    (TANSU_0_6, (12, 9, 12)),
])
def test_the_newest_version_both_sides_know_is_chosen(offered, expected):
    versions = negotiate("broker:9092", offered)
    assert (versions.fetch, versions.list_offsets, versions.metadata) == expected
    assert versions.source == NEGOTIATED and versions.negotiated


def test_a_4x_broker_is_never_asked_for_fetch_below_v4_or_list_offsets_v0():
    versions = negotiate("broker:9092", KAFKA_4_0)
    assert versions.fetch >= 4 and versions.list_offsets >= 1


def test_other_apis_in_the_answer_do_not_matter():
    assert negotiate("broker:9092", {**KAFKA_2_8, 18: (0, 3), 0: (0, 9)}).fetch == 12


def test_ranges_that_do_not_meet_are_one_line_naming_broker_and_request():
    with pytest.raises(FetchError) as failure:
        negotiate("10.0.0.7:9092", {**KAFKA_4_0, FETCH: (13, 18)})
    assert str(failure.value) == (
        "broker 10.0.0.7:9092 speaks Fetch v13-v18 and zkconsumer v0-v12: no version in common; "
        "use fetch.backend=kafka-python")


def test_a_request_missing_from_the_answer_is_one_line_naming_broker_and_request():
    offered = {FETCH: (4, 17), METADATA: (0, 13)}
    with pytest.raises(FetchError,
                       match=r"^broker b:9092 does not offer ListOffsets \(API key 2\)"):
        negotiate("b:9092", offered)


# -- per broker and per connection (BrokerVersions) -----------------------------------------

TIMED_OUT = ChannelError("timed out", timed_out=True)
CLOSED = ChannelError("the broker closed the connection", closed_by_broker=True)
RESET = ChannelError("Connection reset by peer")


def link(versions: Versions) -> Link:
    return Link("b:9092", versions)


def test_a_broker_that_answered_once_is_asked_again_but_never_assumed_old():
    brokers = BrokerVersions(None, READ_UNCOMMITTED)
    assert brokers.known("b:9092") is None  # not asked yet
    negotiated = brokers.offered("b:9092", KAFKA_2_8)
    assert brokers.failed(link(negotiated), FETCH, 12, RESET).given_up is None
    assert brokers.known("b:9092") is None  # forgotten: asked again at the next connection
    for failure in (TIMED_OUT, CLOSED, RESET):
        with pytest.raises(ChannelError):
            brokers.not_answered("b:9092", failure)
    assert brokers.offered("b:9092", KAFKA_2_8) == negotiated == brokers.known("b:9092")


def test_only_silence_until_the_timeout_from_a_broker_that_never_answered_means_pre_0_10():
    brokers = BrokerVersions(None, READ_UNCOMMITTED)
    for failure in (CLOSED, RESET):
        with pytest.raises(ChannelError):
            brokers.not_answered("b:9092", failure)
    assert brokers.known("b:9092") is None
    assert brokers.not_answered("b:9092", TIMED_OUT) == legacy_versions(None, UNANSWERED)
    assert brokers.known("b:9092") == legacy_versions(None, UNANSWERED)


def test_one_rule_for_every_connection_says_what_a_silence_to_api_versions_means():
    """The rule the fetcher, the cluster client, the coordinator's connection and the first
    contact all follow, and the one table of legacy versions they all speak then."""
    from zkconsumer.kafka.protocol.cluster_versions import LEGACY_CLUSTER_VERSIONS
    from zkconsumer.kafka.protocol.group_codec import (
        GROUP_IMPLEMENTED,
        LEGACY_GROUP_VERSIONS,
        GroupNegotiation,
    )
    from zkconsumer.kafka.protocol.versions import LEGACY_VERSIONS

    assert legacy_after_silence(TIMED_OUT, answered_before=False) is None
    for failure in (TIMED_OUT, CLOSED, RESET):
        with pytest.raises(ChannelError) as caught:
            legacy_after_silence(failure, answered_before=True)
        assert caught.value is failure
    with pytest.raises(ChannelError, match="older than 0.9 does that"):
        legacy_after_silence(CLOSED, answered_before=False)
    with pytest.raises(ChannelError) as caught:
        legacy_after_silence(RESET, answered_before=False)
    assert caught.value is RESET
    assert LEGACY_CLUSTER_VERSIONS.items() <= LEGACY_VERSIONS.items()
    assert dict(zip(GROUP_IMPLEMENTED, LEGACY_GROUP_VERSIONS, strict=True)).items() <= (
        LEGACY_VERSIONS.items())
    coordinator = GroupNegotiation(None)
    coordinator.answered("b:9092", api_versions_answer(
        dict.fromkeys(GROUP_IMPLEMENTED, (0, 9))))
    with pytest.raises(ChannelError, match="timed out"):
        coordinator.unanswered("b:9092", TIMED_OUT)


def test_a_close_rejects_a_version_only_before_the_connection_answered_it():
    brokers = BrokerVersions(None, READ_UNCOMMITTED)
    used = link(brokers.offered("b:9092", KAFKA_2_8))
    assert brokers.answered(used, FETCH, 12, [0, 0]) is None
    assert brokers.failed(used, FETCH, 12, CLOSED).reason == str(CLOSED)
    fresh = link(brokers.offered("b:9092", KAFKA_2_8))
    assert "did not answer Fetch v12 in a form we can read (it closed the connection)" in (
        brokers.failed(fresh, FETCH, 12, CLOSED).reason)
    assert "(Kafka error 35 UNSUPPORTED_VERSION)" in brokers.answered(fresh, FETCH, 12, [35]).reason


@pytest.mark.parametrize("offered, fetch", [(KAFKA_0_10_0, 2), (KAFKA_0_10_2, 3)])
def test_read_committed_needs_a_fetch_that_carries_the_isolation_level(offered, fetch):
    brokers = BrokerVersions(None, READ_COMMITTED)
    with pytest.raises(FetchError, match=f"^isolation.level=read_committed needs Kafka 0.11 or "
                                         f"newer; broker b:9092 speaks Fetch v{fetch}$"):
        brokers.offered("b:9092", offered)
    assert BrokerVersions(None, READ_COMMITTED).offered("b:9092", KAFKA_2_8).fetch == 12


def test_rejections_count_per_broker_request_and_version_in_a_row():
    rejections = RejectedRequests(limit=3)
    assert rejections.note("a:1", "Fetch", 12, "garbled", "hint") is None
    assert rejections.note("b:1", "Fetch", 12, "garbled", "hint") is None  # another broker
    assert rejections.note("a:1", "ListOffsets", 9, "garbled", "hint") is None  # another request
    assert rejections.note("a:1", "Fetch", 11, "garbled", "hint") is None  # another version
    assert rejections.note("a:1", "Fetch", 11, "garbled", "hint") is None
    rejections.clear("a:1", "Fetch")
    assert rejections.note("a:1", "Fetch", 11, "garbled", "hint") is None
    assert rejections.note("a:1", "Fetch", 11, "garbled", "hint") is None
    assert rejections.note("a:1", "Fetch", 11, "closed", "the hint") == (
        "broker a:1 did not answer Fetch v11 in a form we can read (closed) 3 times; the hint")

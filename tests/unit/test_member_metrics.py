"""A member's metrics without a cluster: messages counted per chunk yet exactly, lag from high
watermarks and positions, rebalances and commits counted by result, and the HTTP server's
/metrics and /healthz, also on a connector whose stand-ins come from test_connector."""

from __future__ import annotations

import itertools
import threading

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from support.memory_store import MemoryStore
from support.record_columns import fetched
from support.scrape import get
from test_connector import TOPIC, member, world  # noqa: F401 - `world` is a fixture
from test_rebalancer import DictMembership, rebalancer

from zkconsumer.errors import ZkConsumerError
from zkconsumer.localcluster.processes import free_port
from zkconsumer.member.claims import Claim, DeliveryGate
from zkconsumer.member.rebalancer import (
    RebalanceFailedError,
)
from zkconsumer.member.state import State
from zkconsumer.member.streams import Chunk, KafkaStream
from zkconsumer.metrics import MemberMetrics, MemberSources, MetricsServer, MetricsServerError
from zkconsumer.metrics.member_metrics import HighestSeen, partition_lags
from zkconsumer.model import Message, TopicPartition
from zkconsumer.offsets import DualOffsetStore, OffsetStoreError
from zkconsumer.offsets.metered_store import MeteredOffsetStore
from zkconsumer.records.columns import records_of

A = TopicPartition("t", 0)
B = TopicPartition("t", 1)
U = TopicPartition("u", 0)


def messages(tp: TopicPartition, first: int, count: int) -> list[Message]:
    return [Message(tp.topic, tp.partition, offset, None, b"v" * 10, None)
            for offset in range(first, first + count)]


def stream_with(*chunks: tuple[TopicPartition, list[Message]]) -> KafkaStream:
    claims = {}
    stream = KafkaStream("s", max_chunks=1000, timeout_ms=0, claims=claims, gate=DeliveryGate())
    for tp, chunk in chunks:
        claims.setdefault(tp, Claim(tp, "c-0"))
        assert stream.offer(Chunk(tp, fetched(chunk), claims[tp]), lambda: True)
    return stream


def watching(metrics: MemberMetrics, streams=(), owned=None, positions=None,
             high_watermarks=None, queued_bytes=None) -> MemberMetrics:
    metrics.watch(MemberSources(
        streams=lambda: streams, owned=lambda: owned or {}, positions=lambda: positions or {},
        high_watermark=(high_watermarks or {}).get, queued_bytes=lambda: queued_bytes or {}))
    return metrics


# -- messages consumed, counted per chunk -----------------------------------------------------

def test_a_stream_read_partly_then_fully_counts_exactly_what_it_handed_out():
    stream = stream_with((A, messages(A, 0, 5)), (U, messages(U, 0, 3)), (A, messages(A, 5, 4)))
    metrics = watching(MemberMetrics(), streams=[stream])
    for _ in range(3):
        next(stream)
    assert stream.handed_out() == {"t": 3}
    assert metrics.snapshot()["messages_consumed"] == {"t": 3}
    for _ in range(4):
        next(stream)  # the rest of the first chunk, then two of topic u
    assert metrics.snapshot()["messages_consumed"] == {"t": 5, "u": 2}
    rest = list(itertools.islice(stream.batches(), 2))  # u's last message, t's second chunk
    assert [len(batch) for batch in rest] == [1, 4]
    assert metrics.snapshot()["messages_consumed"] == {"t": 9, "u": 3}


def test_the_messages_of_a_chunk_whose_claim_went_count_as_far_as_they_were_handed_out():
    stream = stream_with((A, messages(A, 0, 5)), (B, messages(B, 0, 2)))
    next(stream)
    next(stream)
    stream._claims.pop(A)  # released while its chunk was being read
    assert next(stream).partition == 1
    assert stream.handed_out() == {"t": 3}


def test_counts_read_while_a_stream_is_consumed_never_go_down_nor_exceed_it():
    chunks = [(A, messages(A, 10 * i, 10)) for i in range(300)]
    stream = stream_with(*chunks)
    metrics = watching(MemberMetrics(), streams=[stream])
    seen: list[int] = []
    done = threading.Event()

    def scrape() -> None:
        while not done.is_set():
            seen.append(metrics.snapshot()["messages_consumed"].get("t", 0))

    scraper = threading.Thread(target=scrape)
    scraper.start()
    consumed = sum(1 for _ in itertools.islice(stream, 3000))
    done.set()
    scraper.join()
    assert consumed == 3000
    assert seen == sorted(seen), "a counter went down"
    assert all(value <= consumed for value in seen)
    assert metrics.snapshot()["messages_consumed"] == {"t": 3000}


def test_highest_seen_keeps_each_total_from_going_down():
    highest = HighestSeen()
    assert highest.clamp({"t": 5}) == {"t": 5}
    assert highest.clamp({"t": 3, "u": 1}) == {"t": 5, "u": 1}
    assert highest.clamp({"t": 7}) == {"t": 7, "u": 1}


def test_payload_bytes_counts_keys_and_values_and_none_as_nothing():
    batch = [Message("t", 0, 0, b"key", b"12345", None), Message("t", 0, 1, None, None, None),
             Message("t", 0, 2, None, b"", None), Message("t", 0, 3, b"k", b"123", None)]
    assert fetched(batch).payload_bytes() == 3 + 5 + 1 + 3
    assert records_of([], "t", 0).payload_bytes() == 0


# -- lag, ownership, queues --------------------------------------------------------------------

def test_lag_is_the_high_watermark_minus_the_consumed_position_per_owned_partition():
    owned = {A: "c-0", B: "c-0", U: "c-1"}
    positions = {A: 40, B: 75, U: 3, TopicPartition("gone", 0): 0}
    marks = {A: 100, B: 75}  # no fetch answer for U yet
    assert partition_lags(owned, positions, marks.get) == {A: 60, B: 0}
    assert partition_lags(owned, {A: 101}, marks.get) == {A: 0}, "never negative"
    figures = watching(MemberMetrics(), owned=owned, positions=positions,
                       high_watermarks=marks).snapshot()
    assert figures["partition_lag"] == {"t-0": 60, "t-1": 0}
    assert figures["max_lag"] == 60
    assert figures["owned_partitions"] == 3
    assert figures["topic_owned_partitions"] == {"t": 2, "u": 1}


def test_queued_chunks_and_bytes_come_from_the_streams_and_the_fetch_loop():
    streams = [stream_with((A, messages(A, 0, 1)), (A, messages(A, 1, 1))),
               stream_with((U, messages(U, 0, 1)))]
    figures = watching(MemberMetrics(), streams=streams,
                       queued_bytes={"t": 20, "u": 10}).snapshot()
    assert figures["fetch_queue_chunks"] == 3
    assert figures["bytes_consumed"] == {"t": 20, "u": 10}


def test_a_member_not_wired_yet_reports_zeros():
    figures = MemberMetrics().snapshot()
    assert figures["messages_consumed"] == {}
    assert (figures["max_lag"], figures["owned_partitions"], figures["fetch_queue_chunks"]) \
        == (0, 0, 0)
    assert figures["rebalances"] == {"success": 0, "failure": 0}
    assert figures["zookeeper_session_expirations"] == 0


# -- rebalances and commits --------------------------------------------------------------------

def test_rebalances_are_counted_by_result_and_timed():
    metrics = MemberMetrics()
    rebalancer(MemoryStore(), DictMembership(), observe=metrics.observe_rebalance).rebalance()
    contested = DictMembership()
    contested.owners[A] = "g_other-0"  # never released
    with pytest.raises(RebalanceFailedError):
        rebalancer(MemoryStore(), contested, observe=metrics.observe_rebalance).rebalance()
    figures = metrics.snapshot()
    assert figures["rebalances"] == {"success": 1, "failure": 1}
    assert figures["rebalance_duration_seconds"]["count"] == 2


def metered(name: str, metrics: MemberMetrics, journal: list, **failures) -> MeteredOffsetStore:
    return MeteredOffsetStore(MemoryStore(name, journal, **failures), metrics.observe_commit,
                              writes_refresh=name == "kafka")


def test_dual_commits_are_counted_per_storage_and_result():
    metrics = MemberMetrics()
    journal: list = []
    zookeeper, kafka = metered("zookeeper", metrics, journal), metered("kafka", metrics, journal)
    store = DualOffsetStore(zookeeper, kafka)
    store.commit({A: 5})
    store.commit({}, refresh={A: 5})  # Kafka writes unchanged offsets again; ZooKeeper not
    kafka._store.fail_commit = True
    with pytest.raises(OffsetStoreError):
        store.commit({A: 6})
    figures = metrics.snapshot()
    assert figures["commits"] == {"zookeeper": {"success": 1},
                                  "kafka": {"success": 2, "failure": 1}}
    assert figures["commit_duration_seconds"]["kafka"]["count"] == 3
    assert journal == ["kafka", "zookeeper", "kafka", "zookeeper", "kafka"]


def test_a_commit_with_nothing_to_write_is_not_counted():
    metrics = MemberMetrics()
    store = metered("zookeeper", metrics, [])
    store.commit({}, refresh={A: 5})
    assert metrics.snapshot()["commits"] == {}


def test_fetch_responses_and_session_expirations_are_counted():
    metrics = MemberMetrics()
    for seconds in (0.01, 0.02):
        metrics.observe_fetch("broker1:9092", seconds)
    metrics.observe_fetch("broker2:9092", 0.5)
    metrics.observe_session_expired()
    figures = metrics.snapshot()
    assert figures["fetch_requests"] == {"broker1:9092": 2, "broker2:9092": 1}
    assert figures["fetch_duration_seconds"]["broker1:9092"]["sum"] == pytest.approx(0.03)
    assert figures["zookeeper_session_expirations"] == 1


# -- the text format and the HTTP server -------------------------------------------------------

EXPECTED_FAMILIES = {
    "zkconsumer_messages_consumed": "counter", "zkconsumer_bytes_consumed": "counter",
    "zkconsumer_partition_lag": "gauge", "zkconsumer_max_lag": "gauge",
    "zkconsumer_owned_partitions": "gauge", "zkconsumer_topic_owned_partitions": "gauge",
    "zkconsumer_rebalances": "counter", "zkconsumer_rebalance_duration_seconds": "histogram",
    "zkconsumer_commits": "counter", "zkconsumer_commit_duration_seconds": "histogram",
    "zkconsumer_fetch_requests": "counter", "zkconsumer_fetch_duration_seconds": "histogram",
    "zkconsumer_zookeeper_session_expirations": "counter",
    "zkconsumer_fetch_queue_chunks": "gauge",
}


def families(text: str) -> dict:
    """The families of a scrape, leaving out prometheus_client's `_created` timestamps."""
    return {family.name: family for family in text_string_to_metric_families(text)
            if not family.name.endswith("_created")}


def test_the_text_format_parses_and_names_every_metric():
    stream = stream_with((A, messages(A, 0, 3)))
    next(stream)
    next(stream)
    metrics = watching(MemberMetrics(), streams=[stream], owned={A: "c-0"}, positions={A: 1},
                       high_watermarks={A: 3}, queued_bytes={"t": 30})
    metrics.observe_commit("zookeeper", True, 0.01)
    metrics.observe_fetch("b:9092", 0.01)
    parsed = families(generate_latest(metrics.registry).decode())
    assert {name: family.type for name, family in parsed.items()} == EXPECTED_FAMILIES
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in parsed.values() for s in family.samples}
    assert samples[("zkconsumer_messages_consumed_total", (("topic", "t"),))] == 2
    assert samples[("zkconsumer_partition_lag", (("partition", "0"), ("topic", "t")))] == 2
    assert samples[("zkconsumer_bytes_consumed_total", (("topic", "t"),))] == 30


def test_two_members_in_one_process_have_registries_of_their_own():
    first, second = MemberMetrics(), MemberMetrics()
    first.observe_session_expired()
    assert second.snapshot()["zookeeper_session_expirations"] == 0


def test_the_server_serves_metrics_and_health_and_a_port_in_use_is_one_line():
    health = {"now": (True, "registered")}
    server = MetricsServer("127.0.0.1", 0, MemberMetrics().registry, lambda: health["now"])
    try:
        status, text = get(server.port, "/metrics")
        assert status == 200 and "zkconsumer_rebalances_total" in families(text).get(
            "zkconsumer_rebalances").samples[0].name
        assert get(server.port, "/healthz") == (200, "registered\n")
        health["now"] = (False, "failed: it broke")
        assert get(server.port, "/healthz") == (503, "failed: it broke\n")
        assert get(server.port, "/")[0] == 404
        with pytest.raises(MetricsServerError) as raised:
            MetricsServer("127.0.0.1", server.port, MemberMetrics().registry, lambda: (True, ""))
        assert str(raised.value) == \
            f"cannot serve metrics on 127.0.0.1:{server.port}: Address already in use"
    finally:
        server.stop()


def test_a_connector_is_healthy_while_registered_and_not_after_it_failed(world):  # noqa: F811
    port = free_port()
    with member(world, **{"metrics.port": str(port)}) as (connector, stream):
        assert connector.wait_until_stable(timeout=10)
        assert get(port, "/healthz") == (
            200, f"registered in group g as {connector.consumer_id} (stable)\n")
        for _ in range(15):
            next(stream)
        figures = connector.metrics()
        assert figures["messages_consumed"] == {TOPIC: 15}
        assert figures["rebalances"]["success"] == 1
        assert figures["owned_partitions"] == 2
        assert "zkconsumer_messages_consumed_total" in get(port, "/metrics")[1]

        world["membership"].fail_snapshot = TypeError("a bug")
        world["membership"].on_change()
        with pytest.raises(ZkConsumerError):
            connector.wait_until_stable(timeout=10)
        assert connector.state is State.FAILED
        assert get(port, "/healthz") == (503, "failed: TypeError: a bug\n")
        assert connector.metrics()["rebalances"]["failure"] == 1
    with pytest.raises(OSError):
        get(port, "/healthz")  # stopped with the member


def test_a_connector_whose_metrics_port_is_in_use_fails_before_it_joins(world):  # noqa: F811
    taken = MetricsServer("127.0.0.1", 0, MemberMetrics().registry, lambda: (True, ""))
    try:
        with pytest.raises(MetricsServerError, match="Address already in use"), \
                member(world, **{"metrics.port": str(taken.port)}):
            pass
    finally:
        taken.stop()
    assert "membership" not in world, "the member was wired, so it could have joined"

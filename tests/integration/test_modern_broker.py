"""Legacy groups on a modern, ZooKeeper-less broker (Tansu 0.6): members, admin commands and the
Spark source reach Kafka through `bootstrap.servers` and take topics, partitions and leaders from
Kafka metadata, while the group itself (members, owners, ZooKeeper offsets) stays in the session
cluster's ZooKeeper.

Tansu's ListOffsets "latest" answer is the base offset of a partition's last record batch + 1,
not the log end (see support/tansu.py). Where a test compares a log end, or a read runs to
"latest", it produces one record per batch, so that answer and the true log end (the fetch high
watermark) agree and the product is judged on its own behaviour, not on the broker's defect.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from click.testing import CliRunner
from support.ownership import assignment_from_registrations, settled_ownership
from support.tansu import (
    all_partitions,
    committed,
    create_topic,
    high_watermarks,
    list_offsets_latest,
    produce,
)
from support.waiting import wait_until

from zkconsumer.assignment import consumer_of_thread
from zkconsumer.cli import cli
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import ZookeeperOffsetStore
from zkconsumer.zk.group_state import read_owners

pytestmark = pytest.mark.integration

REFRESH_MS = "500"  # topic.metadata.refresh.interval.ms: new partitions and topics found fast


@dataclass(frozen=True)
class ModernCluster:
    """The session ZooKeeper (for the group) with the modern broker (for the data), shaped like
    the `cluster` fixture for the member helpers; no kafka.api.version: it is negotiated."""

    zookeeper_connect: str
    bootstrap_servers: str
    kafka_api_version: tuple[int, ...] | None = None


@pytest.fixture
def modern(cluster, modern_broker) -> ModernCluster:
    return ModernCluster(cluster.zookeeper_connect, modern_broker.bootstrap_servers)


@pytest.fixture
def modern_members(modern, members_on):
    """In-process members (Python API) that reach Kafka through bootstrap.servers."""
    def start(group: str, **options):
        properties = {"bootstrap.servers": modern.bootstrap_servers,
                      "topic.metadata.refresh.interval.ms": REFRESH_MS}
        return members_on(modern, group, **{**properties, **options})

    return start


@pytest.fixture
def modern_cli_members(modern, cli_members):
    """`zkconsumer consume --bootstrap-server ... --format jsonl` processes (from the beginning)."""
    def start(group: str, topic: str, name: str):
        return cli_members(group, topic, name, "--bootstrap-server", modern.bootstrap_servers,
                           "--property", f"topic.metadata.refresh.interval.ms={REFRESH_MS}")

    return start


@pytest.fixture
def admin(modern):
    """Runs `zkconsumer ARGS --zookeeper Z --bootstrap-server B` in-process."""
    def run(*args: str):
        result = CliRunner().invoke(cli, [*args, "--zookeeper", modern.zookeeper_connect,
                                          "--bootstrap-server", modern.bootstrap_servers],
                                    catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return run


def _values(n: int, prefix: str = "m") -> list[bytes]:
    return [f"{prefix}-{i:05d}".encode() for i in range(n)]


def _running(workers) -> None:
    """Fail at once, with its log, when a worker process has exited."""
    for worker in workers:
        code = worker.process.poll()
        assert code is None, f"{worker.name} exited with {code}:\n{worker.log_tail()}"


def _failed(api_members) -> None:
    for member in api_members:
        assert member.failure is None, f"member {member.consumer_id} failed: {member.failure}"


def _range_over_metadata(bootstrap_servers: str, members) -> dict:
    """What the pure range assignor computes from the members' registrations and the topics and
    partitions Kafka metadata lists."""
    return assignment_from_registrations(None, "range", members,
                                         partitions=all_partitions(bootstrap_servers))


def _settled(zk, group: str, expected: set[TopicPartition], member_count: int, *,
             alive=lambda: None, timeout: float = 120):
    """(members, owners) once exactly `expected` is owned by the `member_count` members."""
    partitions: dict[str, list[int]] = {}
    for tp in sorted(expected):
        partitions.setdefault(tp.topic, []).append(tp.partition)
    return settled_ownership(zk, group, sorted(partitions), member_count, timeout=timeout,
                             partitions=partitions, alive=alive)


def _partitions(topic: str, count: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(count)}


def _cli_delivered(workers, topic: str) -> list[tuple[int, int, bytes]]:
    return [(r["partition"], r["offset"], r["value"].encode())
            for w in workers for r in w.records() if r["topic"] == topic]


def _api_delivered(members, topic: str) -> list[tuple[int, int, bytes]]:
    snapshots = [list(member.messages) for member in members]
    return [(m.partition, m.offset, m.value) for ms in snapshots for m in ms if m.topic == topic]


def _wait_for_every_offset(delivered, placed: dict[tuple[int, int], bytes], *, alive,
                           what: str, timeout: float = 90) -> list[tuple[int, int, bytes]]:
    """Wait until every produced (partition, offset) was delivered; return all deliveries."""
    def probe():
        alive()
        got = delivered()
        return got if set(placed) <= {(p, o) for p, o, _ in got} else None

    return wait_until(probe, timeout=timeout, message=f"every offset of {what}")


def _assert_values_match(got, placed: dict[tuple[int, int], bytes]) -> None:
    wrong = [(p, o, v) for p, o, v in got if placed.get((p, o), v) != v]
    assert not wrong, f"delivered with the wrong value: {wrong[:5]}"


def test_two_cli_members_split_a_topic_by_range_over_metadata_and_read_it_exactly_once(
        zk, modern, modern_topic_factory, unique_name, modern_cli_members):
    topic = modern_topic_factory(partitions=4)
    group = unique_name("pair")
    workers = [modern_cli_members(group, topic, f"pair-{i}") for i in range(2)]

    registered, owners = _settled(zk, group, _partitions(topic, 4), 2,
                                  alive=lambda: _running(workers))
    assert {w.consumer_id() for w in workers} == set(registered)
    assert owners == _range_over_metadata(modern.bootstrap_servers, registered)

    placed = produce(modern.bootstrap_servers, topic, _values(400), partitions=4)
    got = _wait_for_every_offset(lambda: _cli_delivered(workers, topic), placed,
                                 alive=lambda: _running(workers), what=f"{topic} (400)")
    _assert_values_match(got, placed)
    assert sorted((p, o) for p, o, _ in got) == sorted(placed), "a message was read twice"
    for worker in workers:
        owned = {tp.partition for tp, thread in owners.items()
                 if consumer_of_thread(thread) == worker.consumer_id()}
        read = {r["partition"] for r in worker.records()}
        assert read == owned, f"{worker.name} read partitions {read}, owns {owned}"
    assert read_owners(zk, group) == owners, "ownership moved with no member change"


@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4", "zstd"],
                         ids=lambda c: c or "none")
def test_every_compression_codec_is_read_with_the_right_values(
        modern, modern_topic_factory, unique_name, modern_members, compression):
    topic = modern_topic_factory(partitions=2)
    # Batched by the producer: each partition's records travel in (compressed) batches of many.
    placed = produce(modern.bootstrap_servers, topic, _values(200, f"c-{compression}"),
                     partitions=2, compression=compression)
    member = modern_members(unique_name("codec"), topics={topic: 1})

    got = _wait_for_every_offset(lambda: _api_delivered([member], topic), placed,
                                 alive=lambda: _failed([member]), what=f"{topic} (200)")
    _assert_values_match(got, placed)
    assert len(got) == len(placed)


def test_headers_reach_the_jsonl_output_as_key_value_pairs(
        modern, modern_topic_factory, unique_name, modern_cli_members):
    topic = modern_topic_factory(partitions=2)
    values = _values(40, "h")
    headers = [[("trace", f"t-{i}".encode()), ("n", str(i).encode()), ("trace", "é".encode())]
               if i % 2 == 0 else [] for i in range(len(values))]
    placed = produce(modern.bootstrap_servers, topic, values, partitions=2, headers=headers)
    worker = modern_cli_members(unique_name("headers"), topic, "headers")

    _wait_for_every_offset(lambda: _cli_delivered([worker], topic), placed,
                           alive=lambda: _running([worker]), what=f"{topic} (40)")
    by_value = {r["value"]: r for r in worker.records()}
    for i, value in enumerate(values):
        record = by_value[value.decode()]
        if i % 2 == 0:
            assert record.get("headers") == [["trace", f"t-{i}"], ["n", str(i)],
                                              ["trace", "é"]], record
        else:
            assert record.get("headers") in (None, []), record


# `zkconsumer consume` as an install without a C compiler runs it: neither compiled part loads.
WITHOUT_COMPILED_PARTS = (
    "-c", ("import sys; sys.modules['zkconsumer.records._columns'] = None; "
           "sys.modules['zkconsumer.member._cursor'] = None; from zkconsumer.cli import main; "
           "main()"),
    "--log-format", "json", "consume", "--format", "jsonl")


def test_a_worker_without_the_compiled_parts_reads_compressed_batches_with_headers(
        modern, modern_topic_factory, unique_name, tmp_path):
    """The pure-Python fallbacks (aiokafka's reader, the Python stream cursor) end to end."""
    from zkconsumer.testing.consume_process import ConsumeProcess

    topic = modern_topic_factory(partitions=2)
    values = _values(60, "p")
    headers = [[("n", str(i).encode())] for i in range(len(values))]
    placed = produce(modern.bootstrap_servers, topic, values, partitions=2, headers=headers,
                     compression="gzip")
    worker = ConsumeProcess(modern.zookeeper_connect, unique_name("pure"), topic, tmp_path,
                            "pure", "--bootstrap-server", modern.bootstrap_servers,
                            program=WITHOUT_COMPILED_PARTS)
    try:
        got = _wait_for_every_offset(lambda: _cli_delivered([worker], topic), placed,
                                     alive=lambda: _running([worker]), what=f"{topic} (60)")
        _assert_values_match(got, placed)
        assert {r["value"]: r.get("headers") for r in worker.records()} == {
            value.decode(): [["n", str(i)]] for i, value in enumerate(values)}
    finally:
        worker.stop()


def test_a_topic_created_while_whitelist_members_run_gets_owners_and_is_consumed(
        zk, modern, modern_topic_factory, unique_name, modern_members):
    """The metadata refresh, through a topic that appears: found in Kafka metadata, not in
    ZooKeeper, assigned and consumed. (Tansu 0.6 cannot add partitions to a topic; partitions
    added under members that read Kafka metadata are proven on the 0.9.0.1 broker, in
    test_metadata_topics.py.)"""
    prefix = unique_name("wl")
    first = modern_topic_factory(partitions=2, name=f"{prefix}-a")
    group = unique_name("appear")
    members = [modern_members(group, whitelist=f"{prefix}-.*") for _ in range(2)]
    _settled(zk, group, _partitions(first, 2), 2, alive=lambda: _failed(members))
    assert not zk.exists(f"/brokers/topics/{first}"), "the topic must exist only in Kafka"

    second = f"{prefix}-b"
    create_topic(modern.bootstrap_servers, second, 3)
    registered, owners = _settled(zk, group, _partitions(first, 2) | _partitions(second, 3), 2,
                                  alive=lambda: _failed(members))
    assert owners == _range_over_metadata(modern.bootstrap_servers, registered)

    for topic, count in ((first, 2), (second, 3)):
        placed = produce(modern.bootstrap_servers, topic, _values(90, topic), partitions=count)
        got = _wait_for_every_offset(lambda t=topic: _api_delivered(members, t), placed,
                                     alive=lambda: _failed(members), what=f"{topic} (90)")
        _assert_values_match(got, placed)


def test_a_member_joining_and_leaving_moves_ownership_and_loses_nothing(
        zk, modern, modern_topic_factory, unique_name, modern_cli_members):
    topic = modern_topic_factory(partitions=4)
    group = unique_name("churn")
    bootstrap = modern.bootstrap_servers
    first = modern_cli_members(group, topic, "churn-first")
    _settled(zk, group, _partitions(topic, 4), 1, alive=lambda: _running([first]))
    placed = produce(bootstrap, topic, _values(120, "before"), partitions=4)
    _wait_for_every_offset(lambda: _cli_delivered([first], topic), placed,
                           alive=lambda: _running([first]), what="the first batch")

    second = modern_cli_members(group, topic, "churn-second")
    both = [first, second]
    registered, shared = _settled(zk, group, _partitions(topic, 4), 2,
                                  alive=lambda: _running(both))
    assert shared == _range_over_metadata(bootstrap, registered)
    moved = {tp for tp, thread in shared.items()
             if consumer_of_thread(thread) == second.consumer_id()}
    assert moved, "the joining member took no partition"
    placed |= produce(bootstrap, topic, _values(120, "joined"), partitions=4)
    _wait_for_every_offset(lambda: _cli_delivered(both, topic), placed,
                           alive=lambda: _running(both), what="the second batch")
    assert {r["partition"] for r in second.records()} >= {tp.partition for tp in moved}

    assert second.terminate() == 0, second.log_tail()
    registered, back = _settled(zk, group, _partitions(topic, 4), 1,
                                alive=lambda: _running([first]))
    assert set(registered) == {first.consumer_id()}
    assert {consumer_of_thread(thread) for thread in back.values()} == {first.consumer_id()}
    placed |= produce(bootstrap, topic, _values(120, "left"), partitions=4)
    got = _wait_for_every_offset(lambda: _cli_delivered(both, topic), placed,
                                 alive=lambda: _running([first]), what="the third batch")
    _assert_values_match(got, placed)
    assert {p for p, o, v in _cli_delivered([first], topic) if v.startswith(b"left")} \
        >= {tp.partition for tp in moved}, "the partitions given back were not read again"


def test_group_describe_shows_metadata_partitions_and_the_log_end(
        zk, modern, modern_topic_factory, unique_name, admin):
    topic = modern_topic_factory(partitions=3)
    # One record per batch, so Tansu's ListOffsets "latest" is the log end (the product may
    # read the log end either way); the high watermark is what the rows are compared with.
    produce(modern.bootstrap_servers, topic, _values(30, "d"), partitions=3, batch_each=True)
    marks = high_watermarks(modern.bootstrap_servers, topic, [0, 1, 2])
    assert marks == {0: 10, 1: 10, 2: 10}
    assert list_offsets_latest(modern.bootstrap_servers, topic, [0, 1, 2]) == marks
    group = unique_name("describe")
    # ZooKeeper knows offsets for two partitions only; the third comes from Kafka metadata.
    ZookeeperOffsetStore(zk, group).commit({TopicPartition(topic, 0): 3,
                                            TopicPartition(topic, 1): 10})

    code, out, err = admin("group", "describe", "--group", group, "--json")
    assert code == 0, err
    assert "note:" not in err, err
    described = json.loads(out)
    rows = {r["partition"]: (r["zookeeper_offset"], r["log_end_offset"], r["lag"])
            for r in described["partitions"] if r["topic"] == topic}
    assert rows == {0: (3, marks[0], 7), 1: (10, marks[1], 0), 2: (None, marks[2], None)}
    assert described["missing_topics"] == []

    code, out, err = admin("group", "describe", "--group", group)
    assert code == 0, err
    table = {int(fields[1]): fields for fields in (line.split() for line in out.splitlines())
             if fields and fields[0] == topic}
    assert sorted(table) == [0, 1, 2]
    assert {p: fields[4] for p, fields in table.items()} == {p: str(m) for p, m in marks.items()}


def test_offsets_migrate_to_kafka_are_read_back_by_a_kafka_consumer(
        zk, modern, modern_topic_factory, unique_name, admin):
    topic = modern_topic_factory(partitions=2)
    produce(modern.bootstrap_servers, topic, _values(20, "o"), partitions=2)
    group = unique_name("migrate")
    original = {TopicPartition(topic, 0): 4, TopicPartition(topic, 1): 10}
    ZookeeperOffsetStore(zk, group).commit(original)
    assert committed(modern.bootstrap_servers, group, topic, [0, 1]) == {0: None, 1: None}

    code, out, err = admin("offsets", "migrate", "--group", group, "--to", "kafka", "--json")
    assert code == 0, err
    assert json.loads(out)["summary"]["write"] == 2

    assert committed(modern.bootstrap_servers, group, topic, [0, 1]) == {0: 4, 1: 10}


def test_spark_batch_read_through_bootstrap_servers(spark, zk, modern, modern_topic_factory,
                                                    unique_name):
    topic = modern_topic_factory(partitions=2)
    # One record per batch: the read ends at "latest", which Tansu's ListOffsets gets right
    # only then (see the module docstring).
    placed = produce(modern.bootstrap_servers, topic, _values(30, "s"), partitions=2,
                     batch_each=True)
    group = unique_name("spark")
    ZookeeperOffsetStore(zk, group).commit({TopicPartition(topic, 0): 5})
    options = {"zookeeper.connect": modern.zookeeper_connect, "group.id": group,
               "topics": topic, "auto.offset.reset": "smallest",
               "bootstrapServers": modern.bootstrap_servers}

    rows = spark.read.format("zkconsumer").options(**options).load().collect()

    got = sorted((r.partition, r.offset, bytes(r.value)) for r in rows)
    expected = sorted((p, o, v) for (p, o), v in placed.items() if p == 1 or o >= 5)
    assert got == expected

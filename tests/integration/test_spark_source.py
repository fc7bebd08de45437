"""The `zkconsumer` Spark data source with local[2] Spark on the real cluster."""

from __future__ import annotations

import hashlib
import itertools
import json
import pickle
import threading
from dataclasses import replace

import pytest
from click.testing import CliRunner
from kazoo.client import KazooClient
from support.kafka import committed_in_kafka, produce
from support.log_capture import captured_logs
from support.offsets import zookeeper_offsets
from support.waiting import wait_until

from zkconsumer.cli import cli
from zkconsumer.localcluster.processes import free_port
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import ZookeeperOffsetStore
from zkconsumer.zk.group_state import read_owners
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration


def _options(cluster, group: str, **extra: str) -> dict[str, str]:
    options = {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group,
               "auto.offset.reset": "smallest", **extra}
    return options


def _direct_read(cluster, topic: str, ranges: dict[int, tuple[int, int]]) -> list[tuple]:
    """The same offsets read with plain kafka-python, independent of the data source."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    version = {"api_version": cluster.kafka_api_version} if cluster.kafka_api_version else {}
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, **version)
    rows = []
    try:
        for partition, (start, end) in ranges.items():
            tp = KTP(topic, partition)
            consumer.assign([tp])
            consumer.seek(tp, start)
            while consumer.position(tp) < end:
                for record in consumer.poll(timeout_ms=1000).get(tp, []):
                    if record.offset < end:
                        rows.append((record.partition, record.offset, record.key, record.value))
    finally:
        consumer.close()
    return rows


def _checksum(rows) -> str:
    digest = hashlib.sha256()
    for row in sorted(rows):
        digest.update(repr(row).encode())
    return digest.hexdigest()


def test_batch_read_returns_exactly_the_messages_after_the_group_offsets(
        spark, cluster, zk, topic_factory, unique_name):
    topic = topic_factory(partitions=3)
    produce(cluster, topic, [f"v{i}".encode() for i in range(300)], partitions=3,
            keys=[f"k{i}".encode() for i in range(300)])
    group = unique_name("batch")
    ZookeeperOffsetStore(zk, group).commit({TopicPartition(topic, 0): 40,
                                            TopicPartition(topic, 1): 99})
    df = (spark.read.format("zkconsumer")
          .options(**_options(cluster, group, topics=topic, maxRecordsPerPartition="25")).load())
    assert df.rdd.getNumPartitions() >= (60 + 1 + 100) // 25
    rows = [(r.partition, r.offset, bytes(r.key), bytes(r.value)) for r in df.collect()]
    expected = _direct_read(cluster, topic, {0: (40, 100), 1: (99, 100), 2: (0, 100)})
    assert len(rows) == len(expected) == 60 + 1 + 100
    assert _checksum(rows) == _checksum(expected)
    assert zookeeper_offsets(zk, group) == {TopicPartition(topic, 0): 40,
                                      TopicPartition(topic, 1): 99}, "a plain read commits nothing"

    text = (spark.read.format("zkconsumer")
            .options(**_options(cluster, group, topics=topic, decodeUtf8="true",
                                startingOffsets=json.dumps({topic: {"2": 98}}),
                                endingOffsets=json.dumps({topic: {"0": 40, "1": 99}})))
            .load().collect())
    assert sorted(r.value for r in text) == sorted(
        bytes(v).decode() for (_p, _o, _k, v) in expected if _p == 2 and _o >= 98)


def test_a_planned_read_commits_back_and_refuses_when_the_group_moved_or_is_live(
        spark, cluster, zk, topic_factory, unique_name):
    from zkconsumer.spark import CommitRefusedError, GroupRead

    topic = topic_factory(partitions=2)
    produce(cluster, topic, [f"c{i}".encode() for i in range(50)], partitions=2)
    group = unique_name("commit")
    ZookeeperOffsetStore(zk, group).commit({TopicPartition(topic, 0): 5})

    read = GroupRead.plan(spark, _options(cluster, group, topics=topic))
    assert read.load().count() == read.record_count() == 20 + 25
    produce(cluster, topic, [b"late"], partitions=1)
    assert read.load().count() == 45, "the planned read is pinned to its offsets"
    assert read.commit() == {TopicPartition(topic, 0): 25, TopicPartition(topic, 1): 25}
    assert zookeeper_offsets(zk, group) == {TopicPartition(topic, 0): 25, TopicPartition(topic, 1): 25}
    described = CliRunner().invoke(cli, ["group", "describe", "--group", group, "--json",
                                         "--zookeeper", cluster.zookeeper_connect])
    offsets = {r["partition"]: r["zookeeper_offset"]
               for r in json.loads(described.stdout)["partitions"]}
    assert offsets == {0: 25, 1: 25}

    moved = GroupRead.plan(spark, _options(cluster, group, topics=topic))
    ZookeeperOffsetStore(zk, group).commit({TopicPartition(topic, 0): 26})
    with pytest.raises(CommitRefusedError, match="moved since this read was planned"):
        moved.commit()
    assert zookeeper_offsets(zk, group)[TopicPartition(topic, 0)] == 26

    live = GroupRead.plan(spark, _options(cluster, group, topics=topic))
    owner = KazooClient(hosts=cluster.zookeeper_connect)
    owner.start(timeout=10)
    try:
        owner.create(GroupPaths(group).owner(topic, 1), b"someone-0", ephemeral=True,
                     makepath=True)
        with pytest.raises(CommitRefusedError, match="live members"):
            live.commit()
    finally:
        owner.stop()
        owner.close()
    assert zookeeper_offsets(zk, group)[TopicPartition(topic, 1)] == 25


def test_committing_back_honours_kafka_offset_storage(spark, cluster, zk, topic_factory,
                                                      unique_name):
    from zkconsumer.spark import GroupRead

    topic = topic_factory(partitions=2)
    produce(cluster, topic, [f"k{i}".encode() for i in range(10)], partitions=2)
    group = unique_name("kafkastore")
    version = {} if not cluster.kafka_api_version else {
        "kafka.api.version": ".".join(map(str, cluster.kafka_api_version))}
    read = GroupRead.plan(spark, _options(cluster, group, topics=topic, **version, **{
        "offsets.storage": "kafka", "dual.commit.enabled": "false"}))
    assert read.load().count() == 10
    read.commit()
    assert committed_in_kafka(cluster, group, topic, 2) == {0: 5, 1: 5}
    assert zookeeper_offsets(zk, group) == {}


def _on_kafkas_coordinator(cluster, group: str, **extra: str) -> dict[str, str]:
    """A group on Kafka's group coordinator, for a member and the data source alike: brokers
    alone, no ZooKeeper anywhere."""
    settings = {"group.id": group, "group.coordination": "kafka",
                "bootstrap.servers": cluster.bootstrap_servers, "auto.offset.reset": "smallest",
                "session.timeout.ms": "6000", "heartbeat.interval.ms": "500", **extra}
    if cluster.kafka_api_version:
        settings["kafka.api.version"] = ".".join(map(str, cluster.kafka_api_version))
    return settings


def _consume_some(connector, topic: str, count: int) -> list[bytes]:
    """The first `count` messages the member is given, committed."""
    (stream,) = connector.create_message_streams({topic: 1})[topic]
    values = [message.value for message in itertools.islice(stream, count)]
    connector.commit_offsets()
    return values


def test_a_group_on_kafkas_coordinator_is_read_from_its_offsets_and_resumed_after_the_read(
        spark, cluster, topic_factory, unique_name):
    from zkconsumer import ConsumerConnector, ConsumerTimeout
    from zkconsumer.spark import GroupRead

    topic = topic_factory(partitions=2)
    group = unique_name("kafka-group")
    produced = [f"k{i:02d}".encode() for i in range(40)]
    produce(cluster, topic, produced, partitions=2)
    member = _on_kafkas_coordinator(cluster, group, **{"consumer.timeout.ms": "1500"})
    with ConsumerConnector(member) as connector:
        consumed = _consume_some(connector, topic, 15)
    # A partition the member was given nothing of yet may have no offset: it starts at 0.
    committed = {p: o or 0 for p, o in committed_in_kafka(cluster, group, topic, 2).items()}
    assert sum(committed.values()) == 15, "the member's offsets, committed as it left"

    read = GroupRead.plan(spark, {**_on_kafkas_coordinator(cluster, group), "topics": topic})
    assert dict(read.read_plan.starts) == {TopicPartition(topic, p): o
                                           for p, o in committed.items()}
    assert sorted(bytes(r.value) for r in read.load().collect()) == sorted(
        set(produced) - set(consumed)), "exactly what the member had not consumed"
    later = [f"later{i}".encode() for i in range(6)]
    produce(cluster, topic, later, partitions=2)
    assert read.commit() == {TopicPartition(topic, 0): 20, TopicPartition(topic, 1): 20}
    assert committed_in_kafka(cluster, group, topic, 2) == {0: 20, 1: 20}

    with ConsumerConnector(member) as connector:
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        resumed = []
        with pytest.raises(ConsumerTimeout):
            resumed.extend(message.value for message in stream)
    assert sorted(resumed) == sorted(later), "the next member goes on after what Spark read"


def test_commit_back_refuses_a_group_live_on_kafkas_coordinator_naming_its_member(
        spark, cluster, topic_factory, unique_name, monkeypatch):
    from zkconsumer import ConsumerConnector
    from zkconsumer.spark import CommitRefusedError, GroupRead
    from zkconsumer.spark.group_homes import KafkaCoordinatorHome
    from zkconsumer.spark.options import SourceOptions
    from zkconsumer.spark.source import GroupStreamReader

    topic = topic_factory(partitions=2)
    group = unique_name("kafka-live")
    produce(cluster, topic, [f"v{i}".encode() for i in range(10)], partitions=2)
    options = {**_on_kafkas_coordinator(cluster, group), "topics": topic}
    member = _on_kafkas_coordinator(cluster, group, **{"client.id": "live-member"})
    with ConsumerConnector(member) as connector:
        _consume_some(connector, topic, 3)
        before = committed_in_kafka(cluster, group, topic, 2)
        read = GroupRead.plan(spark, options)
        with pytest.raises(CommitRefusedError) as refused:
            read.commit()
        reader = GroupStreamReader(SourceOptions.parse(options))
        try:
            with pytest.raises(CommitRefusedError, match="is live on Kafka's group coordinator"):
                reader.latestOffset(reader.initialOffset(), reader.getDefaultReadLimit())
        finally:
            reader.stop()
        # A member that joins between the look at the group and the commit: the coordinator
        # itself refuses the whole commit.
        monkeypatch.setattr(KafkaCoordinatorHome, "live_owners", lambda _home: {})
        with pytest.raises(CommitRefusedError, match="refused the offsets of group .*: a member "
                                                     "joined it meanwhile"):
            read.commit()
        assert committed_in_kafka(cluster, group, topic, 2) == before, "nothing was written"
    message = str(refused.value)
    assert "\n" not in message
    assert f"group {group} is live on Kafka's group coordinator" in message
    assert "1 member(s): live-member-" in message and message.endswith("nothing committed")


def test_a_streaming_query_continues_the_group_and_commits_each_batch(
        spark, cluster, zk, topic_factory, unique_name, work_root):
    topic = topic_factory(partitions=2)
    group = unique_name("stream")
    produce(cluster, topic, [f"s0-{i}".encode() for i in range(30)], partitions=2)
    ZookeeperOffsetStore(zk, group).commit({TopicPartition(topic, 0): 5})
    seen: list[str] = []
    batches: list[int] = []
    lock = threading.Lock()

    def collect(frame, batch_id):
        values = [bytes(r.value).decode() for r in frame.select("value").collect()]
        with lock:
            seen.extend(values)
            batches.append(len(values))

    stream = (spark.readStream.format("zkconsumer")
              .options(**_options(cluster, group, topics=topic, maxOffsetsPerTrigger="20"))
              .load())
    query = (stream.writeStream.foreachBatch(collect).trigger(processingTime="500 milliseconds")
             .option("checkpointLocation", str(work_root / "checkpoints" / group)).start())
    try:
        wait_until(lambda: len(seen) >= 25, timeout=120, message="the backlog")
        produce(cluster, topic, [f"s1-{i}".encode() for i in range(10)], partitions=2)
        wait_until(lambda: len(seen) >= 35, timeout=120, message="the second wave")
        produce(cluster, topic, [f"s2-{i}".encode() for i in range(10)], partitions=2)
        wait_until(lambda: len(seen) >= 45, timeout=120, message="the third wave")
        wait_until(lambda: zookeeper_offsets(zk, group) == {TopicPartition(topic, 0): 25,
                                                      TopicPartition(topic, 1): 25},
                   timeout=60, message="the group's offsets at the log end")
    finally:
        query.stop()
    expected = ([f"s0-{i}" for i in range(30) if not (i % 2 == 0 and i // 2 < 5)]
                + [f"s1-{i}" for i in range(10)] + [f"s2-{i}" for i in range(10)])
    assert sorted(seen) == sorted(expected), "every message exactly once"
    assert len([n for n in batches if n]) >= 3 and max(batches) <= 20


def test_a_stream_reader_keeps_one_session_across_triggers_and_never_ships_it(
        cluster, zk, topic_factory, unique_name):
    from zkconsumer.spark.options import SourceOptions
    from zkconsumer.spark.source import GroupStreamReader

    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"a", b"b", b"c"], partitions=1)
    group = unique_name("stream-session")
    reader = GroupStreamReader(SourceOptions.parse(_options(cluster, group, topics=topic)))
    try:
        session = reader._group().home.zk.client_id
        end = reader.latestOffset(reader.initialOffset(), reader.getDefaultReadLimit())
        reader.latestOffset(end, reader.getDefaultReadLimit())  # commits the first batch's end
        assert reader._group().home.zk.client_id == session
        assert zookeeper_offsets(zk, group) == {TopicPartition(topic, 0): 3}
        from pyspark import cloudpickle  # how Spark ships a reader to executors

        shipped = pickle.loads(cloudpickle.dumps(reader))
        assert shipped._clients is None and reader._clients is not None
    finally:
        reader.stop()
    assert reader._clients is None


@pytest.mark.parametrize(("options", "named"), [
    ({"group.id": None}, "group.id"),
    ({"topics": "no-such-topic-anywhere"}, "topics"),
    ({"startingOffsets": "{\"t\": {\"0\": \"x\"}}"}, "startingOffsets"),
    ({"maxRecordsPerPartition": "0"}, "maxRecordsPerPartition"),
])
def test_bad_options_fail_before_any_job_naming_the_option(spark, cluster, unique_name, options,
                                                           named):
    settings = _options(cluster, unique_name("bad"), topics="t")
    settings.update(options)
    settings = {k: v for k, v in settings.items() if v is not None}
    jobs_before = len(spark.sparkContext.statusTracker().getJobIdsForGroup())
    with pytest.raises(Exception, match=named):
        spark.read.format("zkconsumer").options(**settings).load()
    assert len(spark.sparkContext.statusTracker().getJobIdsForGroup()) == jobs_before


def test_an_unreachable_zookeeper_fails_naming_it(spark):
    settings = {"zookeeper.connect": f"127.0.0.1:{free_port()}", "group.id": "g", "topics": "t",
                "zookeeper.connection.timeout.ms": "2000"}
    with pytest.raises(Exception, match="cannot reach ZooKeeper"):
        spark.read.format("zkconsumer").options(**settings).load()


def test_spark_json_prints_the_group_offsets_for_the_native_source(cluster, zk, topic_factory,
                                                                   unique_name):
    topic = topic_factory(partitions=3)
    group = unique_name("json")
    ZookeeperOffsetStore(zk, group).commit({TopicPartition(topic, 0): 7,
                                            TopicPartition(topic, 2): 9})
    result = CliRunner().invoke(cli, ["offsets", "spark-json", "--group", group, "--reset",
                                      "smallest", "--zookeeper", cluster.zookeeper_connect])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {topic: {"0": 7, "1": -2, "2": 9}}


def test_a_streaming_query_fails_rather_than_rewind_a_live_members_offsets(
        spark, cluster, zk, topic_factory, unique_name, members, work_root):
    topic = topic_factory(partitions=2)
    produce(cluster, topic, [f"m{i}".encode() for i in range(20)], partitions=2)
    group = unique_name("live-stream")
    members(group, topics={topic: 1}, **{"auto.commit.interval.ms": "100"})
    consumed = {TopicPartition(topic, 0): 10, TopicPartition(topic, 1): 10}
    wait_until(lambda: zookeeper_offsets(zk, group) == consumed, timeout=60,
               message="the member's commits")
    owner = read_owners(zk, group)[TopicPartition(topic, 0)]

    # From the earliest offsets, so that the query's first commit would take the group back.
    query = (spark.readStream.format("zkconsumer")
             .options(**_options(cluster, group, topics=topic, startingOffsets="earliest")).load()
             .writeStream.foreachBatch(lambda frame, batch_id: frame.count())
             .trigger(processingTime="500 milliseconds")
             .option("checkpointLocation", str(work_root / "checkpoints" / group)).start())
    try:
        wait_until(lambda: not query.isActive or zookeeper_offsets(zk, group) != consumed,
                   timeout=120, message="the query to commit or stop")
    finally:
        query.stop()
    assert zookeeper_offsets(zk, group) == consumed, "the member's offsets were rewound"
    failure = str(query.exception())
    assert "live members owning 2" in failure and owner in failure


def test_a_stream_never_commits_below_the_groups_offsets(cluster, zk, topic_factory,
                                                         unique_name):
    from zkconsumer.spark import CommitRefusedError
    from zkconsumer.spark.options import SourceOptions
    from zkconsumer.spark.source import GroupStreamReader

    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"a", b"b", b"c", b"d"], partitions=1)
    group = unique_name("ahead")
    ZookeeperOffsetStore(zk, group).commit({TopicPartition(topic, 0): 3})  # no member left
    reader = GroupStreamReader(SourceOptions.parse(
        _options(cluster, group, topics=topic, startingOffsets="earliest")))
    try:
        with pytest.raises(CommitRefusedError, match=f"{topic}-0 up to 3, past this read's 0"):
            reader.latestOffset(reader.initialOffset(), reader.getDefaultReadLimit())
    finally:
        reader.stop()
    assert zookeeper_offsets(zk, group) == {TopicPartition(topic, 0): 3}


# Size-based retention enforced every half second (the bundle checks every five minutes): a
# partition keeps its last 40 kB or so, in segments of 20 kB.
RETENTION = {"log.retention.check.interval.ms": 500, "log.segment.bytes": 20_000,
             "log.retention.bytes": 40_000}


@pytest.fixture
def retention_broker(cluster):
    """One more broker, with `RETENTION`, so that records can be deleted under a read. Kafka
    0.9 runs its first retention check 30 s after a broker starts."""
    if cluster.local is None:
        pytest.skip(f"cannot add a broker to a {cluster.kind} cluster")
    broker = cluster.local.add_broker(overrides=RETENTION)
    yield broker
    cluster.local.stop_broker(broker.broker_id)
    del cluster.local.brokers[broker.broker_id]


def _kilobyte_values(first: int, count: int) -> list[bytes]:
    return [f"{i:08d}".encode().ljust(1000, b".") for i in range(first, first + count)]


def test_records_deleted_under_a_read_fail_it_or_are_skipped_with_a_warning(
        spark, cluster, zk, topic_factory, unique_name, retention_broker, work_root):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    brokers = sorted(int(b) for b in zk.get_children("/brokers/ids"))
    topic = topic_factory(partitions=len(brokers))
    lossy = TopicPartition(topic, brokers.index(retention_broker.broker_id))  # its only replica
    produce(cluster, topic, _kilobyte_values(0, 60 * len(brokers)), partitions=len(brokers))
    group = unique_name("lossy")
    # The group's auto.offset.reset is `largest`: a reset by it would jump to the log end.
    options = {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group, "topics": topic}
    log = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers,
                        api_version=cluster.kafka_api_version)
    try:
        def log_start() -> int:
            return log.beginning_offsets([KTP(*lossy)])[KTP(*lossy)]

        next_offset = _stream_until_retention_deletes_a_batch(
            spark, cluster, zk, len(brokers), lossy, options, log_start, work_root)
        _read_deleted_records_on_an_executor(options, lossy, next_offset, log_start)
    finally:
        log.close()


def _stream_until_retention_deletes_a_batch(spark, cluster, zk, partitions, lossy, options,
                                            log_start, work_root) -> int:
    """A streaming query reads a first batch, then retention deletes the records its second
    batch is to read: the query fails, naming them, and the group stays before them."""
    read: list[list[int]] = []

    def hold_the_first_batch(frame, batch_id):
        offsets = sorted(r.offset for r in frame.where(frame.partition == lossy.partition)
                         .select("offset").collect())
        read.append(offsets)
        if batch_id == 0:
            produce(cluster, lossy.topic, _kilobyte_values(1000, 60 * partitions),
                    partitions=partitions)
            wait_until(lambda: log_start() > offsets[-1] + 1, timeout=120,
                       message="retention to delete the next batch's records")

    query = (spark.readStream.format("zkconsumer")
             .options(**options, startingOffsets="earliest",
                      maxOffsetsPerTrigger=str(10 * partitions)).load()
             .writeStream.foreachBatch(hold_the_first_batch)
             .trigger(processingTime="500 milliseconds")
             .option("checkpointLocation", str(work_root / "checkpoints" / options["group.id"]))
             .start())
    try:
        wait_until(lambda: not query.isActive or len(read) > 1, timeout=240,
                   message="the second batch to fail or be read")
    finally:
        query.stop()
    assert len(read) == 1, f"the second batch read {read[1:]} and skipped the deleted records"
    next_offset = read[0][-1] + 1
    failure = str(query.exception())
    assert "RangeReadError" in failure and f"offsets {next_offset} to " in failure
    assert f"of {lossy} (" in failure and "failOnDataLoss=false" in failure
    assert zookeeper_offsets(zk, options["group.id"])[lossy] == next_offset, \
        "the group stays before the deleted records"
    return next_offset


def _read_deleted_records_on_an_executor(options, lossy, start, log_start) -> None:
    """What an executor does with a range retention deleted the start of, with either fetch
    backend: fail by default; with failOnDataLoss=false, read on from the earliest offset (not
    the log end the group's `largest` would jump to) and warn how many records were skipped."""
    from zkconsumer.spark.options import SourceOptions
    from zkconsumer.spark.planning import plan_read
    from zkconsumer.spark.ranges import OffsetRange
    from zkconsumer.spark.reading import RangeReadError, read_range

    plan = plan_read(SourceOptions.parse(options))
    offsets = OffsetRange(lossy.topic, lossy.partition, start, plan.ends[lossy])
    for backend in ("wire", "kafka-python"):
        backend_plan = replace(plan, fetch_backend=backend)
        with pytest.raises(RangeReadError, match=f"offsets {start} to [0-9]+ of {lossy}"):
            list(read_range(backend_plan, offsets, False, fail_on_data_loss=True))
        earliest = log_start()
        with captured_logs() as logs:
            rows = [o for batch in read_range(backend_plan, offsets, False,
                                              fail_on_data_loss=False)
                    for o in batch.column("offset").to_pylist()]
        assert rows, backend
        assert rows == list(range(rows[0], offsets.end)) and start < earliest <= rows[0], backend
        skipped = [(e["partition"], e["skipped"]) for e in logs if "skipped" in e]
        assert skipped == [(str(lossy), rows[0] - start)], backend

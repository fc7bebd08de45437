"""The admin service on the real cluster, called as a script would call it (no command line):
its refusals, its plans and their write, and what it tells its reporter."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from support.kafka import committed_in_kafka, produce
from support.legacy_groups import register_member
from support.offsets import commit_in_kafka, zookeeper_offsets

from zkconsumer.admin.context import admin_context
from zkconsumer.admin.groups import LiveGroupError, delete_group, describe_group
from zkconsumer.admin.offset_reads import OffsetsDifferError, diff_offsets
from zkconsumer.admin.offset_writes import planned_migration, planned_resets, write_and_verify
from zkconsumer.admin.plans import ResetSpec
from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import ZookeeperOffsetStore
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration


class Recorder:
    """A reporter that keeps what it was told."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.runs: list[tuple[str, int, int]] = []  # label, total, steps reported

    def note(self, text: str) -> None:
        self.notes.append(text)

    @contextmanager
    def progress(self, total: int, label: str):
        done = [0]

        def step(steps: int) -> None:
            done[0] += steps

        yield step
        self.runs.append((label, total, done[0]))


@pytest.fixture
def service(cluster):
    """Opens the service on the cluster with a `Recorder`; yields (context, recorder)."""
    @contextmanager
    def opened():
        recorder = Recorder()
        version = cluster.kafka_api_version
        properties = [f"kafka.api.version={'.'.join(map(str, version))}"] if version else []
        with admin_context(cluster.zookeeper_connect, None, properties, recorder) as ctx:
            yield ctx, recorder
    return opened


def test_delete_refuses_a_live_group_and_a_dry_run_removes_nothing(zk, unique_name, service):
    group = unique_name("svc-delete")
    ZookeeperOffsetStore(zk, group).commit({TopicPartition("t", 0): 1,
                                            TopicPartition("t", 1): 2})
    with service() as (ctx, _):
        dry = delete_group(ctx, group, dry_run=True)
        assert (dry.root, dry.offsets, dry.deleted) == (GroupPaths(group).root, 2, False)
        assert zk.exists(GroupPaths(group).root)

        register_member(zk, group, "t", owned=[0])
        with pytest.raises(LiveGroupError, match="1 registered member"):
            delete_group(ctx, group, dry_run=False)
        assert zookeeper_offsets(zk, group) == {TopicPartition("t", 0): 1,
                                                TopicPartition("t", 1): 2}


def test_migration_plan_refuses_rewinds_then_writes_and_reads_back(
        cluster, zk, topic_factory, unique_name, service):
    topic = topic_factory(partitions=2)
    group = unique_name("svc-migrate")
    ZookeeperOffsetStore(zk, group).commit({TopicPartition(topic, 0): 7,
                                            TopicPartition(topic, 1): 9})
    with service() as (ctx, recorder):
        write = planned_migration(ctx, [group], "kafka", (), force=False, allow_rewind=False)
        assert (write.storage, write.source) == ("kafka", "zookeeper")
        assert write.plan.counts()["write"] == 2
        write_and_verify(ctx, write)
        assert ("writing to kafka", 1, 1) in recorder.runs
    assert committed_in_kafka(cluster, group, topic, 2) == {0: 7, 1: 9}

    ZookeeperOffsetStore(zk, group).commit({TopicPartition(topic, 0): 3})
    with service() as (ctx, _):
        behind = planned_migration(ctx, [group], "kafka", (), force=False, allow_rewind=False)
        with pytest.raises(ZkConsumerError, match="would move backwards"):
            behind.refuse_rewinds()
        with pytest.raises(ZkConsumerError, match="would move backwards"):
            write_and_verify(ctx, behind)
    assert committed_in_kafka(cluster, group, topic, 2) == {0: 7, 1: 9}

    with service() as (ctx, _):
        diff = diff_offsets(ctx, group)
        assert [(r["partition"], r["zookeeper_offset"], r["kafka_offset"])
                for r in diff.differing] == [(0, 3, 7)]
        with pytest.raises(OffsetsDifferError) as raised:
            diff.raise_if_differ()
        assert raised.value.exit_code == 3


def test_a_stopped_group_that_kept_its_offsets_in_kafka_migrates_back_to_zookeeper_whole(
        cluster, zk, topic_factory, unique_name, service):
    """Such a group leaves nothing in ZooKeeper but its owners/<topic> directories (its owner
    znodes went with the members' sessions): they name the topics whose offsets to move."""
    topic = topic_factory(partitions=2)
    group = unique_name("svc-kafka-only")
    commit_in_kafka(cluster.bootstrap_servers, group,
                    {TopicPartition(topic, 0): 4, TopicPartition(topic, 1): 6},
                    cluster.kafka_api_version)
    zk.ensure_path(GroupPaths(group).owners_topic(topic))
    with service() as (ctx, _):
        write = planned_migration(ctx, [group], "zookeeper", (), force=False, allow_rewind=False)
        assert write.plan.counts()["write"] == 2
        write_and_verify(ctx, write)
    assert zookeeper_offsets(zk, group) == {TopicPartition(topic, 0): 4,
                                            TopicPartition(topic, 1): 6}


def test_reset_is_refused_for_a_live_group_and_planned_within_the_log(
        cluster, zk, topic_factory, unique_name, service):
    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"m%d" % i for i in range(5)], partitions=1)
    group = unique_name("svc-reset")
    ZookeeperOffsetStore(zk, group).commit({TopicPartition(topic, 0): 2})
    with service() as (ctx, _):
        [write] = planned_resets(ctx, group, (topic,), ResetSpec("offset", 99), ("zookeeper",))
        assert [(r.current, r.new) for r in write.plan.rows] == [(2, 5)]
        assert zookeeper_offsets(zk, group) == {TopicPartition(topic, 0): 2}, "only planned"

        register_member(zk, group, topic, owned=[0])
        with pytest.raises(LiveGroupError, match="live group"):
            planned_resets(ctx, group, (topic,), ResetSpec("latest"), ("zookeeper",))


def test_describe_tells_the_reporter_of_a_topic_that_is_not_there(zk, unique_name, service):
    group = unique_name("svc-describe")
    gone = unique_name("gone-topic")
    ZookeeperOffsetStore(zk, group).commit({TopicPartition(gone, 0): 4})
    with service() as (ctx, recorder):
        found = describe_group(ctx, group, (), window_s=60)
    assert found.missing_topics == [gone]
    assert [(r["topic"], r["zookeeper_offset"], r["lag"]) for r in found.partitions] == [
        (gone, 4, None)]
    assert [note for note in recorder.notes if f"no topic {gone}" in note], recorder.notes

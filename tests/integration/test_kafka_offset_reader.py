"""The one reader of Kafka-stored offsets when the group's coordinator moves: kafka-python's
admin client never forgets a coordinator it found, so a reader that kept its client would ask
a stopped broker for ever. Three brokers replicating the offsets topic, the coordinator
stopped: the exporter's reader and a member's store both read the committed offsets from the
new one."""

from __future__ import annotations

import time

import pytest
from support.waiting import wait_until

from zkconsumer.fetch import KafkaAccess
from zkconsumer.localcluster import create_topic
from zkconsumer.localcluster.topics import (
    OFFSETS_TOPIC,
    group_coordinator,
    offsets_partition,
    wait_for_leader,
    wait_until_in_sync,
)
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import GroupOffsetsReader, KafkaOffsetStore, KafkaReadError
from zkconsumer.zk.session import zookeeper_session

pytestmark = pytest.mark.integration

# Followers fetch at least every replica.fetch.wait.max.ms (500 ms), with room for a busy host.
FOLLOWERS_CATCH_UP_S = 5.0


def test_the_reader_and_the_store_follow_a_coordinator_that_moved(replicated_cluster,
                                                                   unique_name):
    local = replicated_cluster.local
    servers = replicated_cluster.bootstrap_servers
    topic, group, other = unique_name("t"), unique_name("moving"), unique_name("other")
    tps = [TopicPartition(topic, p) for p in range(2)]
    with zookeeper_session(replicated_cluster.zookeeper_connect) as zk:
        create_topic(zk, topic, 2, replication_factor=3)
        wait_until_in_sync(zk)
    committed = {tps[0]: 5, tps[1]: 9}
    store = KafkaOffsetStore(group, servers, api_version=(0, 9), request_timeout_ms=3000)
    reader = GroupOffsetsReader(KafkaAccess(servers, (0, 9)), {}, 3000)

    def read_both():
        try:
            answer = reader.read({group: tps, other: tps})
        except KafkaReadError:  # a bootstrap that met the stopped broker: the next read
            return None
        return answer if answer.found == {group: committed, other: {}} else None

    try:
        store.commit(committed)
        # A 0.9 coordinator taking over loads the offsets below its high watermark only, and
        # a follower learns the leader's at its next fetch: offsets committed a moment before
        # the move read back as none, from any client (kafka-python's consumer too).
        time.sleep(FOLLOWERS_CATCH_UP_S)
        # Read once, so that the reader's client and the store's know the coordinator.
        assert read_both() and store.fetch(tps) == committed
        with zookeeper_session(replicated_cluster.zookeeper_connect) as zk:
            coordinator = group_coordinator(zk, group)
            local.stop_broker(coordinator)
            try:
                wait_for_leader(zk, OFFSETS_TOPIC, offsets_partition(zk, group),
                                other_than=coordinator)
                answer = wait_until(read_both, timeout=60,
                                    message="offsets from the new coordinator")
                assert answer.failed == {}
                assert store.fetch(tps) == committed
            finally:
                local.start_broker(coordinator)
                wait_until_in_sync(zk)
    finally:
        reader.close()
        store.close()

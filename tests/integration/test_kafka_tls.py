"""Kafka TLS settings reach both Kafka clients: fetching and Kafka-stored offsets, against a
real broker with an SSL listener (its own small cluster, so nothing else is disturbed)."""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from support.java import require_java
from support.waiting import wait_until

from zkconsumer.fetch import resolve_kafka_access
from zkconsumer.localcluster import (
    LocalCluster,
    create_topic,
    make_self_signed_keystore,
)
from zkconsumer.zk.registry import read_brokers
from zkconsumer.zk.session import zookeeper_session

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tls_cluster(work_root):
    require_java()
    keystore = make_self_signed_keystore(work_root / "tls" / "certs")
    cluster = LocalCluster.start(work_root / "tls" / "cluster", brokers=0)
    try:
        cluster.add_broker(ssl_keystore=keystore)
        yield cluster, keystore
    finally:
        cluster.stop(remove_data=True)


def test_a_member_fetches_and_commits_over_tls(tls_cluster, members_on):
    cluster, keystore = tls_cluster
    with zookeeper_session(cluster.zookeeper_connect) as zk:
        create_topic(zk, "secure", 2)
        access = resolve_kafka_access(lambda: read_brokers(zk).values(), "SSL")
    assert access.bootstrap_servers == f"127.0.0.1:{cluster.brokers[0].ssl_port}"
    assert access.api_version == (0, 9)

    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, api_version=(0, 9))
    for i in range(20):
        producer.send("secure", f"tls-{i}".encode(), partition=i % 2)
    producer.flush()
    producer.close()

    member = members_on(cluster, "tls-group", topics={"secure": 1}, **{
        "kafka.security.protocol": "SSL", "kafka.ssl.cafile": str(keystore.certificate),
        "offsets.storage": "kafka", "dual.commit.enabled": "false"})
    wait_until(lambda: len(member.values()) >= 20, timeout=90, message="20 messages over TLS")
    member.connector.commit_offsets()
    assert sorted(member.values()) == sorted(f"tls-{i}".encode() for i in range(20))

    plain = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="tls-group",
                          enable_auto_commit=False, api_version=(0, 9))
    try:
        assert [plain.committed(KafkaTopicPartition("secure", p)) for p in (0, 1)] == [10, 10]
    finally:
        plain.close()

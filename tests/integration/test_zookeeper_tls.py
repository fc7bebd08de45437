"""ZooKeeper over TLS against Debian's ZooKeeper 3.8 serving clients only on a TLS port that
requires a client certificate (the 0.9.0.1 broker on its plaintext port): a member, the admin
commands, the exporter and Spark reach it; the znodes carry the certificate's x509 identity; each
way TLS can fail is one error line within seconds; the store password is never shown.

One cluster for the module (its ZooKeeper, broker and certificates take half a minute)."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from kazoo.security import make_acl
from support.clusters import ClusterUnderTest
from support.exporter import ExporterProcess, lag_of
from support.kafka import committed_in_kafka, produce
from support.legacy_groups import write_offsets
from support.log_capture import captured_logs
from support.members import CollectingMember
from support.offsets import zookeeper_offsets
from support.waiting import wait_until
from support.zk_tls import CLIENT_IDENTITY, STORE_PASSWORD, tls_cluster

from zkconsumer import ConsumerConnector
from zkconsumer.cli import cli
from zkconsumer.config import ConsumerConfig
from zkconsumer.localcluster import create_topic
from zkconsumer.member.kafka_group import KafkaGroup
from zkconsumer.model import TopicPartition
from zkconsumer.zk import multi_read
from zkconsumer.zk.session import connect, session_for
from zkconsumer.zk.znode_reader import KazooReader
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration

VERSION = ("--property", "kafka.api.version=0.9")
# An error found by our own handshake comes at once; a plaintext client at the TLS port is
# found once its session gives up (zookeeper.connection.timeout.ms, 10 s for the commands).
PROMPT_S = 5.0


@pytest.fixture(scope="module")
def tls(work_root):
    with tls_cluster(work_root / "zookeeper-tls") as running:
        yield running


@pytest.fixture(scope="module")
def plain(tls) -> ClusterUnderTest:
    """The broker's side: its plaintext port, where the tests create topics and produce."""
    return ClusterUnderTest(tls.plain_connect, tls.local.bootstrap_servers, (0, 9), "local")


@pytest.fixture(scope="module")
def plain_zk(plain):
    client = connect(plain.zookeeper_connect)
    yield client
    client.stop()
    client.close()


@pytest.fixture(scope="module")
def tls_zk(tls):
    config = ConsumerConfig.from_mapping({"group.id": "tls-tests",
                                          "zookeeper.connect": tls.tls_connect,
                                          **tls.properties()})
    with session_for(config.zookeeper) as client:
        yield client


@pytest.fixture(scope="module")
def tls_file(tls, tmp_path_factory):
    """The file a Kafka operator keeps for `kafka-configs --zk-tls-config-file`."""
    path = tmp_path_factory.mktemp("zk-tls") / "zk-tls-client.properties"
    path.write_text("zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n"
                    + "".join(f"{key}={value}\n" for key, value in tls.properties().items()))
    return path


def _group_with_offsets(plain, plain_zk, unique_name, offsets: dict[int, int],
                        messages: int = 30) -> tuple[str, str]:
    topic = unique_name("topic")
    create_topic(plain_zk, topic, len(offsets))
    produce(plain, topic, [b"m-%02d" % i for i in range(messages)], partitions=len(offsets))
    group = unique_name("tls")
    write_offsets(plain_zk, group, topic, offsets)
    return group, topic


def _cli(*args: str):
    started = time.monotonic()
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result, time.monotonic() - started


def test_a_member_consumes_and_commits_over_tls_and_its_znodes_carry_its_certificate(
        tls, plain, plain_zk, tls_zk, unique_name):
    topic = unique_name("topic")
    create_topic(plain_zk, topic, 2)
    produce(plain, topic, [f"v{i}".encode() for i in range(20)], partitions=2)
    group = unique_name("member")
    member_view = SimpleNamespace(zookeeper_connect=tls.tls_connect, kafka_api_version=(0, 9))
    with captured_logs() as logged:
        member = CollectingMember(member_view, group, topics={topic: 1},
                                  **tls.properties(**{"zookeeper.set.acl": "true"}))
        try:
            wait_until(lambda: len(member.values()) >= 20, timeout=60, message="20 messages")
            member.connector.commit_offsets()
        finally:
            member.stop()
    assert zookeeper_offsets(tls_zk, group) == {TopicPartition(topic, 0): 10,
                                                TopicPartition(topic, 1): 10}
    acl, _stat = tls_zk.get_acls(GroupPaths(group).offset(topic, 0))
    assert make_acl("x509", CLIENT_IDENTITY, all=True) in acl
    assert STORE_PASSWORD not in repr(logged)

    # A client without the certificate (the plaintext port) is denied, nothing written.
    denied, _ = _cli("offsets", "reset", "--group", group, "--topic", topic, "--to-earliest",
                     "--execute", "--zookeeper", plain.zookeeper_connect, *VERSION)
    assert denied.exit_code == 1 and "ZooKeeper denied" in denied.stderr, denied.stderr
    assert zookeeper_offsets(tls_zk, group)[TopicPartition(topic, 0)] == 10


def test_a_kafka_coordinated_member_watches_the_fence_over_tls(tls, plain, plain_zk, tls_zk,
                                                               unique_name):
    topic = unique_name("topic")
    create_topic(plain_zk, topic, 1)
    group = unique_name("kafka-member")
    connector = ConsumerConnector({
        "group.id": group, "group.coordination": "kafka", "zookeeper.connect": tls.tls_connect,
        "bootstrap.servers": plain.bootstrap_servers, "kafka.api.version": "0.9",
        "session.timeout.ms": "6000", "heartbeat.interval.ms": "500",
        **tls.properties(**{"zookeeper.set.acl": "true"})})
    try:
        assert isinstance(connector._coordination, KafkaGroup)
        connector.create_message_streams({topic: 1})
        aware = GroupPaths(group).fence_aware
        wait_until(lambda: tls_zk.exists(aware) and tls_zk.get_children(aware), timeout=60,
                   message="the member's promise to honour the fence")
        acl, _stat = tls_zk.get_acls(aware)
        assert make_acl("x509", CLIENT_IDENTITY, all=True) in acl
    finally:
        connector.shutdown()


def test_describe_export_and_cutover_both_ways_over_tls(
        tls, plain, plain_zk, tls_zk, tls_file, unique_name, monkeypatch):
    group, topic = _group_with_offsets(plain, plain_zk, unique_name, {0: 3, 1: 7})

    described, _ = _cli("group", "describe", "--group", group, "--zookeeper", tls.tls_connect,
                        "--zk-tls-config-file", str(tls_file), "--json", *VERSION)
    assert described.exit_code == 0, described.stderr
    assert {r["partition"]: (r["zookeeper_offset"], r["lag"])
            for r in json.loads(described.stdout)["partitions"]} == {0: (3, 12), 1: (7, 8)}

    inspected, _ = _cli("inspect", "--zookeeper", tls.tls_connect, "--zk-tls-config-file",
                        str(tls_file), "--json")
    assert inspected.exit_code == 0, inspected.stderr
    assert [b["address"] for b in json.loads(inspected.stdout)["brokers"]] == [
        plain.bootstrap_servers]

    exported, _ = _cli("offsets", "export", "--group", group, "--zookeeper", tls.tls_connect,
                       *(arg for item in tls.property_args() for arg in ("--property", item)),
                       *VERSION)
    assert exported.exit_code == 0, exported.stderr
    assert f"/consumers/{group}/offsets/{topic}/1:7" in exported.stdout

    for key, value in tls.properties().items():  # the cutover takes them from the environment
        monkeypatch.setenv("ZKCONSUMER_" + key.upper().replace(".", "_"), value)
    to_kafka, _ = _cli("group", "cutover", "--group", group, "--to", "kafka", "--execute",
                       "--zookeeper", tls.tls_connect, *VERSION)
    assert to_kafka.exit_code == 0, to_kafka.stderr
    assert committed_in_kafka(plain, group, topic, 2) == {0: 3, 1: 7}
    back, _ = _cli("group", "cutover", "--group", group, "--to", "zookeeper", "--execute",
                   "--zookeeper", tls.tls_connect, *VERSION)
    assert back.exit_code == 0, back.stderr
    assert zookeeper_offsets(tls_zk, group) == {TopicPartition(topic, 0): 3,
                                                TopicPartition(topic, 1): 7}
    shown = described.output + exported.output + to_kafka.output + back.output
    assert STORE_PASSWORD not in shown


def test_the_exporter_reports_a_groups_lag_over_tls(tls, plain, plain_zk, tls_file,
                                                    unique_name, tmp_path):
    group, topic = _group_with_offsets(plain, plain_zk, unique_name, {0: 12})
    exporter = ExporterProcess(tmp_path, "--zookeeper", tls.tls_connect, "--zk-tls-config-file",
                               str(tls_file), "--interval", "1s", "--no-kafka-groups",
                               "--no-kafka-offsets", *VERSION)
    try:
        wait_until(lambda: lag_of(exporter.scrape(), group, topic, 0) == 18, timeout=60,
                   message="the group's lag of 18")
        assert exporter.stop() == 0
    finally:
        exporter.kill()
    assert STORE_PASSWORD not in exporter.log.read_text()


@pytest.mark.slow  # a Spark job: minutes on a busy machine, where the session is not yet up
def test_spark_reads_the_group_over_tls(spark, tls, plain, plain_zk, unique_name):
    group, topic = _group_with_offsets(plain, plain_zk, unique_name, {0: 25}, messages=40)
    rows = (spark.read.format("zkconsumer")
            .options(**{"zookeeper.connect": tls.tls_connect, "group.id": group,
                        "topics": topic, "kafka.api.version": "0.9", **tls.properties()})
            .load().collect())
    assert sorted(row.offset for row in rows) == list(range(25, 40))


@pytest.mark.parametrize("case", ["untrusted server", "host name", "client certificate refused",
                                  "no client certificate", "wrong store password",
                                  "TLS to the plaintext port"])
def test_each_tls_failure_is_one_line_naming_server_failure_and_key(tls, case):
    port = tls.tls_connect.rpartition(":")[2]
    connect_to = tls.tls_connect
    expected = {"untrusted server": ("not trusted", "zookeeper.ssl.truststore.location"),
                "host name": ("host name does not match",
                              "zookeeper.ssl.endpoint.identification.algorithm"),
                "client certificate refused": ("refused the client certificate",
                                               "zookeeper.ssl.keystore.location"),
                "no client certificate": ("refused the client certificate",
                                          "zookeeper.ssl.keystore.location"),
                "wrong store password": ("wrong password", "zookeeper.ssl.keystore.password"),
                "TLS to the plaintext port": ("does not speak TLS", "zookeeper.connect")}[case]
    properties = tls.properties()
    if case == "untrusted server":
        properties.update({"zookeeper.ssl.truststore.location": str(tls.files.stranger_ca),
                           "zookeeper.ssl.truststore.type": "PEM"})
    elif case == "host name":
        connect_to = f"localhost:{port}"
    elif case == "client certificate refused":
        properties["zookeeper.ssl.keystore.location"] = str(tls.files.stranger_p12)
    elif case == "no client certificate":
        for key in ("location", "password", "type"):
            del properties[f"zookeeper.ssl.keystore.{key}"]
    elif case == "wrong store password":
        properties["zookeeper.ssl.keystore.password"] = "not-" + STORE_PASSWORD
    else:
        connect_to = tls.plain_connect
    result, took = _cli("group", "list", "--zookeeper", connect_to, *VERSION,
                        *(arg for key, value in properties.items()
                          for arg in ("--property", f"{key}={value}")))
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1, result.stderr
    what, key = expected
    assert lines[0].startswith("error:") and what in lines[0] and key in lines[0] \
        and connect_to in lines[0], lines[0]
    assert took < PROMPT_S, f"{took:.1f}s"
    assert STORE_PASSWORD not in result.output


def test_a_plaintext_member_at_the_tls_port_is_told_to_turn_tls_on(tls, unique_name):
    """Found when its session gives up (here after 3 s), not after retries: one line."""
    result, took = _cli("consume", "--zookeeper", tls.tls_connect, "--group",
                        unique_name("plain"), "--topic", "t", "--property",
                        "zookeeper.connection.timeout.ms=3000")
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1, result.stderr
    assert lines[-1].startswith(f"error: ZooKeeper at {tls.tls_connect} speaks TLS") \
        and "zookeeper.ssl.client.enable=true" in lines[-1], result.stderr
    assert took < 3 + PROMPT_S, f"{took:.1f}s"


def test_a_session_over_tls_asks_the_server_its_version_over_tls_and_reads_levels_together(
        tls_zk, unique_name):
    root = f"/{unique_name('levels')}"
    tls_zk.ensure_path(root)
    for index in range(5):
        tls_zk.create(f"{root}/n{index}", str(index).encode())
    assert multi_read.served(tls_zk)  # the srvr question went over TLS, as the session does
    nodes = KazooReader(tls_zk).data([f"{root}/n{index}" for index in range(5)])
    assert [node.data for node in nodes.values()] == [b"0", b"1", b"2", b"3", b"4"]

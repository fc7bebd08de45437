"""Kafka SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, and GSSAPI in a `long` case
against a Kerberos realm of its own; plaintext and TLS) on the wire client,
through a front that checks credentials for real before relaying to the modern broker (Tansu),
whose own `--authentication` cannot (see support/sasl_front.py). The group lives in the session
cluster's ZooKeeper, as with any ZooKeeper-less broker."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from kafka import KafkaConsumer
from support import kdc
from support.exporter import ExporterProcess
from support.kafka import produce as produce_on_cluster
from support.sasl_front import (
    KAFKA_0_9_VERSIONS,
    Login,
    SaslFront,
    StaticTokenProvider,
    make_certificate,
    server_tls,
    unsecured_token,
)
from support.tansu import create_topic, produce
from support.waiting import wait_until

from zkconsumer.cli import cli
from zkconsumer.fetch import LogOffsets, LogOffsetsError
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import KafkaOffsetStore, OffsetStoreError

pytestmark = pytest.mark.integration

USER, PASSWORD = "alice", "s3cret-Pa55word"
WRONG_PASSWORD = "not-the-Pa55word"
TOKEN, WRONG_TOKEN = unsecured_token(USER), unsecured_token("mallory")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# A refused login must end a command well within this, where kafka-python took 30 s.
FAIL_FAST_S = 5.0


@pytest.fixture(scope="module")
def front(modern_broker):
    front = SaslFront(modern_broker.bootstrap_servers, {USER: PASSWORD},
                      oauth_tokens={TOKEN: USER})
    yield front
    front.stop()


@pytest.fixture(scope="module")
def certificate(work_root):
    return make_certificate(work_root / "sasl-front-tls")


@pytest.fixture(scope="module")
def tls_front(modern_broker, certificate):
    front = SaslFront(modern_broker.bootstrap_servers, {USER: PASSWORD},
                      tls=server_tls(*certificate))
    yield front
    front.stop()


@pytest.fixture
def sasl_topic(modern_broker, unique_name):
    """A topic of 2 partitions with 30 records; (name, values)."""
    topic = unique_name("sasl")
    create_topic(modern_broker.bootstrap_servers, topic, 2)
    values = [f"{topic}-{i}".encode() for i in range(30)]
    produce(modern_broker.bootstrap_servers, topic, values, 2)
    return topic, values


def sasl_properties(mechanism: str, password: str = PASSWORD, *, protocol: str = "SASL_PLAINTEXT"
                    ) -> dict[str, str]:
    return {"kafka.security.protocol": protocol, "kafka.sasl.mechanism": mechanism,
            "kafka.sasl.plain.username": USER, "kafka.sasl.plain.password": password}


def as_options(properties: dict[str, str]) -> list[str]:
    return [arg for key, value in properties.items() for arg in ("--property", f"{key}={value}")]


class _Front:
    """The group's ZooKeeper with the front as the only broker address, for members_on."""

    def __init__(self, zookeeper_connect: str, front: SaslFront) -> None:
        self.zookeeper_connect = zookeeper_connect
        self.bootstrap_servers = front.bootstrap_servers
        self.kafka_api_version = None


def _consume_through(front, cluster, members_on, unique_name, topic, values, properties):
    member = members_on(_Front(cluster.zookeeper_connect, front), unique_name("g"),
                        topics={topic: 1}, **{"bootstrap.servers": front.bootstrap_servers,
                                              **properties})
    wait_until(lambda: member.failure or len(member.values()) >= len(values), timeout=60,
               message=f"{len(values)} messages through the SASL front")
    assert member.failure is None, member.failure
    assert sorted(member.values()) == sorted(values)
    # Fetched by the wire client (kafka-python's fetches are out of the metrics' sight).
    fetches = member.connector.metrics()["fetch_requests"]
    assert fetches.get(front.bootstrap_servers, 0) > 0, fetches


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_member_consumes_through_a_sasl_listener_with_the_wire_client(
        front, cluster, members_on, unique_name, sasl_topic, mechanism):
    topic, values = sasl_topic
    before = len(front.logins)
    _consume_through(front, cluster, members_on, unique_name, topic, values,
                     sasl_properties(mechanism))
    logins = front.logins[before:]
    assert logins and set(logins) == {Login(USER, mechanism, True)}


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_member_consumes_through_a_sasl_ssl_listener(
        tls_front, certificate, cluster, members_on, unique_name, sasl_topic, mechanism):
    topic, values = sasl_topic
    properties = {**sasl_properties(mechanism, protocol="SASL_SSL"),
                  "kafka.ssl.cafile": str(certificate[0])}
    before = len(tls_front.logins)
    _consume_through(tls_front, cluster, members_on, unique_name, topic, values, properties)
    assert set(tls_front.logins[before:]) == {Login(USER, mechanism, True)}


def test_brokers_before_1_0_are_logged_in_with_bare_tokens(
        modern_broker, cluster, members_on, unique_name, sasl_topic):
    legacy = SaslFront(modern_broker.bootstrap_servers, {USER: PASSWORD}, bare_tokens=True)
    try:
        topic, values = sasl_topic
        _consume_through(legacy, cluster, members_on, unique_name, topic, values,
                         sasl_properties("SCRAM-SHA-256"))
        assert Login(USER, "SCRAM-SHA-256", True) in legacy.logins
        with pytest.raises(LogOffsetsError, match=r"closed the connection.*SaslHandshake v0"):
            _log_ends(legacy, topic, sasl_properties("PLAIN", WRONG_PASSWORD))
    finally:
        legacy.stop()


def test_a_0_9_broker_behind_a_front_of_its_era_is_consumed_with_bare_tokens(
        cluster, topic_factory, members_on, unique_name):
    """The front speaks for the 0.9.0.1 broker as a 0.10.0 SASL listener would (ApiVersions
    with its versions, SaslHandshake v0, bare tokens); no kafka.api.version is set."""
    if cluster.kafka_api_version != (0, 9):
        pytest.skip("needs the 0.9.0.1 session broker")
    legacy = SaslFront(cluster.bootstrap_servers, {USER: PASSWORD}, bare_tokens=True,
                       broker_versions=KAFKA_0_9_VERSIONS)
    try:
        topic = topic_factory(partitions=2)
        values = [f"old-{i}".encode() for i in range(20)]
        produce_on_cluster(cluster, topic, values, partitions=2)
        _consume_through(legacy, cluster, members_on, unique_name, topic, values,
                         sasl_properties("SCRAM-SHA-512"))
        assert Login(USER, "SCRAM-SHA-512", True) in legacy.logins
    finally:
        legacy.stop()


def _log_ends(front, topic, properties):
    offsets = LogOffsets(front.bootstrap_servers, None,
                         {key.removeprefix("kafka.").replace(".", "_"): value
                          for key, value in properties.items()})
    try:
        return offsets.latest([TopicPartition(topic, 0)])
    finally:
        offsets.close()


def test_kafka_python_logs_in_through_the_front_too(front, sasl_topic):
    """The front speaks SASL as Kafka does: another client's SCRAM gets through it."""
    topic, values = sasl_topic
    consumer = KafkaConsumer(topic, bootstrap_servers=front.bootstrap_servers,
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                             sasl_plain_username=USER, sasl_plain_password=PASSWORD,
                             auto_offset_reset="earliest", consumer_timeout_ms=10000)
    try:
        got = []
        for message in consumer:
            got.append(message.value)
            if len(got) == len(values):
                break
    finally:
        consumer.close()
    assert sorted(got) == sorted(values)


def _run(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "zkconsumer", *args], capture_output=True,
                            text=True, timeout=120, stdin=subprocess.DEVNULL)
    return result, time.monotonic() - started


@pytest.mark.parametrize(("log_level", "offsets_storage"), [
    ("info", "zookeeper"), ("debug", "zookeeper"), ("info", "kafka")])
def test_a_wrong_password_fails_consume_at_once_with_one_line(
        front, cluster, unique_name, sasl_topic, log_level, offsets_storage):
    topic, _ = sasl_topic
    result, took = _run("--log-level", log_level, "consume", "--zookeeper",
                        cluster.zookeeper_connect, "--bootstrap-server", front.bootstrap_servers,
                        "--group", unique_name("g"), "--topic", topic, "--from-beginning",
                        "--property", f"offsets.storage={offsets_storage}",
                        *as_options(sasl_properties("SCRAM-SHA-256", WRONG_PASSWORD)))
    assert result.returncode == 1, result.stderr
    assert took < FAIL_FAST_S + 3, f"took {took:.1f} s"  # + the interpreter's start
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert front.bootstrap_servers in errors[0]
    assert "SCRAM-SHA-256" in errors[0] and "SASL_AUTHENTICATION_FAILED" in errors[0]
    assert "Traceback" not in result.stderr
    assert WRONG_PASSWORD not in result.stdout + result.stderr
    if log_level == "info":  # no retry chatter: the login is not retried
        assert not [line for line in result.stderr.splitlines()
                    if "[warning" in line or "[error" in line], result.stderr
        assert "bootstrap" not in result.stderr.lower()


@pytest.mark.parametrize("command", [("group", "describe"), ("offsets", "migrate", "--to", "kafka")])
def test_a_wrong_password_fails_admin_commands_at_once(front, cluster, zk, unique_name,
                                                       sasl_topic, command):
    topic, _ = sasl_topic
    group = unique_name("g")
    zk.create(f"/consumers/{group}/offsets/{topic}/0", b"5", makepath=True)
    started = time.monotonic()
    result = CliRunner().invoke(cli, [
        *command, "--zookeeper", cluster.zookeeper_connect, "--bootstrap-server",
        front.bootstrap_servers, "--group", group, "--topic", topic,
        *as_options(sasl_properties("PLAIN", WRONG_PASSWORD))])
    took = time.monotonic() - started
    assert result.exit_code == 1, result.output
    assert took < FAIL_FAST_S, f"took {took:.1f} s"
    assert "PLAIN" in result.stderr and "SASL_AUTHENTICATION_FAILED" in result.stderr
    assert WRONG_PASSWORD not in result.stdout + result.stderr


def test_a_mechanism_the_broker_does_not_enable_is_named(modern_broker, sasl_topic):
    plain_only = SaslFront(modern_broker.bootstrap_servers, {USER: PASSWORD},
                           mechanisms=("PLAIN",))
    try:
        started = time.monotonic()
        with pytest.raises(LogOffsetsError) as failure:
            _log_ends(plain_only, sasl_topic[0], sasl_properties("SCRAM-SHA-512"))
        assert time.monotonic() - started < FAIL_FAST_S
        assert "SCRAM-SHA-512" in str(failure.value)
        assert "does not enable this mechanism (it enables PLAIN)" in str(failure.value)
    finally:
        plain_only.stop()


def test_the_right_password_reads_log_ends_through_the_front(front, sasl_topic, modern_broker):
    topic, _ = sasl_topic
    ends = _log_ends(front, topic, sasl_properties("SCRAM-SHA-512"))
    assert set(ends) == {TopicPartition(topic, 0)}


def test_a_working_members_debug_log_never_shows_the_password(front, cluster, unique_name,
                                                             sasl_topic):
    topic, values = sasl_topic
    result, _ = _run("--log-level", "debug", "consume", "--zookeeper", cluster.zookeeper_connect,
                     "--bootstrap-server", front.bootstrap_servers, "--group", unique_name("g"),
                     "--topic", topic, "--from-beginning", "--max-messages", str(len(values)),
                     *as_options(sasl_properties("SCRAM-SHA-256")))
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(result.stdout.splitlines()) == len(values)
    logins = [line for line in result.stderr.splitlines() if "logged in" in line]
    assert logins and all("SCRAM-SHA-256" in line for line in logins), result.stderr[-2000:]
    assert PASSWORD not in result.stdout + result.stderr


def test_spark_reads_through_a_sasl_listener_and_names_a_refused_login(
        spark, front, cluster, modern_broker, unique_name):
    topic = unique_name("sasl-spark")
    create_topic(modern_broker.bootstrap_servers, topic, 2)
    # One record per batch: the read ends at "latest", which Tansu answers right only then.
    placed = produce(modern_broker.bootstrap_servers, topic,
                     [f"spark-{i}".encode() for i in range(12)], 2, batch_each=True)
    options = {"zookeeper.connect": cluster.zookeeper_connect, "group.id": unique_name("g"),
               "topics": topic, "auto.offset.reset": "smallest",
               "bootstrapServers": front.bootstrap_servers}
    before = len(front.logins)

    rows = spark.read.format("zkconsumer").options(
        **options, **sasl_properties("SCRAM-SHA-512")).load().collect()

    assert sorted(bytes(row.value) for row in rows) == sorted(placed.values())
    assert set(front.logins[before:]) == {Login(USER, "SCRAM-SHA-512", True)}
    started = time.monotonic()
    with pytest.raises(Exception, match=r"SASL login to broker .* failed \(mechanism "
                                        r"SCRAM-SHA-512, user alice\).*SASL_AUTHENTICATION_FAILED"
                       ) as failure:
        spark.read.format("zkconsumer").options(
            **options, **sasl_properties("SCRAM-SHA-512", WRONG_PASSWORD)).load()
    assert time.monotonic() - started < FAIL_FAST_S
    assert WRONG_PASSWORD not in str(failure.value)


def test_admin_commands_migrate_and_describe_through_a_sasl_listener(
        front, cluster, zk, modern_broker, unique_name, sasl_topic):
    """Kafka-stored offsets go through kafka-python's group coordinator client, logged in by
    kafka-python itself after zkconsumer's first contact checked the credentials."""
    topic, _ = sasl_topic
    group = unique_name("g")
    zk.create(f"/consumers/{group}/offsets/{topic}/0", b"5", makepath=True)
    login = as_options(sasl_properties("SCRAM-SHA-256"))
    where = ["--zookeeper", cluster.zookeeper_connect, "--bootstrap-server",
             front.bootstrap_servers, "--group", group, "--json"]

    migrated = CliRunner().invoke(cli, ["offsets", "migrate", "--to", "kafka", *where, *login])
    assert migrated.exit_code == 0, migrated.stderr
    assert json.loads(migrated.stdout)["summary"]["write"] == 1
    described = CliRunner().invoke(cli, ["group", "describe", "--topic", topic, *where, *login])
    assert described.exit_code == 0, described.stderr
    rows = {row["partition"]: (row["zookeeper_offset"], row["kafka_offset"])
            for row in json.loads(described.stdout)["partitions"]}
    assert rows[0] == (5, 5)
    assert PASSWORD not in migrated.output + described.output


def test_a_wrong_password_ends_the_exporter_at_start_with_one_line(front, cluster, tmp_path):
    exporter = ExporterProcess(tmp_path, "--zookeeper", cluster.zookeeper_connect,
                               "--bootstrap-server", front.bootstrap_servers,
                               *as_options(sasl_properties("SCRAM-SHA-512", WRONG_PASSWORD)))
    try:
        assert exporter.process.wait(timeout=FAIL_FAST_S + 5) == 1
    finally:
        exporter.kill()
    output = exporter.log.read_text()
    errors = [line for line in output.splitlines()
              if line.startswith("error:") or '"level": "error"' in line]
    assert len(errors) == 1 and errors[0].startswith("error:"), output
    assert "SCRAM-SHA-512" in errors[0] and "SASL_AUTHENTICATION_FAILED" in errors[0]
    assert WRONG_PASSWORD not in output


def test_the_kafka_offset_store_logs_in_with_oauthbearer_and_a_wrong_token_fails_in_one_line(
        front, sasl_topic, unique_name):
    """The cluster client through the Python API, the token provider given as an object."""
    topic, _ = sasl_topic
    group, partition = unique_name("g"), TopicPartition(topic, 1)

    def store(token: str) -> KafkaOffsetStore:
        return KafkaOffsetStore(group, front.bootstrap_servers, retries=0, client_properties={
            "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER",
            "sasl_oauth_token_provider": StaticTokenProvider(token, {"traceId": "t1"})})

    before = len(front.logins)
    right = store(TOKEN)
    try:
        right.commit({partition: 7})
        assert right.fetch([partition]) == {partition: 7}
    finally:
        right.close()
    assert set(front.logins[before:]) == {Login(USER, "OAUTHBEARER", True)}

    wrong = store(WRONG_TOKEN)
    started = time.monotonic()
    try:
        with pytest.raises(OffsetStoreError) as failure:
            wrong.commit({partition: 8})
    finally:
        wrong.close()
    assert time.monotonic() - started < FAIL_FAST_S
    message = str(failure.value)
    assert "\n" not in message and WRONG_TOKEN not in message
    assert "(mechanism OAUTHBEARER)" in message and "SASL_AUTHENTICATION_FAILED" in message
    assert message.endswith("the broker refused the token (status invalid_token)"), message


@pytest.mark.long
def test_gssapi_logins_of_a_member_and_of_the_cluster_client_through_a_kerberos_realm(
        modern_broker, cluster, members_on, unique_name, sasl_topic, work_root, monkeypatch):
    """A realm of Debian's MIT KDC, the front accepting with the broker's service keytab; the
    member (wire fetcher) and LogOffsets (cluster client) get their tickets from the user's
    keytab as the gssapi library finds it. Long: it needs packages the default install leaves
    out (krb5-kdc, krb5-admin-server, and gssapi built against libkrb5-dev)."""
    missing = kdc.unavailable()
    if missing:
        pytest.skip(missing)
    realm = kdc.Realm(work_root / unique_name("realm"))
    front = SaslFront(modern_broker.bootstrap_servers, {USER: PASSWORD},
                      kerberos_keytab=str(realm.service_keytab))
    try:
        for name, value in realm.environment().items():
            monkeypatch.setenv(name, value)
        topic, values = sasl_topic
        gssapi = {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "GSSAPI"}
        _consume_through(front, cluster, members_on, unique_name, topic, values, gssapi)
        assert set(_log_ends(front, topic, gssapi)) == {TopicPartition(topic, 0)}
        assert Login(f"{USER}@{kdc.REALM}", "GSSAPI", True) in front.logins
        # Before 1.0 (bare frames) the broker answers nothing to the last token.
        legacy = SaslFront(modern_broker.bootstrap_servers, {USER: PASSWORD}, bare_tokens=True,
                           kerberos_keytab=str(realm.service_keytab))
        try:
            assert set(_log_ends(legacy, topic, gssapi)) == {TopicPartition(topic, 0)}
            assert Login(f"{USER}@{kdc.REALM}", "GSSAPI", True) in legacy.logins
        finally:
            legacy.stop()
        started = time.monotonic()
        with pytest.raises(LogOffsetsError) as failure:
            _log_ends(front, topic, {**gssapi, "kafka.sasl.kerberos.service.name": "nokafka"})
        assert time.monotonic() - started < FAIL_FAST_S
        assert "(mechanism GSSAPI, service nokafka@127.0.0.1)" in str(failure.value)
        assert "not found in Kerberos database" in str(failure.value)
    finally:
        front.stop()
        realm.stop()

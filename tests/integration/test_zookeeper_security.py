"""ZooKeeper digest authentication and ACLs on the znodes zkconsumer creates, and credentials
kept out of every log line and error, against the real ZooKeeper."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from support.java import require_java
from support.kafka import produce
from support.waiting import wait_until

from zkconsumer.cli import cli
from zkconsumer.model import TopicPartition
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration

DIGEST = "app:s3cret-Pa55"


@pytest.fixture
def stranger(cluster):
    """A client without the group's credentials."""
    client = KazooClient(hosts=cluster.zookeeper_connect)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


def test_a_member_with_credentials_works_and_nobody_else_can_change_its_group(
        cluster, zk, topic_factory, unique_name, members, stranger):
    topic = topic_factory(partitions=2)
    produce(cluster, topic, [f"a{i}".encode() for i in range(20)], partitions=2)
    group = unique_name("acl")
    paths = GroupPaths(group)
    member = members(group, topics={topic: 1}, **{"zookeeper.auth.digest": DIGEST})
    wait_until(lambda: len(member.values()) >= 20, timeout=60, message="20 messages")
    member.connector.commit_offsets()

    offset_path = paths.offset(topic, 0)
    assert stranger.get(offset_path)[0] == b"10", "others may still read (monitoring tools)"
    with pytest.raises(NoAuthError):
        stranger.set(offset_path, b"0")
    with pytest.raises(NoAuthError):
        stranger.delete(paths.owner(topic, 1))
    with pytest.raises(NoAuthError):
        stranger.create(paths.member(f"{group}_intruder"), b"{}", ephemeral=True)
    assert stranger.get(offset_path)[0] == b"10"

    intruder = CliRunner().invoke(cli, [
        "offsets", "reset", "--group", group, "--to-earliest", "--execute",
        "--zookeeper", cluster.zookeeper_connect])
    assert intruder.exit_code == 1
    member.stop()
    denied = CliRunner().invoke(cli, [
        "offsets", "reset", "--group", group, "--topic", topic, "--to-earliest", "--execute",
        "--zookeeper", cluster.zookeeper_connect])
    assert denied.exit_code == 1 and "ZooKeeper denied" in denied.stderr
    assert "s3cret" not in denied.stderr
    allowed = CliRunner().invoke(cli, [
        "offsets", "reset", "--group", group, "--topic", topic, "--to-earliest", "--execute",
        "--zookeeper", cluster.zookeeper_connect, "--property", f"zookeeper.auth.digest={DIGEST}"])
    assert allowed.exit_code == 0, allowed.stderr
    assert stranger.get(offset_path)[0] == b"0"


def test_a_member_without_credentials_fails_loudly_on_a_protected_group(
        cluster, zk, topic_factory, unique_name, members):
    topic = topic_factory(partitions=1)
    group = unique_name("locked")
    owner = members(group, topics={topic: 1}, **{"zookeeper.auth.digest": DIGEST})
    owner.connector.wait_until_stable(timeout=60)
    result = subprocess.run(
        [sys.executable, "-m", "zkconsumer", "consume", "--zookeeper", cluster.zookeeper_connect,
         "--group", group, "--topic", topic, "--max-messages", "1"],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error: ZooKeeper denied")
    assert "Traceback" not in result.stderr
    assert set(owner.connector.owned_partitions()) == {TopicPartition(topic, 0)}


def test_credentials_never_reach_logs_or_errors(cluster, topic_factory, unique_name):
    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"x"], partitions=1)
    result = subprocess.run(
        [sys.executable, "-m", "zkconsumer", "--log-level", "debug", "consume",
         "--zookeeper", cluster.zookeeper_connect, "--group", unique_name("secret"),
         "--topic", topic, "--from-beginning", "--max-messages", "1",
         "--property", f"zookeeper.auth.digest={DIGEST}",
         "--property", "kafka.sasl.plain.password=hunter2-Pa55"],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    everything = result.stdout + result.stderr
    assert "s3cret-Pa55" not in everything and "hunter2-Pa55" not in everything

    bad = subprocess.run(
        [sys.executable, "-m", "zkconsumer", "consume", "--zookeeper", cluster.zookeeper_connect,
         "--group", "g", "--topic", topic, "--property", "zookeeper.auth.digest=no-colon-s3cret"],
        capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 1 and "zookeeper.auth.digest" in bad.stderr
    assert "no-colon-s3cret" not in bad.stderr


@pytest.fixture(scope="module")
def sasl_cluster(work_root):
    """A ZooKeeper that accepts SASL DIGEST-MD5 logins for user `app`, with one broker."""
    from zkconsumer.localcluster import LocalCluster

    require_java()
    cluster = LocalCluster.start(work_root / "sasl-cluster", brokers=1,
                                 zookeeper_sasl_users={"app": "sasl-Pa55"})
    yield cluster
    cluster.stop(remove_data=True)


def test_sasl_authenticated_members_own_their_znodes(sasl_cluster, members_on):
    from zkconsumer.localcluster import create_topic
    from zkconsumer.zk.session import zookeeper_session

    with zookeeper_session(sasl_cluster.zookeeper_connect) as zk:
        create_topic(zk, "guarded", 1)
    member = members_on(sasl_cluster, "sasl-group", topics={"guarded": 1}, **{
        "zookeeper.sasl.username": "app", "zookeeper.sasl.password": "sasl-Pa55",
        "kafka.api.version": "0.9"})
    assert member.connector.wait_until_stable(timeout=60)

    stranger = KazooClient(hosts=sasl_cluster.zookeeper_connect)
    stranger.start(timeout=10)
    try:
        owner = GroupPaths("sasl-group").owner("guarded", 0)
        assert stranger.exists(owner)
        acl, _ = stranger.get_acls(owner)
        assert {(a.id.scheme, a.id.id) for a in acl} == {("sasl", "app"), ("world", "anyone")}
        with pytest.raises(NoAuthError):
            stranger.delete(owner)
    finally:
        stranger.stop()
        stranger.close()

    wrong = CliRunner().invoke(cli, [
        "group", "list", "--zookeeper", sasl_cluster.zookeeper_connect,
        "--property", "zookeeper.sasl.username=app", "--property", "zookeeper.sasl.password=nope"])
    assert wrong.exit_code == 1 and "nope" not in wrong.stderr

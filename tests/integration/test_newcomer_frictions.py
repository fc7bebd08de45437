"""What got in a newcomer's way in the first hour, mended, on the shared cluster: a topic
created and filled from the command line (no Kafka scripts dug out of the bundle); `group
describe` and `group list` saying why a consumed partition shows `-` and where a cutover
stands; the cutover's dry run and report counting the copy in the same words; and every
command refusing an unknown group in the same line. Each runs in-process in a second or two."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner
from support.kafka import end_offsets
from support.legacy_groups import kafka_version_args, register_member, write_offsets
from support.offsets import commit_in_kafka

from zkconsumer.cli import cli
from zkconsumer.model import TopicPartition
from zkconsumer.znodes.fence import Fence, FencePhase
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration


def run(*args: str, stdin: str | None = None):
    result = CliRunner().invoke(cli, list(args), input=stdin, prog_name="zkconsumer")
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def admin(cluster):
    """`zkconsumer ARGS` against the shared cluster's ZooKeeper."""
    def run_admin(*args: str):
        return run(*args, "--zookeeper", cluster.zookeeper_connect, *kafka_version_args(cluster))
    return run_admin


def test_a_topic_is_created_and_filled_from_the_command_line(cluster, unique_name):
    """`cluster create-topic` and `cluster produce` on the local cluster (found from its work
    folder, as after `zkconsumer cluster start`), or on the one named."""
    topic = unique_name("playground")
    if cluster.local is not None:
        create = produce = ["--work-dir", str(cluster.local.work_dir)]
    else:
        create = ["--zookeeper", cluster.zookeeper_connect]
        produce = ["--bootstrap-server", cluster.bootstrap_servers]
    code, out, err = run("cluster", "create-topic", *create, "--topic", topic,
                         "--partitions", "3")
    assert code == 0, err
    assert out == f"created topic {topic}: 3 partition(s), replication factor 1\n"

    code, out, err = run("cluster", "produce", *produce, "--topic", topic, "--count", "6",
                         "--json")
    assert code == 0, err
    assert json.loads(out) == {"topic": topic, "messages": 6,
                               "partitions": {"0": 2, "1": 2, "2": 2}}
    code, out, err = run("cluster", "produce", *produce, "--topic", topic,
                         "--key-separator", ":", stdin="user-1:first\nuser-1:second\n\n")
    assert code == 0, err
    assert out.startswith(f"produced 2 message(s) to {topic}: 2 to partition ")
    code, out, err = run("cluster", "produce", "--zookeeper", cluster.zookeeper_connect,
                         "--topic", topic, "--count", "1", "--key", "k")
    assert code == 0, err
    assert out.startswith(f"produced 1 message(s) to {topic}: 1 to partition "), out
    assert sum(end_offsets(cluster, topic, 3).values()) == 9

    code, _, err = run("cluster", "create-topic", *create, "--topic", topic)
    assert (code, err) == (1, f"error: topic {topic!r} already exists\n")


def test_describe_and_list_say_why_a_consumed_partition_shows_no_offset_and_show_the_fence(
        admin, zk, topic_factory, unique_name):
    """A member owns partition 0 and has committed nothing yet (its first auto-commit is a
    minute away); a cutover to Kafka is draining."""
    topic = topic_factory(partitions=2)
    group = unique_name("fresh")
    register_member(zk, group, topic, owned=[0])
    write_offsets(zk, group, topic, {1: 0})
    started_ms = int(time.time() * 1000)
    zk.create(GroupPaths(group).fence,
              Fence("kafka", FencePhase.DRAINING, started_ms).encode())

    code, out, err = admin("group", "describe", "--group", group)
    assert code == 0, err
    assert (f"note: group {group}: 1 owned partition(s) with nothing committed yet "
            f"({topic}-0): offsets and lag show '-' until the member commits, every "
            "auto.commit.interval.ms (60 s by default)") in err
    assert out.splitlines()[-1].startswith("cutover: draining to kafka, started "), out

    code, out, err = admin("group", "describe", "--group", group, "--json")
    assert json.loads(out)["cutover"] == {"to": "kafka", "phase": "draining",
                                          "started_ms": started_ms}
    code, out, err = admin("group", "list", "--json")
    assert code == 0, err
    [row] = [row for row in json.loads(out) if row["group"] == group]
    assert row["cutover"] == "draining to kafka"
    assert f"note: group {group}: 1 owned partition(s) with nothing committed yet" in err


def test_the_cutovers_dry_run_and_report_count_the_copy_in_the_same_words(
        cluster, zk, admin, topic_factory, unique_name):
    """Partition 1's offset is in Kafka already (a draining member commits to both): the dry
    run says `already there` for it, and so does the report, beside the one `copied`."""
    topic = topic_factory(partitions=2)
    group = unique_name("words")
    write_offsets(zk, group, topic, {0: 0, 1: 0})
    commit_in_kafka(cluster.bootstrap_servers, group, {TopicPartition(topic, 1): 0},
                    cluster.kafka_api_version)

    code, out, err = admin("group", "cutover", "--group", group, "--to", "kafka")
    assert code == 0, err
    assert [line.split()[-2:] for line in out.splitlines()[1:]] == [["to", "copy"],
                                                                    ["already", "there"]]
    assert "offsets: 1 to copy, 1 already there; " in err
    code, out, err = admin("group", "cutover", "--group", group, "--to", "kafka", "--execute")
    assert code == 0, err
    rows = [line.split()[-2:] for line in out.splitlines()[1:3]]
    assert rows == [["0", "copied"], ["already", "there"]], out
    assert "offsets: 1 copied, 1 already there (members that drain" in out


@pytest.mark.parametrize("command", [
    ["group", "describe"], ["group", "delete"], ["group", "cutover", "--to", "kafka"],
    ["offsets", "diff"], ["offsets", "spark-json"], ["offsets", "export"],
    ["offsets", "migrate", "--to", "kafka", "--dry-run"],
], ids=lambda command: " ".join(command[:2]))
def test_every_command_refuses_an_unknown_group_in_the_same_line(admin, unique_name, command):
    group = unique_name("nobody")
    code, out, err = admin(*command, "--group", group)
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == \
        f"error: no group {group} under /consumers or on Kafka's group coordinator"


def test_a_zookeeper_host_that_does_not_resolve_is_said_at_once():
    started = time.monotonic()
    code, _, err = run("group", "list", "--zookeeper", "zk.no-such-host.invalid:2181")
    assert time.monotonic() - started < 5
    assert code == 1 and err.startswith("error: cannot reach ZooKeeper at "
                                        "zk.no-such-host.invalid:2181: no host of it resolves")

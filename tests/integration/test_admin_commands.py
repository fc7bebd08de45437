"""`zkconsumer group …` and `zkconsumer offsets …` on the real cluster, judged by the reference
tools (ConsumerOffsetChecker, ExportZkOffsets, ImportZkOffsets) and by plain reads."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from kazoo.client import KazooClient
from support.java import require_java
from support.kafka import committed_in_kafka, produce
from support.legacy_groups import register_member
from support.offset_checker import offset_checker_rows
from support.offsets import zookeeper_offsets
from support.waiting import wait_until

from zkconsumer.cli import cli
from zkconsumer.localcluster.processes import free_port
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import ZookeeperOffsetStore
from zkconsumer.testing.reference import run_tool
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration


@pytest.fixture
def admin(cluster):
    """Runs `zkconsumer ARGS --zookeeper Z` in-process; returns (exit code, stdout, stderr)."""
    def run(*args: str):
        extra = ["--zookeeper", cluster.zookeeper_connect]
        if cluster.kafka_api_version:
            extra += ["--property",
                      "kafka.api.version=" + ".".join(map(str, cluster.kafka_api_version))]
        result = CliRunner().invoke(cli, [*args, *extra], catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr
    return run


@pytest.fixture
def java():
    require_java()


def _seed(zk, group: str, offsets: dict[TopicPartition, int]) -> None:
    ZookeeperOffsetStore(zk, group).commit(offsets)


@pytest.fixture
def live_member(cluster):
    """Registers an ephemeral member znode for a group, as a running consumer would."""
    clients = []

    def register(group: str) -> None:
        client = KazooClient(hosts=cluster.zookeeper_connect)
        client.start(timeout=10)
        clients.append(client)
        client.create(GroupPaths(group).member(f"{group}_live-1"),
                      b'{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"1"}',
                      ephemeral=True, makepath=True)

    yield register
    for client in clients:
        client.stop()
        client.close()


@pytest.mark.reference
def test_group_describe_agrees_with_the_reference_offset_checker(
        cluster, zk, topic_factory, unique_name, admin, work_root, java):
    topic = topic_factory(partitions=3)
    produce(cluster, topic, [f"m{i}".encode() for i in range(30)], partitions=3)
    group = unique_name("describe")
    _seed(zk, group, {TopicPartition(topic, 0): 2, TopicPartition(topic, 1): 9,
                      TopicPartition(topic, 2): 10})

    code, out, err = admin("group", "describe", "--group", group, "--json")
    assert code == 0, err
    ours = {r["partition"]: (r["zookeeper_offset"], r["log_end_offset"], r["lag"])
            for r in json.loads(out)["partitions"] if r["topic"] == topic}
    assert ours == offset_checker_rows(cluster, group, topic, work_root / "tools")
    assert ours == {0: (2, 10, 8), 1: (9, 10, 1), 2: (10, 10, 0)}

    code, out, _ = admin("group", "list", "--json")
    listed = {g["group"]: g for g in json.loads(out)}
    assert listed[group]["zookeeper_offsets"] == 3 and listed[group]["members"] == 0


def test_group_describe_and_list_show_status_and_total_lag(
        cluster, zk, topic_factory, unique_name, admin):
    topic = topic_factory(partitions=2)
    produce(cluster, topic, [b"m%d" % i for i in range(20)], partitions=2)  # 10 each
    stopped, stalled = unique_name("stopped"), unique_name("stalled")
    _seed(zk, stopped, {TopicPartition(topic, 0): 4, TopicPartition(topic, 1): 10})
    _seed(zk, stalled, {TopicPartition(topic, 0): 6})
    register_member(zk, stalled, topic, owned=[0])

    def described(group: str) -> dict | None:
        code, out, err = admin("group", "describe", "--group", group, "--json",
                               "--status-window", "1s")
        assert code == 0, err
        found = json.loads(out)
        return found if found["status"] != "OK" else None

    # OK while the offsets are younger than the window, then judged by who owns them.
    found = wait_until(lambda: described(stopped), timeout=30, message="STOP")
    assert found["status"] == "STOP"
    assert [(r["partition"], r["lag"], r["status"]) for r in found["partitions"]] == [
        (0, 6, "STOP"), (1, 0, "OK")]
    found = wait_until(lambda: described(stalled), timeout=30, message="STALL")
    assert [(r["partition"], r["lag"], r["owner"], r["status"])
            for r in found["partitions"]] == [
        (0, 4, f"{found['members'][0]['consumer_id']}-0", "STALL"), (1, None, None, None)]

    code, out, err = admin("group", "list", "--json", "--status-window", "1s")
    assert code == 0, err
    listed = {row["group"]: row for row in json.loads(out)}
    assert {k: listed[stopped][k] for k in ("lag", "status", "storage", "members")} == {
        "lag": 6, "status": "STOP", "storage": "zookeeper", "members": 0}
    assert {k: listed[stalled][k] for k in ("lag", "status", "owned_partitions", "members")} == {
        "lag": 4, "status": "STALL", "owned_partitions": 1, "members": 1}
    code, out, _ = admin("group", "list", "--status-window", "1s")
    assert code == 0
    header, *lines = out.splitlines()
    # The table's last columns: lag, status, and where a cutover stands (none here).
    assert header.split()[-3:] == ["LAG", "STATUS", "CUTOVER"]
    assert any(line.split()[0] == stopped and line.split()[-3:] == ["6", "STOP", "-"]
               for line in lines)


@pytest.mark.reference
def test_reference_export_imports_into_ours_and_ours_into_the_reference(
        cluster, zk, topic_factory, unique_name, admin, work_root, tmp_path, java):
    topics = [topic_factory(partitions=2), topic_factory(partitions=3)]
    group = unique_name("files")
    original = {TopicPartition(t, p): 100 * i + p + 1
                for i, t in enumerate(topics) for p in range(2 + i)}
    _seed(zk, group, original)

    reference_file = tmp_path / "reference.txt"
    result = run_tool("kafka.tools.ExportZkOffsets",
                      ["--zkconnect", cluster.zookeeper_connect, "--group", group,
                       "--output-file", str(reference_file)], work_dir=work_root / "tools")
    assert result.returncode == 0, result.stderr
    zk.delete(GroupPaths(group).root, recursive=True)

    code, _, err = admin("offsets", "import", "--input", str(reference_file))
    assert code == 0, err
    ours_file = tmp_path / "ours.txt"
    code, _, err = admin("offsets", "export", "--group", group, "--output", str(ours_file))
    assert code == 0, err
    # The reference writes ZooKeeper's unordered child order; ours is sorted.
    assert ours_file.read_text().splitlines() == sorted(reference_file.read_text().splitlines())
    assert zookeeper_offsets(zk, group) == original

    zk.delete(GroupPaths(group).root, recursive=True)
    result = run_tool("kafka.tools.ImportZkOffsets",
                      ["--zkconnect", cluster.zookeeper_connect, "--input-file", str(ours_file)],
                      work_dir=work_root / "tools")
    assert result.returncode == 0, result.stderr
    again = tmp_path / "again.txt"
    code, _, err = admin("offsets", "export", "--group", group, "--output", str(again))
    assert code == 0, err
    assert again.read_text() == ours_file.read_text()


def test_migration_round_trip_dry_run_refusals_and_idempotence(
        cluster, zk, topic_factory, unique_name, admin, live_member):
    topics = [topic_factory(partitions=2), topic_factory(partitions=2)]
    group = unique_name("migrate")
    original = {TopicPartition(t, p): 10 * (i + 1) + p for i, t in enumerate(topics)
                for p in range(2)}
    _seed(zk, group, original)

    code, out, err = admin("offsets", "migrate", "--group", group, "--to", "kafka", "--dry-run",
                           "--json")
    assert code == 0, err
    assert json.loads(out)["summary"]["write"] == 4
    assert committed_in_kafka(cluster, group, topics[0], 2) == {0: None, 1: None}

    code, _, err = admin("offsets", "migrate", "--group", group, "--to", "kafka")
    assert code == 0, err
    for topic in topics:
        assert committed_in_kafka(cluster, group, topic, 2) == {
            p: original[TopicPartition(topic, p)] for p in range(2)}

    code, out, err = admin("offsets", "migrate", "--group", group, "--to", "kafka", "--json")
    assert code == 0, err
    assert json.loads(out)["summary"] == {"write": 0, "unchanged": 4, "rewind": 0, "refused": 0}

    code, _, err = admin("offsets", "diff", "--group", group)
    assert code == 0, err

    zk.delete(GroupPaths(group).offsets, recursive=True)
    code, _, err = admin("offsets", "migrate", "--group", group, "--to", "zookeeper",
                         "--topic", topics[0], "--topic", topics[1])
    assert code == 0, err
    assert zookeeper_offsets(zk, group) == original

    # Kafka ahead of ZooKeeper on one partition: moving it back is refused, nothing written.
    _seed(zk, group, {TopicPartition(topics[0], 0): 5, TopicPartition(topics[1], 1): 99})
    code, _, err = admin("offsets", "migrate", "--group", group, "--to", "kafka")
    assert code == 1 and "would move backwards" in err and "Traceback" not in err
    assert committed_in_kafka(cluster, group, topics[1], 2)[1] == original[
        TopicPartition(topics[1], 1)]

    code, _, err = admin("offsets", "diff", "--group", group)
    assert code == 3 and "differ" in err

    live_member(group)
    code, _, err = admin("offsets", "migrate", "--group", group, "--to", "kafka",
                         "--allow-rewind")
    assert code == 1 and "live group" in err and "dual.commit.enabled" in err
    code, _, err = admin("offsets", "migrate", "--group", group, "--to", "kafka",
                         "--allow-rewind", "--force")
    assert code == 0, err
    assert committed_in_kafka(cluster, group, topics[0], 2)[0] == 5


def test_reset_to_earliest_latest_offset_and_shift(cluster, zk, topic_factory, unique_name,
                                                   admin, live_member):
    topic = topic_factory(partitions=2)
    produce(cluster, topic, [f"r{i}".encode() for i in range(20)], partitions=2)
    group = unique_name("reset")
    _seed(zk, group, {TopicPartition(topic, 0): 4, TopicPartition(topic, 1): 6})

    def reset(*how: str) -> dict[int, int]:
        code, _, err = admin("offsets", "reset", "--group", group, "--topic", topic, *how,
                             "--execute")
        assert code == 0, err
        return {tp.partition: o for tp, o in zookeeper_offsets(zk, group).items()}

    code, _, err = admin("offsets", "reset", "--group", group, "--to-latest")
    assert code == 0 and "dry run" in err
    assert {tp.partition: o for tp, o in zookeeper_offsets(zk, group).items()} == {0: 4, 1: 6}

    assert reset("--to-latest") == {0: 10, 1: 10}
    assert reset("--shift-by", "-3") == {0: 7, 1: 7}
    assert reset("--to-offset", "2") == {0: 2, 1: 2}
    assert reset("--to-offset", "500") == {0: 10, 1: 10}, "clamped to the log end"
    assert reset("--to-earliest") == {0: 0, 1: 0}
    assert reset("--shift-by", "-5") == {0: 0, 1: 0}, "clamped to the log start"

    code, _, err = admin("offsets", "reset", "--group", group, "--topic", topic,
                         "--to-datetime", "2026-01-01T00:00:00", "--storage", "kafka")
    if cluster.kafka_api_version and cluster.kafka_api_version < (0, 10, 1):
        assert code == 1 and "cannot look offsets up by time" in err
    else:
        assert code == 0, err

    live_member(group)
    code, _, err = admin("offsets", "reset", "--group", group, "--to-latest", "--execute")
    assert code == 1 and "live group" in err


def test_group_delete_refuses_a_live_group_and_removes_a_stopped_one(zk, unique_name, admin,
                                                                     live_member):
    group = unique_name("delete")
    _seed(zk, group, {TopicPartition("t", 0): 1})
    code, out, _ = admin("group", "delete", "--group", group, "--dry-run")
    assert code == 0 and "would remove" in out and zk.exists(GroupPaths(group).root)
    code, out, err = admin("group", "delete", "--group", group)
    assert code == 0 and "removed" in out, err
    assert not zk.exists(GroupPaths(group).root)

    _seed(zk, group, {TopicPartition("t", 0): 1})
    live_member(group)
    code, _, err = admin("group", "delete", "--group", group)
    assert code == 1 and "registered member" in err
    assert zk.exists(GroupPaths(group).offset("t", 0))


def test_bad_input_gives_one_line_and_exit_one(zk, unique_name, admin, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("/consumers/g/offsets/t/0:12\nnot an offset line\n")
    code, _, err = admin("offsets", "import", "--input", str(bad))
    assert code == 1 and "line 2" in err and len(err.strip().splitlines()) == 1

    result = CliRunner().invoke(cli, ["offsets", "export", "--zookeeper",
                                      f"127.0.0.1:{free_port()}"])
    assert result.exit_code == 1 and "cannot reach ZooKeeper" in result.stderr

"""The lag exporter on the real cluster: lag, offsets, members and owners of ZooKeeper groups
(offsets in ZooKeeper and in Kafka), Burrow's statuses over a short window, the command as
operators run it, and a ZooKeeper-less broker with `--bootstrap-server`.

Groups are set up the way the Scala consumer leaves them in ZooKeeper: offset znodes written
as text, and, for a member that hangs, an ephemeral registration and owner znodes that stay
while its offsets do not move.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time

import pytest
from click.testing import CliRunner
from kazoo.client import KazooState
from support import burrow_shapes as shapes
from support.burrow_rules import first_burrow_stall
from support.burrow_shapes import mismatches
from support.exporter import get, lag_of
from support.kafka import produce
from support.legacy_groups import kafka_version_args, register_member, write_offsets
from support.offsets import commit_in_kafka
from support.sessions import expire_session
from support.waiting import wait_until

from zkconsumer.cli import cli
from zkconsumer.errors import ZnodeDataError
from zkconsumer.exporter.kafka_reads import ClusterReads
from zkconsumer.exporter.service import ExporterSettings, LagExporter
from zkconsumer.exporter.zk_groups import GroupsCache, GroupsCacheError
from zkconsumer.fetch import KafkaAccess
from zkconsumer.lag.status import Status, WindowRules
from zkconsumer.model import TopicPartition
from zkconsumer.topology import open_topic_source
from zkconsumer.zk.group_state import read_group_state
from zkconsumer.zk.session import connect
from zkconsumer.znodes.consumers import encode_offset
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration


def test_the_exporter_command_serves_lag_offsets_members_owners_and_burrow(
        cluster, zk, topic_factory, unique_name, members, exporter_process):
    topic = topic_factory(partitions=3)
    produce(cluster, topic, [b"m-%02d" % i for i in range(30)], partitions=3)  # 10 each
    prefix = unique_name("exp")
    idle, live, in_kafka = f"{prefix}-idle", f"{prefix}-live", f"{prefix}-kafka"
    # No member; partition 1 at offset 0 (kafka_exporter drops such partitions), 2 at the end.
    write_offsets(zk, idle, topic, {0: 4, 1: 0, 2: 10})
    write_offsets(zk, idle, f"{prefix}-deleted", {0: 1})  # an offset outlives its topic
    # Offsets in Kafka only; its one member hangs, owning partition 0 but not 1 and 2.
    register_member(zk, in_kafka, topic, owned=[0])
    commit_in_kafka(cluster.bootstrap_servers, in_kafka,
                    {TopicPartition(topic, 0): 7, TopicPartition(topic, 1): 2},
                    cluster.kafka_api_version)
    member = members(live, topics={topic: 1}, **{"auto.commit.interval.ms": "200"})

    exporter = exporter_process("--zookeeper", cluster.zookeeper_connect, "--interval", "0.5s",
                                "--group-regex", f"{prefix}-.*", *kafka_version_args(cluster))
    wait_until(lambda: len(member.values()) == 30, timeout=60, message="the live member")

    def settled():
        found = exporter.scrape()
        return found if lag_of(found, live, topic, 0) == 0 and lag_of(
            found, live, topic, 2) == 0 and lag_of(found, in_kafka, topic, 1) == 8 else None

    found = wait_until(settled, timeout=60, message="every group's lag")
    assert [lag_of(found, idle, topic, p) for p in range(3)] == [6, 10, 0]
    assert lag_of(found, idle, f"{prefix}-deleted", 0) is None
    assert found[("zkconsumer_group_offset", (("group", idle), ("partition", "0"),
                                              ("storage", "zookeeper"),
                                              ("topic", f"{prefix}-deleted")))] == 1
    assert ("kafka_consumergroupzookeeper_lag_zookeeper",
            (("consumergroup", idle), ("partition", "1"), ("topic", topic))) in found
    assert found[("zkconsumer_group_offset", (("group", idle), ("partition", "0"),
                                              ("storage", "zookeeper"), ("topic", topic)))] == 4
    assert [lag_of(found, in_kafka, topic, p) for p in range(3)] == [3, 8, None]
    assert found[("zkconsumer_group_offset", (("group", in_kafka), ("partition", "0"),
                                              ("storage", "kafka"), ("topic", topic)))] == 7
    members_of = {group: found[("zkconsumer_group_members", (("group", group),))]
                  for group in (idle, live, in_kafka)}
    assert members_of == {idle: 0, live: 1, in_kafka: 1}
    owned = {p: found[("zkconsumer_partition_owned", (("group", in_kafka), ("partition", str(p)),
                                                      ("topic", topic)))] for p in range(3)}
    assert owned == {0: 1, 1: 0, 2: 0}, "the orphaned partitions of a group with a member"
    assert all(found[("zkconsumer_partition_owned", (("group", live), ("partition", str(p)),
                                                     ("topic", topic)))] == 1 for p in range(3))
    assert found[("zkconsumer_group_total_lag", (("group", idle),))] == 16

    status, body = get(exporter.port, f"/v3/kafka/local/consumer/{live}/status")
    answer = json.loads(body)
    assert status == 200 and answer["status"]["status"] == "OK", answer
    assert answer["status"]["partition_count"] == 3 and answer["status"]["totallag"] == 0
    status, body = get(exporter.port, f"/v3/kafka/local/consumer/{idle}/lag")
    partitions = json.loads(body)["status"]["partitions"]
    assert [(p["partition"], p["current_lag"]) for p in partitions] == [(0, 6), (1, 10), (2, 0)]
    listed = json.loads(get(exporter.port, "/v3/kafka/local/consumer")[1])["consumers"]
    assert listed == sorted([idle, live, in_kafka])
    assert get(exporter.port, "/healthz")[0] == 200
    assert exporter.stop() == 0


def test_every_burrow_read_path_answers_burrows_shape_from_the_running_exporter(
        cluster, zk, topic_factory, unique_name, exporter_process):
    topic = topic_factory(partitions=2)
    produce(cluster, topic, [b"m-%d" % i for i in range(8)], partitions=2)  # 4 each
    group = unique_name("burrow")
    write_offsets(zk, group, topic, {0: 1, 1: 4})
    register_member(zk, group, topic, owned=[0])
    exporter = exporter_process("--zookeeper", cluster.zookeeper_connect, "--interval", "0.5s",
                                "--window-samples", "3", "--group-regex", re.escape(group),
                                *kafka_version_args(cluster))

    def answer(path: str, shape, status: int = 200) -> dict:
        code, body = get(exporter.port, path)
        document = json.loads(body)
        assert code == status, (path, document)
        assert mismatches(document, shape) == [], path
        return document

    def scanned() -> bool:
        try:
            code, body = get(exporter.port, f"/v3/kafka/local/consumer/{group}/lag")
        except OSError:
            return False  # not listening yet
        return code == 200 and len(json.loads(body)["status"]["partitions"]) == 2

    wait_until(scanned, timeout=60, message="the group's first scan")
    assert answer("/v3/kafka", shapes.CLUSTER_LIST)["clusters"] == ["local"]
    module = answer("/v3/kafka/local", shapes.CLUSTER_DETAIL)["module"]
    assert module["servers"] == cluster.bootstrap_servers.split(",")
    assert answer("/v3/kafka/local/consumer", shapes.CONSUMER_LIST)["consumers"] == [group]
    detail = answer(f"/v3/kafka/local/consumer/{group}", shapes.CONSUMER_DETAIL)["topics"]
    assert [(p["offsets"][-1]["offset"], p["current-lag"]) for p in detail[topic]] == [
        (1, 3), (4, 0)]
    assert detail[topic][0]["owner"] == f"{group}_host-1700000000000-abcdef01-0"
    status = answer(f"/v3/kafka/local/consumer/{group}/status", shapes.CONSUMER_STATUS)
    assert status["status"]["totallag"] == 3
    answer(f"/v3/kafka/local/consumer/{group}/lag", shapes.CONSUMER_STATUS)
    missing = answer(f"/v3/kafka/local/consumer/{group}-none/status", shapes.CONSUMER_STATUS,
                     status=404)
    assert missing["status"]["status"] == "NOTFOUND"
    assert answer("/v3/kafka/local/topic", shapes.TOPIC_LIST)["topics"] == [topic]
    assert answer(f"/v3/kafka/local/topic/{topic}", shapes.TOPIC_DETAIL)["offsets"] == [4, 4]
    assert answer(f"/v3/kafka/local/topic/{topic}/consumers",
                  shapes.TOPIC_CONSUMERS)["consumers"] == [group]
    assert get(exporter.port, "/burrow/admin") == (200, "GOOD")
    assert answer("/v3/admin/loglevel", shapes.LOG_LEVEL)["level"] == "info"
    config = answer("/v3/config", shapes.MAIN_CONFIG)
    assert config["zookeeper"]["servers"] == cluster.zookeeper_connect.split("/")[0].split(",")
    assert answer("/v3/config/consumer", shapes.MODULE_LIST)["modules"] == ["zookeeper", "kafka"]
    for coordinator, name in (("cluster", "local"), ("consumer", "zookeeper"),
                              ("consumer", "kafka"), ("storage", "default"),
                              ("evaluator", "default")):
        answer(f"/v3/config/{coordinator}/{name}", shapes.MODULE_DETAIL[coordinator])
    answer("/v3/kafka/local/nope", shapes.INVALID_REQUEST, status=404)
    assert exporter.stop() == 0


@pytest.fixture
def short_window_exporter(cluster, zk, unique_name):
    """An exporter scanning only when a test says so, with a window of 3 scans over 3 s; the
    test's groups only, ZooKeeper and the brokers for real."""
    prefix = unique_name("status")
    groups = GroupsCache(zk, f"{prefix}-.*")
    groups.start(60)
    access = KafkaAccess(cluster.bootstrap_servers, cluster.kafka_api_version)
    topics = open_topic_source(zk, None, cluster.kafka_api_version, {})
    reads = ClusterReads(access, topics, {})
    exporter = LagExporter(groups, reads, ExporterSettings(1.0, WindowRules(3, 3.0)))
    exporter.prefix = prefix
    exporter.cache = groups
    yield exporter
    reads.close()
    groups.close()


def test_statuses_over_a_short_window(cluster, zk, topic_factory, members,
                                      short_window_exporter):
    exporter = short_window_exporter
    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"x"] * 20, partitions=1)
    healthy, stopped, stalled, rewound, warned = (
        f"{exporter.prefix}-{kind}" for kind in ("healthy", "stopped", "stalled", "rewound",
                                                 "warned"))
    member = members(healthy, topics={topic: 1}, **{"auto.commit.interval.ms": "200"})
    wait_until(lambda: len(member.values()) == 20, timeout=60, message="the healthy member")
    write_offsets(zk, stopped, topic, {0: 5})
    write_offsets(zk, stalled, topic, {0: 5})
    register_member(zk, stalled, topic, owned=[0])
    write_offsets(zk, rewound, topic, {0: 12})
    write_offsets(zk, warned, topic, {0: 1})
    written = time.time()

    def status_of(group: str) -> str:
        return exporter.reports()[group].status.name

    def one_scan_after_changes(step: int) -> None:
        """Between scans: the rewound group's offset goes back once, and the warned group's
        consumer moves 1 while the producer adds 2."""
        if step == 1:
            write_offsets(zk, rewound, topic, {0: 8})
        write_offsets(zk, warned, topic, {0: 1 + step})
        produce(cluster, topic, [b"y", b"y"], partitions=1)
        # The cache hears of a write through a watch, a moment after it: scan once it has,
        # and once the healthy member has consumed and committed what was just produced (on a
        # busy machine it can lag a scan behind, which the rules rightly call WARN).
        produced = 20 + 2 * (step + 1)
        wait_until(lambda: offsets_in(exporter.cache, warned) == {0: 1 + step} and (
            step != 1 or offsets_in(exporter.cache, rewound) == {0: 8}) and offsets_in(
            exporter.cache, healthy) == {0: produced}, timeout=20,
            message="the offsets written and the healthy member's commit, in the cache")
        assert exporter.scan_once()

    for step in range(3):
        one_scan_after_changes(step)
        wait_until(lambda: len(exporter.reports()) == 5, timeout=10, message="5 groups")
    assert status_of(rewound) == "REWIND"
    assert status_of(warned) == "WARN"
    assert status_of(healthy) == "OK"

    def aged() -> bool:
        exporter.scan_once()
        return time.time() - written > 3.0 and status_of(stopped) == "STOP"

    wait_until(aged, timeout=30, message="the window to pass")
    assert status_of(stalled) == "STALL"
    assert status_of(healthy) == "OK"
    report = exporter.reports()[stalled]
    assert report.partitions[0].owner is not None and report.members == 1
    burrow = json.loads(exporter.route(f"/v3/kafka/local/consumer/{stalled}/status").body)
    assert burrow["status"]["status"] == "ERR"
    assert [p["status"] for p in burrow["status"]["partitions"]] == ["STALL"]
    assert exporter.reports()[stopped].partitions[0].status == Status.STOP


def test_a_member_rewriting_one_offset_is_stall_within_a_scan_of_burrows_rules(
        cluster, zk, topic_factory, unique_name):
    """A registered member owns the partition and rewrites offset 5 every 1.5 s or so while
    the log grows: Burrow's rules (a ring of 6, min-distance 1 s) say STALL at its second
    commit, as its `kafka_zk` module reads each write with the znode's mtime. The exporter (a scan every
    second over 6) says so at every scan from then on, allowing half a second for the cache to
    hear the write, and at none before; a full window of silence would take 6 s."""
    group = unique_name("rewrite")
    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"x"] * 10, partitions=1)
    register_member(zk, group, topic, owned=[0])
    write_offsets(zk, group, topic, {0: 5})
    groups = GroupsCache(zk, re.escape(group))
    groups.start(60)
    access = KafkaAccess(cluster.bootstrap_servers, cluster.kafka_api_version)
    reads = ClusterReads(access, open_topic_source(zk, None, cluster.kafka_api_version, {}), {})
    judged: list[tuple[float, Status]] = []  # (when a scan judged, the partition's status)

    def after_scan(reports, _ended) -> None:
        for report in reports:
            if report.group == group and report.partitions[0].window:
                judged.append((report.partitions[0].window[-1].observed_at,
                               report.partitions[0].status))

    exporter = LagExporter(groups, reads, ExporterSettings(1.0, WindowRules(6, 6.0)),
                           after_scan=after_scan)
    path = GroupPaths(group).offset(topic, 0)
    log_end = 10
    # Burrow's view of each commit, the first write included: (mtime, offset, log end then).
    commits = [(zk.get(path)[1].mtime / 1000, 5, log_end)]
    paced = threading.Event()  # never set: the member's commit interval
    try:
        wait_until(lambda: offsets_in(groups, group) == {0: 5}, timeout=20,
                   message="the offset in the cache")
        exporter.start()
        wait_until(lambda: judged, timeout=20, message="the first scan")
        for _ in range(3):
            paced.wait(1.5)
            produce(cluster, topic, [b"y"], partitions=1)
            log_end += 1
            stat = zk.set(path, encode_offset(5))
            commits.append((stat.mtime / 1000, 5, log_end))
        last_write = commits[-1][0]
        wait_until(lambda: judged and judged[-1][0] > last_write + 1.0, timeout=30,
                   message="a scan after the last rewrite")
    finally:
        exporter.stop()
        reads.close()
        groups.close()
    burrow = first_burrow_stall(commits, intervals=6, min_distance_s=1.0)
    assert burrow == commits[1][0], commits
    before = [(at, status) for at, status in judged if at < burrow]
    after = [(at, status) for at, status in judged if at >= burrow + 0.5]
    assert before and Status.STALL not in {status for _, status in before}, judged
    assert after and {status for _, status in after} == {Status.STALL}, (burrow, judged)
    assert after[0][0] <= burrow + 1.5, "the first scan after Burrow's verdict said it"


def test_a_rewind_after_a_malformed_offset_is_seen(cluster, zk, topic_factory,
                                                  short_window_exporter):
    """A malformed offset znode (`-5`) is left out of the scan that meets it, not out of the
    partition's window: the lower offset written after it is REWIND in Burrow's status."""
    exporter = short_window_exporter
    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"x"] * 20, partitions=1)
    group = f"{exporter.prefix}-malformed"

    def scan_once_cached(offsets: dict[int, int]) -> None:
        wait_until(lambda: offsets_in(exporter.cache, group) == offsets, timeout=20,
                   message=f"the cache to hold {offsets}")
        assert exporter.scan_once()

    write_offsets(zk, group, topic, {0: 12})
    scan_once_cached({0: 12})
    zk.set(GroupPaths(group).offset(topic, 0), b"-5")
    scan_once_cached({})
    assert exporter.reports()[group].status == Status.OK
    write_offsets(zk, group, topic, {0: 8})
    scan_once_cached({0: 8})
    burrow = json.loads(exporter.route(f"/v3/kafka/local/consumer/{group}/status").body)
    assert burrow["status"]["status"] == "ERR"
    assert [(p["status"], p["start"]["offset"], p["end"]["offset"])
            for p in burrow["status"]["partitions"]] == [("REWIND", 12, 8)]


def test_the_exporter_reads_a_zookeeper_less_broker_with_bootstrap_server(
        cluster, zk, modern_broker, modern_topic_factory, unique_name, exporter_process):
    from support.tansu import produce as produce_modern

    topic = modern_topic_factory(partitions=2)
    # One record per batch: Tansu's ListOffsets answers the log end only then (see tansu.py).
    produce_modern(modern_broker.bootstrap_servers, topic, [b"r-%d" % i for i in range(12)], 2,
                   batch_each=True)
    prefix = unique_name("modern")
    in_zookeeper, in_kafka = f"{prefix}-zk", f"{prefix}-kafka"
    write_offsets(zk, in_zookeeper, topic, {0: 2, 1: 6})
    register_member(zk, in_kafka, topic, owned=[0, 1])
    commit_in_kafka(modern_broker.bootstrap_servers, in_kafka, {TopicPartition(topic, 0): 5})
    exporter = exporter_process("--zookeeper", cluster.zookeeper_connect, "--bootstrap-server",
                                modern_broker.bootstrap_servers, "--interval", "0.5s",
                                "--group-regex", f"{prefix}-.*")
    found = wait_until(lambda: (f := exporter.scrape()) and lag_of(f, in_kafka, topic, 0) == 1
                       and f, timeout=60, message="the modern broker's lag")
    assert [lag_of(found, in_zookeeper, topic, p) for p in range(2)] == [4, 0]
    assert lag_of(found, in_kafka, topic, 1) is None
    assert exporter.stop() == 0


def test_the_groups_cache_follows_changes_across_an_expired_session(cluster, unique_name):
    """A session the server expired is replaced by kazoo; the cache reads the tree again and
    keeps following it, so a long-running exporter never serves a frozen view."""
    group = unique_name("expiry")
    own = connect(cluster.zookeeper_connect)
    writer = connect(cluster.zookeeper_connect)
    cache = GroupsCache(own, f"{group}.*")
    try:
        cache.start(60)
        write_offsets(writer, group, "t", {0: 1})
        wait_until(lambda: offsets_in(cache, group) == {0: 1}, timeout=30, message="offset 1")
        expired = own.client_id
        lost = threading.Event()
        own.add_listener(lambda state: lost.set() if state == KazooState.LOST else None)
        expire_session(cluster.zookeeper_connect, expired)
        wait_until(lost.is_set, timeout=30, message="the session to expire")
        write_offsets(writer, group, "t", {0: 2, 1: 5})
        wait_until(lambda: offsets_in(cache, group) == {0: 2, 1: 5}, timeout=60,
                   message="the offsets written while the session was lost")
        assert own.client_id[0] != expired[0], "the session was not replaced"
        write_offsets(writer, group, "t", {0: 3})
        wait_until(lambda: offsets_in(cache, group) == {0: 3, 1: 5}, timeout=30,
                   message="a change after the new session")
    finally:
        cache.close()
        for client in (own, writer):
            client.stop()
            client.close()


def test_the_cache_and_a_live_read_see_a_group_alike_but_for_malformed_znodes(zk, unique_name):
    """One walk over two readers: the cache leaves a malformed znode out (a monitor goes on),
    a live read names it; with it gone, both give the same state, mtimes included."""
    group = unique_name("walked")
    paths = GroupPaths(group)
    consumer_id = register_member(zk, group, "t", [0])
    write_offsets(zk, group, "t", {0: 4, 1: 6})
    malformed = {paths.member("broken"): b"{not json", f"{paths.offsets}/t/01": b"5",
                 paths.offset("t", 2): b"six"}
    for path, data in malformed.items():
        zk.create(path, data, makepath=True)
    cache = GroupsCache(zk, re.escape(group))
    try:
        assert cache.start(60)
        state, = cache.groups()
        assert list(state.members) == [consumer_id]
        assert state.owners == {TopicPartition("t", 0): f"{consumer_id}-0"}
        assert {tp.partition: o.offset for tp, o in state.zookeeper_offsets.items()} == {
            0: 4, 1: 6}
        with pytest.raises(ZnodeDataError) as raised:
            read_group_state(zk, group)
        assert raised.value.path in malformed
        for path in malformed:
            zk.delete(path)
        live = read_group_state(zk, group)
        assert live == state
        wait_until(lambda: cache.groups() == [live], timeout=30, message="the same state")
    finally:
        cache.close()


def test_the_cache_asks_once_per_znode_it_needs_and_rebuilds_only_a_changed_group(
        cluster, zk, unique_name):
    """Directories listed, members, owners and offsets read, each once; a group the regex
    leaves out and a znode no consumer writes are not asked about; after a commit, the next
    scan builds that group again and hands out the other's state as it was."""
    prefix = unique_name("shape")
    moving, still, ignored = f"{prefix}-moving", f"{prefix}-still", f"{prefix}x-ignored"
    register_member(zk, moving, "t", [0, 1])
    for group in (moving, still, ignored):
        write_offsets(zk, group, "t", {0: 1, 1: 2})
    zk.create(f"{GroupPaths(still).root}/elsewhere/data", b"x", makepath=True)
    own = connect(cluster.zookeeper_connect)
    asked: list[tuple[str, str]] = []
    submit = own._call
    own._call = lambda request, pending: (asked.append((type(request).__name__, request.path)),
                                          submit(request, pending))[1]
    cache = GroupsCache(own, f"{re.escape(prefix)}-.*")
    try:
        assert cache.start(60)
        under = [(kind, path) for kind, path in asked
                 if path.startswith(f"/consumers/{prefix}")]
        listed = [GroupPaths(group).root for group in (moving, still)] + [
            f"{GroupPaths(group).offsets}{topic}" for group in (moving, still)
            for topic in ("", "/t")] + [GroupPaths(moving).ids, GroupPaths(moving).owners,
                                        GroupPaths(moving).owners_topic("t")]
        read = [GroupPaths(group).offset("t", p) for group in (moving, still) for p in (0, 1)]
        read += [GroupPaths(moving).member(f"{moving}_host-1700000000000-abcdef01"),
                 *(GroupPaths(moving).owner("t", p) for p in (0, 1))]
        assert sorted(under) == sorted([("GetChildren", path) for path in listed]
                                       + [("GetData", path) for path in read])
        first = {state.name: state for state in cache.groups()}
        assert sorted(first) == [moving, still]
        write_offsets(zk, moving, "t", {1: 7})
        wait_until(lambda: offsets_in(cache, moving) == {0: 1, 1: 7}, timeout=30,
                   message="the commit in the cache")
        again = {state.name: state for state in cache.groups()}
        assert again[still] is first[still]
    finally:
        cache.close()
        own.stop()
        own.close()


def offsets_in(cache: GroupsCache, group: str) -> dict[int, int] | None:
    """None while the cache says its connection is lost."""
    try:
        states = {state.name: state for state in cache.groups()}
    except GroupsCacheError:
        return None
    if group not in states:
        return {}
    return {tp.partition: o.offset for tp, o in states[group].zookeeper_offsets.items()}


def test_a_port_in_use_is_one_error_line_before_anything_is_loaded(cluster):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["exporter", "--zookeeper", cluster.zookeeper_connect,
                                          "--port", str(busy), *kafka_version_args(cluster)])
    assert result.exit_code == 1, result.output
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: cannot serve metrics on 127.0.0.1:{busy}: Address already in use")


def test_the_cache_waits_for_consumers_to_exist_and_never_creates_it(cluster, zk, unique_name):
    root = f"/{unique_name('chroot')}"
    zk.create(root)
    chrooted = connect(cluster.zookeeper_connect + root)
    try:
        stopped = threading.Event()
        stopped.set()
        assert GroupsCache(chrooted).start(60, stopped) is False
        assert zk.exists(f"{root}/consumers") is None, "a monitor must not write"

        cache = GroupsCache(chrooted)
        outcome = []
        starting = threading.Thread(target=lambda: outcome.append(cache.start(60)))
        starting.start()
        zk.create(f"{root}/consumers/late/offsets/t/0", b"4", makepath=True)
        starting.join(timeout=60)
        assert outcome == [True]
        # the cache may list /consumers before makepath has written the rest of the chain
        wait_until(lambda: offsets_in(cache, "late") == {0: 4}, timeout=30,
                   message="the group written as /consumers appeared")
        zk.delete(f"{root}/consumers", recursive=True)  # removed, then made again
        wait_until(lambda: cache.groups() == [], timeout=30, message="the groups gone")
        zk.create(f"{root}/consumers/again/offsets/t/0", b"9", makepath=True)
        wait_until(lambda: offsets_in(cache, "again") == {0: 9}, timeout=30,
                   message="a group under /consumers made again")
        cache.close()
    finally:
        chrooted.stop()
        chrooted.close()
        zk.delete(root, recursive=True)

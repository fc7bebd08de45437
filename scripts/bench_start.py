"""How fast zkconsumer starts, against kafka-python, each start a process of its own:

1. the command line: `zkconsumer --help`, against kafka-python's import (`import kafka`);
2. one worker (`zkconsumer consume`) until it is registered in ZooKeeper
   (/consumers/<group>/ids/<id>);
3. one worker on Kafka's group coordinator until its group is Stable with every partition of
   the topic assigned, against a kafka-python `KafkaConsumer` doing the same;
4. the fleet: --start-fleet workers started together (each its own process) in one group on Kafka's
   group coordinator, on a topic of --start-fleet-partitions partitions, until the group is Stable
   with every partition assigned to one of them; against as many `KafkaConsumer` processes.

Each figure is the median of the runs (wall clock, and the processes' CPU time until then,
which a busy machine changes less); contenders alternate run by run, so that a pair meets the
same state of a shared machine. `scripts/bench --only start` runs this on the bench's cluster;
alone it starts a throw-away local cluster:

    .venv/bin/python scripts/bench_start.py [--runs 5] [--rounds 3] [--start-fleet 30]
        [--start-fleet-partitions 300] [--baseline-tree PATH]

--baseline-tree measures the zkconsumer of another checkout (e.g. the main branch before a
change) alongside, with the same Python.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import zkconsumer
from zkconsumer.localcluster import LocalCluster, create_topic, wait_for_broker_metadata
from zkconsumer.zk.session import zookeeper_session

API_VERSION = (0, 9)
# The group timing of every Kafka-coordinated member here, whichever its client (as in
# scripts/bench.py): the heartbeat bounds how soon a member learns that the group rebalances.
SESSION_TIMEOUT_MS, HEARTBEAT_INTERVAL_MS = 10_000, 300
TICKS_PER_S = os.sysconf("SC_CLK_TCK")
FLEET_TIMEOUT_S = 600

_CLI = "import sys; from zkconsumer.cli import main; sys.argv[0] = 'zkconsumer'; main()"
_KAFKA_PYTHON_MEMBER = """
import sys
from kafka import KafkaConsumer
bootstrap, group, topic, session_ms, heartbeat_ms = sys.argv[1:]
consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=bootstrap, api_version=(0, 9),
                         enable_auto_commit=False, session_timeout_ms=int(session_ms),
                         heartbeat_interval_ms=int(heartbeat_ms))
while True:
    consumer.poll(200)
"""


class Zkconsumer:
    """The zkconsumer of a checkout (None: the one this Python imports)."""

    def __init__(self, tree: Path | None = None) -> None:
        self.tree = tree
        self.name = "zkconsumer" if tree is None else f"zkconsumer ({tree})"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.tree is not None:
            env["PYTHONPATH"] = str(self.tree)
        return env

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-c", _CLI, *args]

    def cwd(self) -> str | None:
        return None if self.tree is None else str(self.tree)

    def compile(self) -> None:
        """Bytecode for the checkout's sources, as pip writes it for an installed package: where
        PYTHONDONTWRITEBYTECODE is set, a checkout without it compiles every module at every
        start, which no installed zkconsumer (nor kafka-python, the peer) pays."""
        package = Path(zkconsumer.__file__).parent if self.tree is None else self.tree / "zkconsumer"
        compileall.compile_dir(str(package), quiet=1)


# -- measuring --------------------------------------------------------------------------------

def cpu_s(pid: int) -> float:
    """The process's CPU time so far (user + system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S


def whole_run(command: list[str], env: dict[str, str], cwd: str | None) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of a command to its end."""
    before = os.times()
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - started
    after = os.times()
    return wall, (after.children_user - before.children_user
                  + after.children_system - before.children_system)


def until(processes: list[subprocess.Popen], done: Callable[[], bool], timeout_s: float
          ) -> tuple[float, float]:
    """(wall, CPU of `processes`) seconds from now until `done()`; the processes are stopped
    afterwards either way."""
    started = time.perf_counter()
    try:
        while not done():
            if time.perf_counter() - started > timeout_s:
                raise RuntimeError(f"not done within {timeout_s}s")
            for process in processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a member exited with {process.returncode}")
            time.sleep(0.02)
        wall = time.perf_counter() - started
        return wall, sum(cpu_s(process.pid) for process in processes)
    finally:
        stop(processes)


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + 30
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def median_row(name: str, runs: list[tuple[float, float]]) -> tuple[float, float]:
    wall = statistics.median(run[0] for run in runs)
    cpu = statistics.median(run[1] for run in runs)
    print(f"  {name:<58} {wall:>8.3f} s wall {cpu:>8.3f} s CPU  ({len(runs)} runs, wall "
          f"{min(r[0] for r in runs):.3f}-{max(r[0] for r in runs):.3f})")
    return wall, cpu


def ratios(name: str, ours: tuple[float, float], peer: tuple[float, float], peer_name: str
           ) -> None:
    print(f"  {name}: {ours[0] / peer[0]:.2f}x {peer_name}'s wall time, "
          f"{ours[1] / peer[1]:.2f}x its CPU time")


# -- what a group looks like ------------------------------------------------------------------

class GroupWatch:
    """Kafka's coordinator asked about one group at a time (kafka-python's admin client)."""

    def __init__(self, bootstrap: str) -> None:
        from kafka import KafkaAdminClient

        self._admin = KafkaAdminClient(bootstrap_servers=bootstrap, api_version=API_VERSION)

    def settled(self, group: str, members: int, partitions: int) -> bool:
        """Stable, with `members` members and every one of `partitions` partitions assigned."""
        from kafka.errors import KafkaError

        try:
            found = self._admin.describe_groups([group])[group]
        except KafkaError:  # no coordinator yet (a 0.9 broker's offsets topic being made)
            return False
        if found.get("error") or found.get("group_state") != "Stable":
            return False
        if len(found["members"]) != members:
            return False
        assigned = set()
        for member in found["members"]:
            assignment = member.get("member_assignment") or {}
            for topic in assignment.get("assigned_partitions") or []:
                assigned.update((topic["topic"], p) for p in topic["partitions"])
        return len(assigned) == partitions

    def close(self) -> None:
        self._admin.close()


def kafka_member_command(kind: Zkconsumer | None, bootstrap: str, group: str, topic: str
                         ) -> list[str]:
    if kind is None:
        return [sys.executable, "-c", _KAFKA_PYTHON_MEMBER, bootstrap, group, topic,
                str(SESSION_TIMEOUT_MS), str(HEARTBEAT_INTERVAL_MS)]
    return kind.command(
        "--log-level", "warning", "consume", "--bootstrap-server", bootstrap, "--group", group,
        "--topic", topic, "--format", "value",
        "--property", "group.coordination=kafka",
        "--property", "kafka.api.version=" + ".".join(map(str, API_VERSION)),
        "--property", f"session.timeout.ms={SESSION_TIMEOUT_MS}",
        "--property", f"heartbeat.interval.ms={HEARTBEAT_INTERVAL_MS}")


def start_group(kind: Zkconsumer | None, bootstrap: str, topic: str, partitions: int,
                members: int, watch: GroupWatch) -> tuple[float, float]:
    """`members` processes started together until their group is Stable and assigned."""
    group = f"start-{members}-{time.time_ns()}"
    env = os.environ if kind is None else kind.env()
    cwd = None if kind is None else kind.cwd()
    processes = [subprocess.Popen(kafka_member_command(kind, bootstrap, group, topic), env=env,
                                  cwd=cwd, stdout=subprocess.DEVNULL)
                 for _ in range(members)]
    return until(processes, lambda: watch.settled(group, members, partitions), FLEET_TIMEOUT_S)


# -- the scenarios ----------------------------------------------------------------------------

def command_line(contenders: list[Zkconsumer], runs: int) -> None:
    print("-- the command line: `zkconsumer --help` against `import kafka` (kafka-python)")
    results: dict[str, list[tuple[float, float]]] = {}
    peer = "import kafka (kafka-python)"
    for _ in range(runs + 1):  # the first round warms the page cache and is not counted
        for kind in contenders:
            results.setdefault(kind.name, []).append(
                whole_run(kind.command("--help"), kind.env(), kind.cwd()))
        results.setdefault(peer, []).append(
            whole_run([sys.executable, "-c", "import kafka"], dict(os.environ), None))
    peer_row = median_row(peer, results[peer][1:])
    for kind in contenders:
        row = median_row(f"{kind.name} --help", results[kind.name][1:])
        ratios(f"{kind.name} --help", row, peer_row, "import kafka")


def registered(contenders: list[Zkconsumer], zookeeper: str, topic: str, runs: int) -> None:
    print("-- one worker on ZooKeeper until it is registered (/consumers/<group>/ids)")
    results: dict[str, list[tuple[float, float]]] = {}
    with zookeeper_session(zookeeper) as zk:
        for _ in range(runs):
            for kind in contenders:
                group = f"start-zk-{time.time_ns()}"
                ids = f"/consumers/{group}/ids"
                process = subprocess.Popen(
                    kind.command("--log-level", "warning", "consume", "--zookeeper", zookeeper,
                                 "--group", group, "--topic", topic, "--format", "value"),
                    env=kind.env(), cwd=kind.cwd(), stdout=subprocess.DEVNULL)
                results.setdefault(kind.name, []).append(until(
                    [process], lambda ids=ids: bool(zk.exists(ids) and zk.get_children(ids)),
                    120))
    for kind in contenders:
        median_row(f"{kind.name} consume, registered", results[kind.name])


def kafka_coordinated(contenders: list[Zkconsumer], bootstrap: str, topic: str, partitions: int,
                      members: int, rounds: int, label: str) -> None:
    print(f"-- {label}: {members} member(s) on Kafka's coordinator, {partitions} partitions, "
          "until Stable with every partition assigned")
    peer = "kafka-python KafkaConsumer"
    results: dict[str, list[tuple[float, float]]] = {}
    watch = GroupWatch(bootstrap)
    try:
        for _ in range(rounds):
            for kind in [None, *contenders]:
                name = peer if kind is None else f"{kind.name} consume"
                results.setdefault(name, []).append(
                    start_group(kind, bootstrap, topic, partitions, members, watch))
    finally:
        watch.close()
    peer_row = median_row(peer, results[peer])
    for kind in contenders:
        row = median_row(f"{kind.name} consume", results[f"{kind.name} consume"])
        ratios(f"{kind.name} consume", row, peer_row, "KafkaConsumer")


def warm_up(bootstrap: str, topic: str, partitions: int) -> None:
    """A 0.9 broker creates its offsets topic at the first group's request: a throw-away group
    first, so that no contender pays for it."""
    watch = GroupWatch(bootstrap)
    try:
        start_group(None, bootstrap, topic, partitions, 1, watch)
    finally:
        watch.close()


def start(cluster: LocalCluster, args) -> None:
    """The scenario on a running cluster (also `scripts/bench --only start`)."""
    contenders = [Zkconsumer()]
    if getattr(args, "baseline_tree", None):
        contenders.append(Zkconsumer(Path(args.baseline_tree).resolve()))
    for kind in contenders:
        kind.compile()
    topic = f"start-{args.start_fleet_partitions}"
    with zookeeper_session(cluster.zookeeper_connect) as zk:
        create_topic(zk, topic, args.start_fleet_partitions)
    wait_for_broker_metadata(cluster.brokers[min(cluster.brokers)].port, topic,
                             args.start_fleet_partitions)
    warm_up(cluster.bootstrap_servers, topic, args.start_fleet_partitions)
    command_line(contenders, args.start_runs)
    registered(contenders, cluster.zookeeper_connect, topic, args.start_runs)
    kafka_coordinated(contenders, cluster.bootstrap_servers, topic, args.start_fleet_partitions, 1,
                      args.start_runs, "one worker")
    kafka_coordinated(contenders, cluster.bootstrap_servers, topic, args.start_fleet_partitions,
                      args.start_fleet, args.start_fleet_rounds, "the fleet")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--start-runs", type=int, default=5,
                        help="runs of each single start (--help, one worker)")
    parser.add_argument("--start-fleet", type=int, default=30, help="workers started together")
    parser.add_argument("--start-fleet-partitions", type=int, default=300)
    parser.add_argument("--start-fleet-rounds", type=int, default=3,
                        help="fleet starts of each contender, alternating")
    parser.add_argument("--baseline-tree",
                        help="another zkconsumer checkout to measure alongside")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zkconsumer-bench-start-") as scratch:
        cluster = LocalCluster.start(Path(scratch) / "cluster", brokers=1)
        try:
            start(cluster, args)
        finally:
            cluster.stop(remove_data=True)


if __name__ == "__main__":
    main()

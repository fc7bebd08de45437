"""How soon Burrow and `zkconsumer exporter` give WARN and ERR on the same two groups; run by
hand, not part of the suite:

    zkconsumer cluster start --work-dir DIR
    python scripts/burrow_timing.py --work-dir DIR [--burrow /usr/bin/Burrow] [--interval 5]

A topic receives --rate records a second. Two groups are written into ZooKeeper as the Scala
consumer leaves them, each with a registered member owning its partition and committing every
--commit-interval seconds: `lagging` reads a quarter of what arrives (WARN), `hung` keeps up
a few records behind until it stops committing after --hang-after seconds (STALL for the
exporter, STOP for Burrow: a legacy consumer rewrites no unchanged offset, so Burrow sees
no commit at all; both are ERR as a group). Burrow (its `kafka_zk` consumer module, a ring of
--window-samples commits, broker offsets refreshed every second, evaluations cached for one)
and the exporter (a scan every --interval, a window of --window-samples scans) run side by
side from before the first commit; each group's status is asked of both every half second.
Printed: the seconds from the first commit to each tool's first WARN (and first ERR, a false
alarm there) for `lagging`, from the last commit to the moment `hung` is ERR for good, and
what each said of `hung` while it was still committing.

Run it with PYTHONPATH set to another checkout to time that checkout's exporter.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from kafka import KafkaProducer
from kazoo.client import KazooClient

from zkconsumer.localcluster import LocalCluster, create_topic
from zkconsumer.znodes.consumers import ConsumerRegistration, encode_offset
from zkconsumer.znodes.paths import GroupPaths

POLL_S = 0.5


def main() -> None:
    args = _arguments()
    cluster = LocalCluster.load(args.work_dir)
    prefix = f"timing-{int(time.time())}"
    topic, lagging, hung = f"{prefix}-topic", f"{prefix}-lagging", f"{prefix}-hung"
    zk = KazooClient(cluster.zookeeper_connect)
    zk.start()
    create_topic(zk, topic, 1)
    producer = _Producer(cluster.bootstrap_servers, topic, args.rate)
    producer.start()
    with tempfile.TemporaryDirectory() as scratch:
        burrow_port, exporter_port = _free_port(), _free_port()
        burrow = _start_burrow(args.burrow, Path(scratch), cluster, burrow_port, prefix,
                               args.window_samples)
        exporter = subprocess.Popen(
            [sys.executable, "-m", "zkconsumer", "exporter", "--zookeeper",
             cluster.zookeeper_connect, "--port", str(exporter_port), "--interval",
             f"{args.interval}s", "--window-samples", str(args.window_samples), "--group-regex",
             f"{prefix}-.*", "--no-kafka-offsets", "--property", "kafka.api.version=0.9"],
            cwd=scratch, stdout=subprocess.DEVNULL,
            stderr=open(Path(scratch) / "exporter.log", "w"))  # cwd: PYTHONPATH picks the code
        try:
            _wait_for(lambda: _get(burrow_port, f"/v3/kafka/local/topic/{topic}"),
                      "Burrow to read the topic's log end")
            _wait_for(lambda: _get(exporter_port, "/v3/kafka"), "the exporter to serve")
            for group in (lagging, hung):
                _register(zk, group, topic)
            times = _run_scenario(zk, args, producer, topic, lagging, hung,
                                  {"Burrow": burrow_port, "exporter": exporter_port})
        finally:
            for process in (exporter, burrow):
                process.terminate()
                process.wait(30)
            producer.stop()
            zk.stop()
    print(json.dumps(times, indent=2))


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-dir", type=Path, required=True,
                        help="the folder of a cluster started by `zkconsumer cluster start`")
    parser.add_argument("--burrow", default="/usr/bin/Burrow")
    parser.add_argument("--interval", type=float, default=5.0, help="the exporter's, seconds")
    parser.add_argument("--window-samples", type=int, default=10)
    parser.add_argument("--commit-interval", type=float, default=5.0)
    parser.add_argument("--rate", type=int, default=20, help="records a second")
    parser.add_argument("--hang-after", type=float, default=30.0)
    parser.add_argument("--watch", type=float, default=90.0,
                        help="seconds to watch after the hung group's last commit")
    return parser.parse_args()


def _run_scenario(zk: KazooClient, args, producer: _Producer, topic: str, lagging: str,
                  hung: str, ports: dict[str, int]) -> dict:
    started = time.time()
    answers: dict[tuple[str, str], list[tuple[float, str | None]]] = {
        (tool, group): [] for tool in ports for group in (lagging, hung)}
    last_hung_commit = started
    next_commit = started
    behind = (40, 30)  # the hung group alternates, so that its lag is never zero nor rising
    commits = 0
    while time.time() < last_hung_commit + args.watch:
        now = time.time()
        if now >= next_commit:
            produced = producer.count()
            _commit(zk, lagging, topic, int(args.rate / 4 * (now - started)))
            if now - started < args.hang_after:
                _commit(zk, hung, topic, max(0, produced - behind[commits % 2]))
                last_hung_commit = now
            commits += 1
            next_commit += args.commit_interval
        for (tool, group), answered in answers.items():
            answered.append((time.time(), _status(ports[tool], group)))
        time.sleep(POLL_S)

    def first(tool: str, group: str, status: str, since: float) -> float | None:
        return next((round(at - since, 1) for at, seen in answers[tool, group]
                     if seen == status and at >= since), None)

    def settled(tool: str, group: str, status: str, since: float) -> float | None:
        """When the answers turned `status` for good."""
        answered = [(at, seen) for at, seen in answers[tool, group] if at >= since]
        ending = len(answered)
        while ending and answered[ending - 1][1] == status:
            ending -= 1
        return None if ending == len(answered) else round(answered[ending][0] - since, 1)

    return {tool: {"lagging: first WARN, s after the first commit": first(
                       tool, lagging, "WARN", started),
                   "lagging: first ERR, s after the first commit": first(
                       tool, lagging, "ERR", started),
                   "hung: ERR for good, s after its last commit": settled(
                       tool, hung, "ERR", last_hung_commit),
                   "hung: answers before the hang": sorted(
                       {str(seen) for at, seen in answers[tool, hung]
                        if at < last_hung_commit})}
            for tool in ports}


class _Producer:
    """`rate` records a second, counted once sent (the log end, as near as it can be known)."""

    def __init__(self, servers: str, topic: str, rate: int) -> None:
        self._producer = KafkaProducer(bootstrap_servers=servers, api_version=(0, 9))
        self._topic, self._rate = topic, rate
        self._sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def count(self) -> int:
        return self._sent

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._producer.close()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            for _ in range(self._rate):
                self._producer.send(self._topic, b"x", partition=0)
            self._producer.flush()
            self._sent += self._rate


def _register(zk: KazooClient, group: str, topic: str) -> None:
    """A member registered and owning partition 0, as a live Scala consumer is."""
    paths = GroupPaths(group)
    consumer_id = f"{group}_timing-1700000000000-abcdef01"
    zk.create(paths.member(consumer_id),
              ConsumerRegistration.static({topic: 1}, 1700000000000).encode(), ephemeral=True,
              makepath=True)
    zk.create(paths.owner(topic, 0), f"{consumer_id}-0".encode(), ephemeral=True, makepath=True)


def _commit(zk: KazooClient, group: str, topic: str, offset: int) -> None:
    path = GroupPaths(group).offset(topic, 0)
    if zk.exists(path):
        zk.set(path, encode_offset(offset))
    else:
        zk.create(path, encode_offset(offset), makepath=True)


def _start_burrow(binary: str, folder: Path, cluster: LocalCluster, port: int, prefix: str,
                  intervals: int) -> subprocess.Popen:
    zookeeper = json.dumps([cluster.zookeeper_connect])
    brokers = json.dumps(cluster.bootstrap_servers.split(","))
    (folder / "burrow.toml").write_text(f"""
[general]
pidfile="{folder}/burrow.pid"
[logging]
filename="{folder}/burrow.log"
level="info"
[zookeeper]
servers={zookeeper}
root-path="/burrow-{prefix}"
[client-profile.local]
kafka-version="0.9.0.1"
[cluster.local]
class-name="kafka"
servers={brokers}
client-profile="local"
topic-refresh=2
offset-refresh=1
[consumer.local_zk]
class-name="kafka_zk"
cluster="local"
servers={zookeeper}
group-whitelist="^{prefix}-.*$"
[storage.default]
class-name="inmemory"
intervals={intervals}
min-distance=1
expire-group=604800
[evaluator.default]
class-name="caching"
expire-cache=1
[httpserver.default]
address="127.0.0.1:{port}"
""")
    return subprocess.Popen([binary, "-config-dir", str(folder)], cwd=folder,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _status(port: int, group: str) -> str | None:
    answer = _get(port, f"/v3/kafka/local/consumer/{group}/status")
    return None if answer is None else answer.get("status", {}).get("status")


def _get(port: int, path: str) -> dict | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return json.loads(reply.read() or b"{}")
    except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
        return None


def _wait_for(condition, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {what}")
        time.sleep(POLL_S)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()

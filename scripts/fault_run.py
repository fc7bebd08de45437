"""Fault injection: zkconsumer workers keep consuming while workers, brokers and ZooKeeper fail.

Starts its own local cluster (loopback only), a producer writing messages with unique ids and
several `zkconsumer consume` workers in one group, then injects faults chosen at random but
reproducibly from --seed: SIGKILL of a worker, a graceful restart of one, a forced ZooKeeper
session expiry of one (it is frozen with SIGSTOP past its session timeout), a broker restart and
a ZooKeeper server restart. Every kind happens at least once. Invariants are checked all along:
no partition owned by a member that is not registered, committed offsets never going backwards;
and at the end: every message consumed, duplicates only from members that died, within what
they had not committed. It stops by itself and prints a report; exit status 1 if an invariant
broke.

    .venv/bin/python scripts/fault_run.py [--seed 7] [--rounds 30] [--workers 3]
"""

from __future__ import annotations

import argparse
import logging
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

from kafka import KafkaProducer

from zkconsumer.assignment import consumer_of_thread
from zkconsumer.localcluster import LocalCluster, create_topic
from zkconsumer.localcluster.consume_process import ConsumeProcess
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import ZookeeperOffsetStore
from zkconsumer.zk.group_state import committed_partitions, read_members, read_owners
from zkconsumer.zk.session import zookeeper_session

FAULTS = ("kill", "restart", "expire", "broker", "zookeeper")
GROUP = "fault-run"
TOPIC = "fault-run"
SESSION_TIMEOUT_MS = 4000  # the server's minimum (two ticks), so expiry is quick to force


class Worker(ConsumeProcess):
    """A worker of the run, and how it ended."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self.fate = "running"  # running | stopped | killed
        # Committed offsets at each unclean end (kill) or interruption (session expiry): what
        # this worker delivered from there on may legitimately be delivered again by others.
        self.unclean_at: list[dict] = []


class Run:
    def __init__(self, cluster: LocalCluster, work: Path, args) -> None:
        self.cluster = cluster
        self.work = work
        self.args = args
        self.rng = random.Random(args.seed)
        self.workers: list[Worker] = []
        self.produced: list[str] = []
        self.violations: list[str] = []
        self.faults: Counter = Counter()
        self.longest_unowned_s: dict[int, float] = defaultdict(float)
        self.committed: dict[TopicPartition, int] = {}
        self.rounds = 0
        self._stop = threading.Event()
        self._sequence = 0

    # -- workers ----------------------------------------------------------------------------

    def start_worker(self) -> Worker:
        self._sequence += 1
        name = f"w{self._sequence}"
        worker = Worker(self.cluster.zookeeper_connect, GROUP, TOPIC, self.work, name,
                        "--property", "auto.commit.interval.ms=1000",
                        "--property", "rebalance.backoff.ms=1000",
                        "--property", "rebalance.max.retries=20",
                        "--property", f"zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}")
        self.workers.append(worker)
        return worker

    def replace_exited_workers(self) -> None:
        """A worker must only stop when told to: any other exit breaks the run's promise."""
        for worker in self.workers:
            if worker.fate == "running" and worker.process.poll() is not None:
                worker.fate = "stopped"
                self.violations.append(f"{worker.name} exited by itself with "
                                       f"{worker.process.returncode}: {worker.log_tail(1)[:300]}")
                self.start_worker()

    def running(self) -> list[Worker]:
        return [w for w in self.workers if w.fate == "running" and w.process.poll() is None]

    def victims(self) -> list[Worker]:
        """Running workers that are past start-up (a signal during Python's own start-up,
        before any handler exists, would test the interpreter, not zkconsumer)."""
        return [w for w in self.running() if w.rebalance_ms()] or self.running()

    # -- background: producer and invariant sampler -------------------------------------------

    def produce(self) -> None:
        producer = KafkaProducer(bootstrap_servers=self.cluster.bootstrap_servers,
                                 api_version=(0, 9), acks=1, retries=10, linger_ms=5)
        n = 0
        try:
            while not self._stop.is_set():
                message_id = f"m-{n:07d}"
                try:
                    producer.send(TOPIC, message_id.encode(),
                                  partition=n % self.args.partitions).get(timeout=30)
                except Exception:  # noqa: BLE001 - the broker is down: send the same id again
                    time.sleep(0.5)
                    continue
                self.produced.append(message_id)
                n += 1
                time.sleep(1.0 / self.args.rate)
        finally:
            producer.close(timeout=10)

    def sample(self) -> None:
        last_offsets: dict[TopicPartition, int] = {}
        unowned_since: dict[int, float] = {}
        while not self._stop.is_set():
            try:
                with zookeeper_session(self.cluster.zookeeper_connect, timeout_s=10) as zk:
                    while not self._stop.is_set():
                        before = set(read_members(zk, GROUP))
                        owners = read_owners(zk, GROUP)
                        live = before | set(read_members(zk, GROUP))
                        for tp, thread in owners.items():
                            if consumer_of_thread(thread) not in live:
                                self.violations.append(f"{tp} owned by unregistered {thread}")
                        now = time.monotonic()
                        for p in range(self.args.partitions):
                            if TopicPartition(TOPIC, p) in owners:
                                unowned_since.pop(p, None)
                            else:
                                since = unowned_since.setdefault(p, now)
                                self.longest_unowned_s[p] = max(self.longest_unowned_s[p],
                                                                now - since)
                        offsets = ZookeeperOffsetStore(zk, GROUP).fetch(
                            committed_partitions(zk, GROUP))
                        for tp, offset in offsets.items():
                            if offset < last_offsets.get(tp, -1):
                                self.violations.append(f"{tp} committed offset went back "
                                                       f"{last_offsets[tp]} -> {offset}")
                            last_offsets[tp] = max(offset, last_offsets.get(tp, -1))
                        self.committed = dict(last_offsets)
                        time.sleep(0.1)
            except Exception:  # noqa: BLE001 - ZooKeeper is restarting: sample again after it
                time.sleep(0.5)

    # -- faults ------------------------------------------------------------------------------

    def inject(self, kind: str) -> None:
        self.faults[kind] += 1
        if kind in ("kill", "restart", "expire"):
            victim = self.rng.choice(self.victims())
            print(f"  victim: {victim.name}", file=sys.stderr, flush=True)
            if kind in ("kill", "expire"):
                victim.unclean_at.append(dict(self.committed))
            if kind == "kill":
                victim.process.kill()
                victim.process.wait(timeout=30)
                victim.fate = "killed"
                self.start_worker()
            elif kind == "restart":
                victim.process.send_signal(signal.SIGTERM)
                code = victim.process.wait(timeout=60)
                if code != 0:
                    self.violations.append(f"{victim.name} exited {code} on SIGTERM")
                victim.fate = "stopped"
                self.start_worker()
            else:
                victim.process.send_signal(signal.SIGSTOP)
                time.sleep(SESSION_TIMEOUT_MS / 1000.0 + 3.0)  # past the session's expiry
                victim.process.send_signal(signal.SIGCONT)
        elif kind == "broker":
            self.cluster.stop_broker(0, graceful=self.rng.random() < 0.5)
            self.cluster.start_broker(0)
        else:
            self.cluster.restart_zookeeper(graceful=self.rng.random() < 0.5)

    def schedule(self) -> list[str]:
        kinds = list(FAULTS) + [self.rng.choice(FAULTS)
                                for _ in range(max(0, self.args.rounds - len(FAULTS)))]
        self.rng.shuffle(kinds)
        return kinds

    # -- the run ------------------------------------------------------------------------------

    def run(self) -> bool:
        with zookeeper_session(self.cluster.zookeeper_connect) as zk:
            create_topic(zk, TOPIC, self.args.partitions)
        for _ in range(self.args.workers):
            self.start_worker()
        background = [threading.Thread(target=self.produce, daemon=True),
                      threading.Thread(target=self.sample, daemon=True)]
        for thread in background:
            thread.start()
        started = time.monotonic()
        for round_number, kind in enumerate(self.schedule(), start=1):
            if time.monotonic() - started > self.args.max_seconds:
                print(f"time limit reached after {round_number - 1} rounds", file=sys.stderr)
                break
            time.sleep(self.rng.uniform(self.args.min_gap, self.args.max_gap))
            self.replace_exited_workers()
            print(f"round {round_number}: {kind}", file=sys.stderr, flush=True)
            self.inject(kind)
        self.rounds = sum(self.faults.values())
        time.sleep(self.args.max_gap)
        self._stop.set()
        for thread in background:
            thread.join(timeout=60)
        produced = set(self.produced)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not produced <= self.consumed_ids():
            time.sleep(0.5)
        for worker in self.running():
            worker.process.send_signal(signal.SIGTERM)
        for worker in self.workers:
            try:
                worker.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                worker.process.kill()
        return self.report(produced)

    def consumed_ids(self) -> set[str]:
        return {r["value"] for w in self.workers for r in w.records()}

    def report(self, produced: set[str]) -> bool:
        deliveries = defaultdict(list)
        for worker in self.workers:
            for record in worker.records():
                deliveries[(record["partition"], record["offset"])].append(worker)
        consumed = {r["value"] for w in self.workers for r in w.records()}
        lost = produced - consumed
        duplicates = {key: ws for key, ws in deliveries.items() if len(ws) > 1}
        for (partition, offset), ws in duplicates.items():
            tp = TopicPartition(TOPIC, partition)
            window_ok = any(offset >= snapshot.get(tp, 0)
                            for w in ws for snapshot in w.unclean_at)
            if not window_ok:
                self.violations.append(f"partition {partition} offset {offset} delivered by "
                                       f"{', '.join(w.name for w in ws)} outside any dead "
                                       "member's uncommitted window")
        rebalances = sorted(ms for w in self.workers for ms in w.rebalance_ms())
        rows = [
            ("seed", self.args.seed),
            ("rounds", self.rounds),
            *((f"faults: {kind}", self.faults[kind]) for kind in FAULTS),
            ("workers started", len(self.workers)),
            ("messages produced", len(produced)),
            ("messages consumed", len(consumed & produced)),
            ("lost", len(lost)),
            ("duplicates", len(duplicates)),
            ("invariant violations", len(self.violations)),
            ("longest unowned, per partition (s)",
             " ".join(f"{p}:{self.longest_unowned_s[p]:.1f}"
                      for p in range(self.args.partitions))),
            ("rebalances", len(rebalances)),
            ("rebalance ms p50 / p99 / max", _percentiles(rebalances)),
        ]
        width = max(len(name) for name, _ in rows)
        for name, value in rows:
            print(f"{name:<{width}}  {value}")
        for violation in self.violations[:10]:
            print(f"VIOLATION: {violation}")
        return not lost and not self.violations


def _percentiles(values: list[int]) -> str:
    if not values:
        return "-"
    def at(q: float) -> int:
        return values[min(len(values) - 1, int(q * len(values)))]
    return f"{at(0.5)} / {at(0.99)} / {values[-1]}"


def main(argv: list[str] | None = None) -> int:
    # The sampler's own ZooKeeper client sees the restarts too; its warnings are expected.
    for library in ("kazoo", "kafka"):
        logging.getLogger(library).setLevel(logging.CRITICAL)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--rate", type=float, default=200.0, help="messages per second")
    parser.add_argument("--min-gap", type=float, default=2.0, help="seconds between faults")
    parser.add_argument("--max-gap", type=float, default=6.0)
    parser.add_argument("--max-seconds", type=float, default=1800.0,
                        help="stop injecting after this long, whatever --rounds says")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep the workers' output and logs in DIR (default: removed)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="zkconsumer-faults-") as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        cluster = LocalCluster.start(work / "cluster", brokers=1)
        try:
            ok = Run(cluster, work, args).run()
        finally:
            cluster.stop(remove_data=args.keep is None)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

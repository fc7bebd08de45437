"""Fault injection: zkconsumer workers keep consuming while workers, brokers and ZooKeeper fail.

Starts its own local cluster (loopback only; with --brokers 3, three brokers replicating every
topic, the offsets topic too, three times), a producer writing messages with unique ids and
several workers in one group, each connected to ZooKeeper through its own cuttable proxy, then
injects faults chosen at random but reproducibly from --seed, every kind at least once (or
those named by --kinds):

  kill            SIGKILL of a worker
  restart         a graceful restart of one (SIGTERM, then a new worker)
  expire          a worker frozen (SIGSTOP) past its session timeout, then thawed
  freeze          a worker whose application is made slow (12 ms a message) and given a backlog
                  frozen (SIGSTOP) for more than twice its session while the others take its
                  partitions, then thawed: it must hand out none of the messages the others
                  delivered while it was frozen (its lease lapsed); then it is quick again
  broker          a broker restart (one of them, with several)
  zookeeper       a restart of the brokers' ZooKeeper server
  zk-cut          one worker's ZooKeeper connection cut (it keeps running and fetching) until its
                  session expired and others took its partitions, just as another worker leaves
  offsets-outage  the broker (every broker, cleanly when there are several) stopped while a
                  worker leaves, so members using Kafka offset storage rebalance without their
                  offset store; then started again
  callback-raise  a worker restarted as a Python-API member whose on_partitions_assigned
                  raises: it must fail loudly and own nothing; then it is replaced
  fresh-restart   a partition added to the topic, its first owner (which reset it to the log end
                  by auto.offset.reset=largest and delivered nothing) restarted before anything
                  is produced there; then everything produced there must be consumed
  slow-handler    one worker's handler busy with a message for longer than a session (and the
                  rebalance timeout) while another worker restarts: the group rebalances
                  meanwhile, and the slow worker must deliver nothing more of a partition
                  that moved
  cutover         the group moved to Kafka's group coordinator by `zkconsumer group cutover
                  --execute` while it consumes, and after a while back to ZooKeeper the same
                  way: the workers follow it in the same process each time

and with replicated brokers (--brokers 2 or more):

  leader-kill       a partition's leader SIGKILLed: a follower takes over once the controller
                    sees the broker's session expire; the broker is started again a little later
  leader-move       a partition's leadership moved to another in-sync replica, as an operator
                    does (reassignment to the same replicas in a new order, then a preferred
                    replica election)
  coordinator-move  the group's coordinator moved on purpose: its offsets topic partition's
                    leadership moved to another in-sync replica, as leader-move does (and a 0.9
                    controller moving leaders back to their preferred replicas); no worker
                    restarts, so members on Kafka's coordinator keep their generation
  coordinator-kill  the broker coordinating the group (leading the offsets topic's partition
                    that keeps its Kafka-stored offsets) SIGKILLed while a worker restarts, so
                    the group rebalances while its Kafka offset store moves; started again after
  broker-rolling    every broker restarted in turn (SIGTERM, or SIGKILL), the next one only once
                    every replica is back in sync, as an upgrade does

and with the group on a ZooKeeper ensemble (--zookeepers 3: Debian's ZooKeeper 3.8; the brokers
keep the bundle's server, and workers find them through bootstrap.servers):

  zk-leader-kill       the ensemble's leader SIGKILLed; started again once another leads
  zk-quorum-loss       a majority of the ensemble stopped for a few seconds, then started again
  zk-rolling           every server of the ensemble restarted in turn
  crash-then-failover  a worker SIGKILLed and a new one started, then the ensemble's leader
                       stopped within the dead worker's session timeout: the new leader gives
                       every session a fresh timeout, so the dead worker's owner znodes outlive
                       twice the session timeout from the crash; no survivor may give up, and
                       its partitions must find a live owner once ZooKeeper ended its session
                       (how long that took after the failover is in the report)

About half the workers use offsets.storage=kafka with dual commit, the rest ZooKeeper: the
group is always in the documented rolling-migration state, the ZooKeeper sampler still sees
every offset, and a worker on ZooKeeper storage is there to leave during a Kafka outage while
the others rebalance without their store. The first workers start with --from-beginning (the
producer starts with them, before any member could reset to the log end); the run waits until
every partition has a committed offset before the first fault, and every later worker runs on
the default auto.offset.reset=largest, which a fresh partition then exercises.

With --coordination kafka the workers are members of a group on Kafka's group coordinator
(group.coordination=kafka, no ZooKeeper; offsets in Kafka) and every kind runs but those of
ZooKeeper coordination (zk-cut, cutover, the ensemble's); who owns what is read from the
coordinator (DescribeGroups), as it is while a cutover round has the group there.

Every worker notes when it handed out each message (zkconsumer.testing.delivery_log): two
workers delivering one partition at the same time is a violation, whatever else holds.

Invariants, checked all along: no partition owned by a member that is not registered,
committed offsets (ZooKeeper and Kafka) never going back, no worker exiting unless told to (or
failed on purpose), a worker cut off from ZooKeeper delivering nothing from shortly after the
cut until it is restored, a reset partition committed though nothing was delivered from it;
and at the end: every message consumed, and duplicates only from an interrupted worker (killed,
session lost, offset store down, failed), of what it had delivered before the interruption
from the offsets committed then, or of the message a worker had in hand when its generation of
Kafka's coordinator passed (the parting commit names it as the next to consume). It stops by itself and prints a report; exit status 1 if an
invariant broke.

    .venv/bin/python scripts/fault_run.py [--seed 7] [--rounds 30] [--workers 3] [--brokers 3]
                                          [--zookeepers 3] [--kinds leader-kill,zk-rolling]
                                          [--coordination kafka]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import logging
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

from zkconsumer.assignment import consumer_of_thread
from zkconsumer.fetch.brokers import KafkaAccess
from zkconsumer.localcluster import (
    ClusterError,
    EnsembleError,
    LocalCluster,
    ZookeeperEnsemble,
    add_partition,
    create_topic,
)
from zkconsumer.localcluster.topics import (
    OFFSETS_TOPIC,
    TopicCreationError,
    move_leader,
    offsets_partition,
    partition_state,
    wait_for_leader,
    wait_until_in_sync,
)
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import KafkaOffsetStore, ZookeeperOffsetStore
from zkconsumer.offsets.coordinator_groups import read_coordinator_group
from zkconsumer.offsets.kafka_reader import GroupOffsetsReader
from zkconsumer.testing import delivery_log
from zkconsumer.testing.consume_process import API_WORKER, CLI, ConsumeProcess
from zkconsumer.testing.delivery_overlap import overlaps
from zkconsumer.testing.tcp_proxy import TcpProxy
from zkconsumer.zk.group_state import committed_partitions, read_members, read_owners
from zkconsumer.zk.session import zookeeper_session
from zkconsumer.znodes.fence import Fence
from zkconsumer.znodes.paths import GroupPaths

FAULTS = ("kill", "restart", "expire", "freeze", "broker", "zookeeper", "zk-cut",
          "offsets-outage", "callback-raise", "fresh-restart", "slow-handler", "cutover")
# Kinds that need the group on ZooKeeper (see the module's doc); the ensemble's too. A cutover
# moves a ZooKeeper-coordinated group: workers started on Kafka's coordinator without
# zookeeper.connect, as the runner starts them, cannot be fenced.
ZOOKEEPER_COORDINATION_ONLY = ("zk-cut", "cutover")
COORDINATIONS = ("zookeeper", "kafka")
# Faults of replicated brokers, run where there is more than one (see `available_kinds`).
REPLICATED_FAULTS = ("leader-kill", "leader-move", "coordinator-move", "coordinator-kill",
                     "broker-rolling")
# Faults of a ZooKeeper ensemble, run where the group lives on one.
ENSEMBLE_FAULTS = ("zk-leader-kill", "zk-quorum-loss", "zk-rolling", "crash-then-failover")
# Replicas of every topic: three (or as many brokers as there are, if fewer).
MAX_REPLICATION = 3
GROUP = "fault-run"
TOPIC = "fault-run"
PATHS = GroupPaths(GROUP)
SESSION_TIMEOUT_MS = 4000  # the server's minimum (two ticks), so expiry is quick to force
AUTO_COMMIT_MS = 1000
# Members of a group on Kafka's coordinator: the 0.9 broker's shortest session
# (group.min.session.timeout.ms), which on 0.9 is the rebalance timeout too.
KAFKA_SESSION_MS = 6000
# A ZooKeeper-coordinated worker has the settings of both coordinations: a cutover moves it to
# Kafka's in the same process, where it is known by its client id (the worker's name, as a
# worker started there is).
WORKER_OPTIONS = ("--property", f"auto.commit.interval.ms={AUTO_COMMIT_MS}",
                  "--property", "rebalance.backoff.ms=1000",
                  "--property", "rebalance.max.retries=20",
                  "--property", f"zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}",
                  "--property", f"session.timeout.ms={KAFKA_SESSION_MS}",
                  "--property", "heartbeat.interval.ms=500")
KAFKA_WORKER_OPTIONS = ("--property", f"auto.commit.interval.ms={AUTO_COMMIT_MS}",
                        "--property", "group.coordination=kafka",
                        "--property", f"session.timeout.ms={KAFKA_SESSION_MS}",
                        "--property", "heartbeat.interval.ms=500",
                        "--property", "topic.metadata.refresh.interval.ms=1000",
                        "--property", "kafka.api.version=0.9")
# Every CLI worker notes when it delivered what (see zkconsumer.testing.delivery_log).
DELIVERY_HANDLER = ("--handler", "zkconsumer.testing.delivery_log:record")
# Deliveries of a partition by one worker this close together are one stint of its ownership:
# shorter than any rebalance, longer than a fetch's wait (see delivery_overlap).
STINT_GAP_S = 0.3
# A delivery is timed by the handler a moment after it was handed out: stints meeting by less
# than this are a handover timed late, not two workers at once (see delivery_overlap).
OVERLAP_TOLERANCE_S = 0.1
# How long a slow handler takes over one message: longer than either coordinator's session
# (and, on 0.9, the rebalance timeout, which is the session timeout there).
SLOW_HANDLER_S = 7.0
# Kafka offset storage with dual commit; a failed offset request costs seconds, not a minute.
KAFKA_STORAGE = ("--property", "offsets.storage=kafka", "--property", "dual.commit.enabled=true",
                 "--property", "offsets.commit.max.retries=1",
                 "--property", "offsets.channel.backoff.ms=200",
                 "--property", "offsets.channel.socket.timeout.ms=2000")
# A frozen worker's application (freeze), per message, and the burst produced over every
# partition so that it holds more than a session's worth when it is frozen.
FREEZE_DELAY_S = 0.012
FREEZE_BURST = 1200
# How long a worker may still hand out what it holds after it was cut off or thawed: a cut
# drops its ZooKeeper connection, which its client notices at once.
NOTICE_S = 1.5
# How long the broker stays down after the leaver of an offsets-outage left: the others'
# releases and claims meet the missing offset store (and its retries) in the meantime. Also the
# longest a killed leader (a partition's, or the ensemble's) stays down once another leads, and
# the longest an ensemble stays without a majority.
OUTAGE_S = 5.0
# What a member on Kafka's coordinator logs as it learns that its generation passed.
REVOKED = "partitions revoked; delivery and commits stopped for them"
# What the Python-API worker logs as its callback raises.
RAISING = "on_partitions_assigned raising on purpose"
# What a member logs as it stops without having done every step of leaving (`not_done`).
UNFINISHED_LEAVE = "stopped without finishing with "
# Loggers of the client libraries, whose errors (a lost connection) are not zkconsumer's.
LIBRARY_LOGGERS = ("kafka", "kazoo")
# Bounds on waiting for the group; reaching one is reported, never waited past.
SETTLE_S = 60.0
# How long ZooKeeper may take to end a dead member's session after a failover before the run
# stops waiting (the session timeout, each server's tick and elections come first).
DEAD_SESSION_S = 180.0
EXIT_S = 60.0

T = TypeVar("T")


def available_kinds(brokers: int, zookeepers: int, coordination: str = "zookeeper"
                    ) -> tuple[str, ...]:
    """The fault kinds this cluster can suffer: replication faults need a second broker,
    ensemble faults an ensemble that keeps a majority with one server down (and the group on
    it), and some kinds ZooKeeper coordination."""
    if coordination == "kafka":
        return (tuple(kind for kind in FAULTS if kind not in ZOOKEEPER_COORDINATION_ONLY)
                + (REPLICATED_FAULTS if brokers > 1 else ()))
    return (FAULTS + (REPLICATED_FAULTS if brokers > 1 else ())
            + (ENSEMBLE_FAULTS if zookeepers >= 3 else ()))


def wait_for(probe: Callable[[], T], timeout: float, interval: float = 0.1) -> T | None:
    """Poll `probe` until it returns something truthy (returned), or None after `timeout`. A
    ZooKeeper request that fails (the server restarting) counts as not yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = probe()
        except KazooException:
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            return None
        time.sleep(interval)


@dataclasses.dataclass
class Interruption:
    """A moment from which a worker's deliveries were no longer covered by its commits (it was
    killed, its session was lost, its offset store was down, it failed): what it had delivered
    by then, from the offsets the group had committed then, may be delivered again by others."""

    delivered: int  # records the worker had written by then
    committed: dict[TopicPartition, int]


class GroupStranded(Exception):
    """The group is not where the run keeps it (a cutover round could not bring it back):
    later rounds would test something else than they say."""


class Worker(ConsumeProcess):
    """A worker of the run, its own proxy to each ZooKeeper server (none on Kafka's
    coordination), when it delivered what, and how it ended."""

    def __init__(self, proxies: list[TcpProxy], kafka_storage: bool, group: str, topic: str,
                 work: Path, name: str, *args: str, **options: object) -> None:
        self.deliveries = work / f"{name}.deliveries"
        super().__init__(",".join(proxy.address for proxy in proxies) or None, group, topic,
                         work, name, *args,
                         environment={delivery_log.ENVIRONMENT_VARIABLE: str(self.deliveries)},
                         **options)
        self.proxies = proxies
        self.kafka_storage = kafka_storage
        self.fate = "running"  # running | stopped | killed | failed
        self.interruptions: list[Interruption] = []

    def delivered(self) -> int:
        return len(self.records())

    def delivery_times(self) -> list[tuple[int, int, float]]:
        """(partition, offset, time) of each delivery."""
        return delivery_log.read_delivery_times(self.deliveries)

    def slow_down(self, seconds: float) -> Path:
        """Its handler's next message takes `seconds`; the trigger is gone once it began."""
        return self._trigger(delivery_log.SLOW_SUFFIX, seconds)

    def _trigger(self, suffix: str, seconds: float) -> Path:
        """The delivery log's trigger file of `suffix`, holding `seconds`, written whole."""
        trigger = Path(f"{self.deliveries}{suffix}")
        written = trigger.with_suffix(".writing")
        written.write_text(str(seconds))
        written.rename(trigger)
        return trigger

    def slow_down_steadily(self, seconds: float) -> Path:
        """Its handler takes `seconds` over every message until the file returned is gone."""
        return self._trigger(delivery_log.STEADY_SUFFIX, seconds)

    def interrupted(self, committed: dict[TopicPartition, int]) -> None:
        self.interruptions.append(Interruption(self.delivered(), committed))

    def may_be_redelivered(self, tp: TopicPartition, offset: int, index: int) -> bool:
        """Whether its `index`-th delivery, of `offset`, was left uncommitted by an interruption."""
        return any(index < i.delivered and offset >= i.committed.get(tp, 0)
                   for i in self.interruptions)

    def in_hand_at_a_revocation(self, partition: int, offset: int) -> bool:
        """Whether it delivered `offset` as the last message of `partition` before a
        generation of Kafka's coordinator passed: the message was still in hand (its handler
        had it; the next had not been asked for), so the parting commit names it as the next
        to consume, and whoever is given the partition, this worker too, delivers it again."""
        revocations = sorted(_unix_time(line["timestamp"])
                             for line in self.log_events(REVOKED) if "timestamp" in line)
        if not revocations:
            return False
        mine = [(o, at) for p, o, at in delivery_log.read_delivery_times(self.deliveries)
                if p == partition]
        for o, at in mine:
            if o != offset:
                continue
            revoked = next((moment for moment in revocations if moment >= at), None)
            if revoked is not None and not any(at < later <= revoked for _o, later in mine):
                return True
        return False

    def cut(self) -> None:
        for proxy in self.proxies:
            proxy.cut()

    def restore(self) -> None:
        for proxy in self.proxies:
            proxy.restore()

    def close_proxies(self) -> None:
        for proxy in self.proxies:
            proxy.close()

    def ended(self, fate: str) -> None:
        self.fate = fate
        self.close_proxies()


class Run:
    def __init__(self, cluster: LocalCluster, ensemble: ZookeeperEnsemble | None, work: Path,
                 args) -> None:
        self.cluster = cluster
        self.ensemble = ensemble
        # On Kafka's coordination, the group has no ZooKeeper: its members, their partitions
        # and offsets are the coordinator's.
        self.on_kafka = args.coordination == "kafka"
        # Where the group is coordinated now: where it started, but for a cutover round's
        # while on Kafka's coordinator. The samplers read who owns what, and which offsets are
        # the group's, there.
        self.group_on = args.coordination
        # Where the group lives: the ensemble if there is one, else the brokers' ZooKeeper.
        self.group_connect = ensemble.connect_string if ensemble else cluster.zookeeper_connect
        self._group_ports = ([server.client_port for server in ensemble.servers.values()]
                             if ensemble else [cluster.zookeeper.port])
        # Workers away from the brokers' ZooKeeper find brokers, topics and partitions through
        # Kafka (a partition added by fresh-restart within a second).
        self._kafka_discovery = () if ensemble is None else (
            "--property", f"bootstrap.servers={cluster.bootstrap_servers}",
            "--property", "kafka.api.version=0.9",
            "--property", "topic.metadata.refresh.interval.ms=1000")
        # `group cutover` as an operator runs it: with the brokers' addresses when they are not
        # registered in the group's ZooKeeper.
        self._cutover_kafka = () if ensemble is None else (
            "--bootstrap-server", cluster.bootstrap_servers)
        self.work = work
        self.args = args
        self.rng = random.Random(args.seed)
        self.kinds: tuple[str, ...] = args.kinds
        self.replication = min(len(cluster.brokers), MAX_REPLICATION)
        self.workers: list[Worker] = []
        self.partitions = args.partitions  # grows with every fresh-restart
        self.producing = list(range(args.partitions))  # the partitions the producer writes to
        self.produced: dict[str, int] = {}  # message id -> partition
        self.violations: list[str] = []
        self.halted_brokers: list[str] = []  # see `restart_halted_brokers`
        self.faults: Counter = Counter()
        self.longest_unowned_s: dict[int, float] = defaultdict(float)
        self._unowned_since: dict[int, float] = {}  # partition -> since when, as last sampled
        self.dead_session_s: list[float] = []  # per crash-then-failover: failover to expiry
        self.cutover_pauses_ms: list[int] = []  # per cutover step: the longest pause reported
        self.committed: dict[TopicPartition, int] = {}
        self.kafka_committed: dict[TopicPartition, int] = {}  # as last sampled
        # partition -> owning thread (on Kafka's coordination: the member's client id, the
        # worker's name), as last sampled
        self.owners: dict[TopicPartition, str] = {}
        self.members: set[str] = set()  # on Kafka's coordination: the members' client ids
        self.rounds = 0
        self._stop = threading.Event()
        self._sequence = 0
        # Each kind is the method of the same name ("zk-cut" is `zk_cut`).
        self._inject = {kind: getattr(self, kind.replace("-", "_")) for kind in self.kinds}

    # -- workers ----------------------------------------------------------------------------

    def start_worker(self, *extra: str, from_beginning: bool = False,
                     program: tuple[str, ...] = CLI) -> Worker:
        self._sequence += 1
        name = f"w{self._sequence}"
        handler = DELIVERY_HANDLER if program == CLI else ()
        if self.on_kafka:
            worker = Worker([], True, GROUP, TOPIC, self.work, name, *KAFKA_WORKER_OPTIONS,
                            "--property", f"bootstrap.servers={self.cluster.bootstrap_servers}",
                            "--property", f"client.id={name}", *handler, *extra,
                            from_beginning=from_beginning, program=program)
            self.workers.append(worker)
            return worker
        running = self.running()
        # Kafka storage while at most half the running workers have it: the group stays mixed.
        kafka_storage = program == CLI and \
            sum(w.kafka_storage for w in running) * 2 <= len(running)
        worker = Worker([TcpProxy(port) for port in self._group_ports], kafka_storage, GROUP,
                        TOPIC, self.work, name, *WORKER_OPTIONS, "--property",
                        f"client.id={name}", *self._kafka_discovery,
                        *(KAFKA_STORAGE if kafka_storage else ()), *handler, *extra,
                        from_beginning=from_beginning, program=program)
        self.workers.append(worker)
        return worker

    def restart_halted_brokers(self, round_number: int) -> None:
        """Between rounds every broker runs. A 0.9 broker whose log ends past its new leader's
        halts rather than truncate it (Kafka before leader epochs, KIP-101), taking what only it
        had with it; an operator restarts it, and so does the runner, saying so in the report:
        the messages it took are counted apart from those the members lost (see `report`)."""
        for broker_id in sorted(self.cluster.brokers):
            if self.cluster.broker_running(broker_id):
                continue
            print(f"  broker {broker_id} stopped by itself; restarting it", file=sys.stderr,
                  flush=True)
            self.halted_brokers.append(f"{broker_id} (before round {round_number})")
            try:
                self.cluster.start_broker(broker_id)
            except ClusterError as exc:
                self.violations.append(f"broker {broker_id} stopped by itself and did not come "
                                       f"back: {exc}")

    def replace_exited_workers(self) -> None:
        """A worker must only stop when told to: any other exit breaks the run's promise."""
        for worker in self.workers:
            if worker.fate == "running" and worker.process.poll() is not None:
                worker.ended("stopped")
                self.violations.append(f"{worker.name} exited by itself with "
                                       f"{worker.process.returncode}: {worker.log_tail(1)[:300]}")
                self.start_worker()

    def running(self) -> list[Worker]:
        return [w for w in self.workers if w.fate == "running" and w.process.poll() is None]

    def victims(self) -> list[Worker]:
        """Running workers that are past start-up (a signal during Python's own start-up,
        before any handler exists, would test the interpreter, not zkconsumer)."""
        return [w for w in self.running() if w.rebalance_ms()] or self.running()

    def stop_worker(self, worker: Worker) -> None:
        """A clean stop (SIGTERM), which must end with status 0. One whose coordinator did not
        answer in time for its last commit (it says so as it stops) is an interruption: what it
        delivered since its last commit comes again."""
        committed = dict(self.committed)
        unfinished = len(_commits_left_undone(worker))
        try:
            code = worker.terminate(timeout=EXIT_S)
        except subprocess.TimeoutExpired:
            self.violations.append(f"{worker.name} still running {EXIT_S:.0f}s after SIGTERM")
            worker.kill()
            code = worker.process.returncode
        if code != 0:
            self.violations.append(f"{worker.name} exited {code} on SIGTERM: "
                                   f"{worker.log_tail(1)[:300]}")
        if len(_commits_left_undone(worker)) > unfinished:
            worker.interrupted(committed)
        worker.ended("stopped")

    # -- background: producer and invariant samplers ------------------------------------------

    def produce(self) -> None:
        # Metadata refreshed every second: a partition added by fresh-restart is refused as
        # unknown until the producer's metadata has it, which would stall all production.
        # With replicas, a message counts as produced once the in-sync ones have it: one that
        # only a killed leader had was never acknowledged, and is not for members to find.
        producer = KafkaProducer(bootstrap_servers=self.cluster.bootstrap_servers,
                                 api_version=(0, 9), acks="all" if self.replication > 1 else 1,
                                 retries=10, linger_ms=5, metadata_max_age_ms=1000)
        n = 0
        try:
            while not self._stop.is_set():
                message_id = f"m-{n:07d}"
                partition = self.producing[n % len(self.producing)]
                try:
                    producer.send(TOPIC, message_id.encode(), partition=partition).get(timeout=30)
                except Exception:  # noqa: BLE001 - broker down, partition not known yet: again
                    time.sleep(0.5)
                    continue
                self.produced[message_id] = partition
                n += 1
                time.sleep(1.0 / self.args.rate)
        finally:
            producer.close(timeout=10)

    def sample(self) -> None:
        last_offsets: dict[TopicPartition, int] = {}
        while not self._stop.is_set():
            try:
                with zookeeper_session(self.group_connect, timeout_s=10) as zk:
                    while not self._stop.is_set():
                        before = set(read_members(zk, GROUP))
                        owners = read_owners(zk, GROUP)
                        live = before | set(read_members(zk, GROUP))
                        for tp, thread in owners.items():
                            if consumer_of_thread(thread) not in live:
                                self.violations.append(f"{tp} owned by unregistered {thread}")
                        offsets = ZookeeperOffsetStore(zk, GROUP).fetch(
                            committed_partitions(zk, GROUP))
                        self._check_forward("committed offset", last_offsets, offsets)
                        if self.group_on == "zookeeper":
                            self._note_unowned(owners)
                            self.owners = owners
                            self.committed = dict(last_offsets)
                        time.sleep(0.1)
            except Exception:  # noqa: BLE001 - ZooKeeper is restarting: sample again after it
                time.sleep(0.5)

    def sample_coordinator(self) -> None:
        """On Kafka's coordination: the group's members and their partitions as the coordinator
        describes them (a group rebalancing shows none assigned). A group started on ZooKeeper
        is described only while a cutover round has it on Kafka's coordinator."""
        reader = GroupOffsetsReader(KafkaAccess(self.cluster.bootstrap_servers, (0, 9)), {},
                                    request_timeout_ms=3000)
        try:
            while not self._stop.wait(0.1):
                if self.group_on != "kafka":
                    continue
                try:
                    group = read_coordinator_group(reader, GROUP)
                except Exception:  # noqa: BLE001 - the coordinator is down or moving: later
                    continue
                if group is not None and group.error:  # loading or moving: not an empty group
                    continue
                members = () if group is None else group.members
                owners = {tp: member.client_id for member in members for tp in member.assigned}
                self._note_unowned(owners)
                self.owners = owners
                self.members = {member.client_id for member in members}
        finally:
            reader.close()

    def _note_unowned(self, owners: dict[TopicPartition, str]) -> None:
        """By the sampler of the coordination the group is on: a partition unowned through a
        cutover's handover counts from its release on one side to its assignment on the
        other."""
        now = time.monotonic()
        for p in range(self.partitions):
            if TopicPartition(TOPIC, p) in owners:
                self._unowned_since.pop(p, None)
            else:
                since = self._unowned_since.setdefault(p, now)
                self.longest_unowned_s[p] = max(self.longest_unowned_s[p], now - since)

    def sample_kafka_offsets(self) -> None:
        """Kafka's copy of the offsets, which members with dual commit write first and which no
        ZooKeeper condition guards: a member that lost its partitions must not rewind it."""
        store = KafkaOffsetStore(GROUP, self.cluster.bootstrap_servers, api_version=(0, 9),
                                 retries=0, request_timeout_ms=3000)
        last_offsets: dict[TopicPartition, int] = {}
        try:
            while not self._stop.wait(0.5):
                try:
                    offsets = store.fetch(TopicPartition(TOPIC, p) for p in range(self.partitions))
                except Exception:  # noqa: BLE001 - the broker is down: sample again later
                    offsets = {}
                self._check_forward("Kafka-committed offset", last_offsets, offsets)
                self.kafka_committed = dict(last_offsets)
                if self.group_on == "kafka":  # the group's only offsets
                    self.committed = self.kafka_committed
        finally:
            store.close()

    def watch_coordinator_moves(self) -> None:
        """The group's coordinator moves without any fault of the runner's too: a 0.9 controller
        moves leaders back to their preferred replicas seconds after a failover. A member then
        loses its generation with no parting commit (its coordinator is gone), and what it
        delivered since its last commit may come again: each such move is an interruption of
        every member that commits to Kafka, as a fault's would be."""
        leader = None
        while not self._stop.wait(0.5):
            try:
                with zookeeper_session(self.cluster.zookeeper_connect, timeout_s=10) as zk:
                    partition = offsets_partition(zk, GROUP)
                    while not self._stop.wait(0.5):
                        state = partition_state(zk, OFFSETS_TOPIC, partition)
                        now = None if state is None else state.leader
                        if leader is not None and now != leader:
                            with self._commits_failing(self._commits_to_kafka):
                                time.sleep(NOTICE_S)
                        leader = now
            except Exception:  # noqa: BLE001 - the brokers' ZooKeeper restarting, no offsets topic yet: later
                continue

    def _commits_to_kafka(self, worker: Worker) -> bool:
        return self.on_kafka or worker.kafka_storage

    def _check_forward(self, what: str, last: dict[TopicPartition, int],
                       offsets: dict[TopicPartition, int]) -> None:
        for tp, offset in offsets.items():
            if offset < last.get(tp, -1):
                self.violations.append(f"{tp} {what} went back {last[tp]} -> {offset}")
            last[tp] = max(offset, last.get(tp, -1))

    # -- faults ------------------------------------------------------------------------------

    def kill(self) -> None:
        victim = self._pick_victim()
        committed = dict(self.committed)
        victim.kill()
        victim.interrupted(committed)
        victim.ended("killed")
        self.start_worker()

    def restart(self) -> None:
        self.stop_worker(self._pick_victim())
        self.start_worker()

    def expire(self) -> None:
        victim = self._pick_victim()
        committed = dict(self.committed)
        victim.process.send_signal(signal.SIGSTOP)
        self._wait_until_gone(victim, "frozen")
        victim.process.send_signal(signal.SIGCONT)
        time.sleep(NOTICE_S)
        victim.interrupted(committed)

    def freeze(self) -> None:
        """A worker's application is made to take FREEZE_DELAY_S a message and given a burst,
        so that it holds a backlog when it is frozen for more than twice its session; the
        others take its partitions and deliver them meanwhile. Thawed, its streams run before
        its coordination learns anything: it must hand out none of what the others delivered
        while it was frozen, judged from the delivery times and offsets. Then its application
        is quick again."""
        owning = [w for w in (self._worker_of(owner) for owner in self.owners.values()) if w]
        victim = self.rng.choice(sorted(set(owning), key=lambda w: w.name) or self.victims())
        print(f"  victim: {victim.name}", file=sys.stderr, flush=True)
        slow = victim.slow_down_steadily(FREEZE_DELAY_S)
        try:
            self._freeze_slow(victim)
        finally:
            slow.unlink(missing_ok=True)

    def _freeze_slow(self, victim: Worker) -> None:
        self.burst(FREEZE_BURST)
        burst = f"b-{self.faults['freeze']}-"
        if not wait_for(lambda: any(r["value"].startswith(burst) for r in victim.records()),
                        SETTLE_S):
            self.violations.append(f"{victim.name} handed out none of the burst within "
                                   f"{SETTLE_S:.0f}s")
        committed = dict(self.committed)
        session_s = (KAFKA_SESSION_MS if self.group_on == "kafka" else SESSION_TIMEOUT_MS) / 1000
        frozen_at = time.time()
        victim.process.send_signal(signal.SIGSTOP)
        try:
            self._wait_until_gone(victim, "frozen")
            time.sleep(max(0.0, frozen_at + 2 * session_s + 1.0 - time.time()))
            thawed_at = time.time()
        finally:
            victim.process.send_signal(signal.SIGCONT)
        victim.interrupted(committed)
        # Until it delivers again (its partitions given anew).
        wait_for(lambda: any(t > thawed_at for _p, _o, t in victim.delivery_times()), SETTLE_S)
        during = {(p, o) for w in self.workers if w is not victim
                  for p, o, t in w.delivery_times() if frozen_at < t < thawed_at}
        stale = [(p, o) for p, o, t in victim.delivery_times()
                 if t >= thawed_at and (p, o) in during]
        print(f"  others delivered {len(during)} messages during the freeze; "
              f"{len(stale)} of them handed out again by {victim.name} after the thaw",
              file=sys.stderr, flush=True)
        if stale:
            self.violations.append(
                f"{victim.name} handed out {len(stale)} messages after its thaw that others "
                f"had delivered while it was frozen (first: partition {stale[0][0]} offset "
                f"{stale[0][1]})")

    def burst(self, count: int) -> None:
        """`count` messages at once over the partitions produced to, counted as produced."""
        producer = KafkaProducer(bootstrap_servers=self.cluster.bootstrap_servers,
                                 api_version=(0, 9), acks="all" if self.replication > 1 else 1,
                                 retries=10, linger_ms=5)
        try:
            sent = []
            for i in range(count):
                message_id = f"b-{self.faults['freeze']}-{i:05d}"
                partition = self.producing[i % len(self.producing)]
                sent.append((message_id, partition,
                             producer.send(TOPIC, message_id.encode(), partition=partition)))
            for message_id, partition, future in sent:
                future.get(timeout=30)
                self.produced[message_id] = partition
        finally:
            producer.close(timeout=10)

    def broker(self) -> None:
        with self.brokers_down([self.rng.choice(sorted(self.cluster.brokers))]):
            pass  # a plain restart

    def zookeeper(self) -> None:
        self.cluster.restart_zookeeper(graceful=self.rng.random() < 0.5)

    def zk_cut(self) -> None:
        """The victim's ZooKeeper connection is cut just as another worker leaves, so the cut
        meets its rebalance; it must stop delivering and committing until it knows whether its
        session survived, and it does not: it is restored only after others took over."""
        victim = self._pick_victim()
        peers = [w for w in self.victims() if w is not victim]
        with zookeeper_session(self.group_connect, timeout_s=30) as zk:
            leaver = self.rng.choice(peers) if peers else None
            if leaver is not None:
                left = threading.Event()
                if zk.exists(self._registration(leaver), watch=lambda _event: left.set()):
                    leaver.request_stop()
                    left.wait(EXIT_S)
                    # Its rebalance starts now and takes some 50-300 ms: cut somewhere in it.
                    time.sleep(self.rng.uniform(0.0, 0.15))
            registration = self._registration(victim)
            committed = dict(self.committed)
            victim.cut()
            time.sleep(NOTICE_S)
            victim.interrupted(committed)
            if leaver is not None:
                self.stop_worker(leaver)
                self.start_worker()
            self._wait_until_session_gone(zk, victim, "cut off")
            wait_for(lambda: len(read_owners(zk, GROUP)) == self.partitions, SETTLE_S)
            late = victim.delivered() - victim.interruptions[-1].delivered
            if late:
                self.violations.append(f"{victim.name} delivered {late} messages while cut off "
                                       "from ZooKeeper (its session expired meanwhile)")
            victim.restore()
            if not wait_for(lambda: zk.exists(registration), SETTLE_S):
                self.violations.append(f"{victim.name} did not register again within "
                                       f"{SETTLE_S:.0f}s of its ZooKeeper connection's return")

    def offsets_outage(self) -> None:
        """Kafka, where half the workers keep offsets, goes down while one worker leaves: the
        others rebalance with failing release commits and claim-time offset fetches."""
        leavers = self.victims()
        leaver = self.rng.choice([w for w in leavers if not w.kafka_storage] or leavers)
        # Several 0.9 brokers all SIGKILLed can come back with a leader whose log ends before a
        # follower's: the follower halts rather than truncate (Kafka before leader epochs), and
        # the cluster stays without leaders. A whole replicated cluster goes down cleanly here.
        graceful = True if len(self.cluster.brokers) > 1 else None
        with self.brokers_down(sorted(self.cluster.brokers), graceful=graceful):
            print(f"  leaver: {leaver.name}", file=sys.stderr, flush=True)
            self.stop_worker(leaver)
            time.sleep(OUTAGE_S)
        self.start_worker()

    def callback_raise(self) -> None:
        """A worker restarted as a Python-API member whose on_partitions_assigned raises on its
        first call: it must fail loudly (an error logged, a non-zero exit) and keep no owner
        znode; then a worker takes its place."""
        self.stop_worker(self._pick_victim())
        committed = dict(self.committed)
        member = self.start_worker("--fail-on-assign", "1", program=API_WORKER)
        print(f"  member: {member.name}", file=sys.stderr, flush=True)
        wait_for(lambda: member.log_events(RAISING) or member.process.poll() is not None,
                 SETTLE_S)
        if not member.log_events(RAISING):
            self.violations.append(f"{member.name}'s on_partitions_assigned never raised: "
                                   f"{member.log_tail(1)[:300]}")
        try:
            code = member.process.wait(timeout=EXIT_S)
        except subprocess.TimeoutExpired:
            self.violations.append(f"{member.name} still running {EXIT_S:.0f}s after its "
                                   "on_partitions_assigned raised: it must fail")
            member.kill()
            code = member.process.returncode
        if code == 0:
            self.violations.append(f"{member.name} exited 0 after its callback raised")
        if not any(line.get("level") == "error"
                   and not line.get("logger", "").startswith(LIBRARY_LOGGERS)
                   for line in member.log_lines()):
            self.violations.append(f"{member.name} failed without logging an error")
        member.interrupted(committed)
        member.ended("failed")
        if self.on_kafka:
            # Well within a session of its exit: it left (LeaveGroup), not merely timed out.
            within = KAFKA_SESSION_MS / 1000.0 - 2.0
            if not wait_for(lambda: member.name not in self.members, within):
                self.violations.append(f"{member.name} failed but was still in the group "
                                       f"{within:.0f}s after it exited (no LeaveGroup?)")
        else:
            self._wait_until_unowned_by(member)
        self.start_worker()

    def _wait_until_unowned_by(self, member: Worker) -> None:
        consumer_id = member.consumer_id()
        with zookeeper_session(self.group_connect, timeout_s=30) as zk:
            if consumer_id and not wait_for(
                    lambda: all(consumer_of_thread(thread) != consumer_id
                                for thread in read_owners(zk, GROUP).values()), SETTLE_S):
                self.violations.append(f"{member.name} failed but owner znodes still name it "
                                       f"{SETTLE_S:.0f}s later")

    def fresh_restart(self) -> None:
        """A new partition's first owner resets it to the (empty) log end and restarts before
        anything is produced there: its reset must have been committed, or the next owner
        resets again, past what was produced in between."""
        with zookeeper_session(self.cluster.zookeeper_connect, timeout_s=30) as brokers_zk:
            tp = TopicPartition(TOPIC, add_partition(brokers_zk, TOPIC))
            # The controller's part, before the members': it may be slow after broker faults,
            # and members on Kafka's coordinator learn of the partition from its metadata.
            wait_for_leader(brokers_zk, TOPIC, tp.partition)
        self.partitions += 1
        # Owners and offsets as the samplers last saw them (every 0.1 s and 0.5 s).
        owner = wait_for(lambda: self.owners.get(tp), SETTLE_S)
        first = self._worker_of(owner)
        if first is None:
            self.violations.append(f"new partition {tp} not claimed by a running worker "
                                   f"within {SETTLE_S:.0f}s (owner {owner})")
            return
        print(f"  new partition {tp.partition}, owner: {first.name}", file=sys.stderr,
              flush=True)
        committed_within = AUTO_COMMIT_MS / 1000.0 + 5.0
        if not wait_for(lambda: tp in self.committed, committed_within):
            self.violations.append(
                f"{first.name} reset new partition {tp} but committed no offset for it "
                f"within {committed_within:.0f}s (the next owner resets again)")
        first.request_stop()
        # Produce there only once it let go, so that all of it comes after its reset.
        wait_for(lambda: self.owners.get(tp) != owner, EXIT_S)
        self.producing.append(tp.partition)
        self.stop_worker(first)
        self.start_worker()
        if not wait_for(lambda: self.committed.get(tp, 0) > 0, SETTLE_S):
            self.violations.append(f"nothing produced to new partition {tp} was committed "
                                   f"within {SETTLE_S:.0f}s")

    def slow_handler(self) -> None:
        """A worker's handler takes SLOW_HANDLER_S over one message, and another worker
        restarts meanwhile: the group rebalances while the slow worker's application is busy
        (its coordinator thread may keep it in the group, or it may be left out). Its partitions
        may move; once its handler returns it must deliver nothing of those, which the delivery
        times show. What it delivered from then on may be delivered again by others."""
        owning = [w for w in (self._worker_of(owner) for owner in self.owners.values()) if w]
        victim = self.rng.choice(sorted(set(owning), key=lambda w: w.name) or self.victims())
        print(f"  victim: {victim.name}", file=sys.stderr, flush=True)
        committed = dict(self.committed)
        trigger = victim.slow_down(SLOW_HANDLER_S)
        if not wait_for(lambda: not trigger.exists(), SETTLE_S, interval=0.02):
            trigger.unlink(missing_ok=True)
            self.violations.append(f"{victim.name} handed out nothing for {SETTLE_S:.0f}s")
            return
        began = time.monotonic()  # the handler took the trigger: its slow message began
        peers = [w for w in self.victims() if w is not victim]
        if peers:
            restarted = self.rng.choice(peers)
            print(f"  restarted meanwhile: {restarted.name}", file=sys.stderr, flush=True)
            self.stop_worker(restarted)
            self.start_worker()
        time.sleep(max(0.0, SLOW_HANDLER_S - (time.monotonic() - began)) + NOTICE_S)
        victim.interrupted(committed)

    def cutover(self) -> None:
        """The group moved to Kafka's group coordinator by the real `group cutover --execute`
        while it consumes, left there a while, and moved back the same way. Each move must end
        `switched` with every running worker moved and every partition owned by one of them on
        the new side; the samplers follow the group (who owns what, which offsets are its
        own). A move that failed with the fence left draining is rolled back (`--to` where the
        group came from switches the fence back, and the waiting workers rejoin there); a group
        that cannot be brought back ends the run, as every later round would fault a group that
        is not where the run has it."""
        # Every running worker registered: one still starting when the fence is written waits
        # without having drained anything, and is no moved member.
        wait_for(lambda: all(w.rebalance_ms() for w in self.running()), SETTLE_S)
        if self._cut_over("kafka"):
            time.sleep(self.rng.uniform(1.0, OUTAGE_S))  # consuming on Kafka's coordinator
        elif self._fence() is None:
            return  # refused with nothing written: the group never left ZooKeeper
        if self._cut_over("zookeeper"):
            return
        fence = self._fence()
        if fence is not None and fence.to == "zookeeper" and not fence.switched:
            self._cut_over("kafka")  # the way back's rollback: the workers go on consuming
        raise GroupStranded("the group could not be brought back to ZooKeeper")

    def _cut_over(self, target: str) -> bool:
        """`zkconsumer group cutover --to TARGET --execute` run to its end: True once the group
        is on `target` (switched, or a rollback that left it there), its report checked."""
        command = [sys.executable, "-m", "zkconsumer", "--log-format", "json", "group",
                   "cutover", "--zookeeper", self.group_connect, *self._cutover_kafka,
                   "--group", GROUP, "--to", target, "--execute", "--json",
                   "--timeout", f"{SETTLE_S:.0f}s"]
        running = {w.name for w in self.running()}
        done = subprocess.run(command, capture_output=True, stdin=subprocess.DEVNULL,
                              timeout=3 * SETTLE_S, check=False)
        errors = [line for line in done.stderr.decode(errors="replace").splitlines()
                  if line.startswith("error: ")]
        if done.returncode != 0:
            self.violations.append(f"cutover --to {target} exited {done.returncode}: "
                                   f"{(errors or ['(no error line)'])[-1][:300]}")
            return False
        report = json.loads(done.stdout)
        print(f"  --to {target}: {report['outcome']}", file=sys.stderr, flush=True)
        if report["outcome"] in ("rolled back", "already cut over"):
            return True  # the group is where it was: after a failed move, nothing to check
        self.group_on = target
        pauses = [p["pause_ms"] for p in report["pauses"] if p["pause_ms"] is not None]
        print(f"  moved {len(report['members_moved'])}, longest pause "
              f"{max(pauses, default=0)} ms", file=sys.stderr, flush=True)
        self.cutover_pauses_ms.append(max(pauses, default=0))
        if report["outcome"] != "switched" or len(report["members_moved"]) != len(running):
            self.violations.append(f"cutover --to {target}: {report['outcome']}, "
                                   f"{len(report['members_moved'])} member(s) moved of "
                                   f"{len(running)} running")
        if not wait_for(lambda: {self._worker_name(owner) for owner in self.owners.values()}
                        == running and len(self.owners) == self.partitions, SETTLE_S):
            self.violations.append(f"after the cutover to {target}, the running workers did "
                                   f"not own every partition within {SETTLE_S:.0f}s")
        return True

    def _worker_name(self, owner: str) -> str | None:
        worker = self._worker_of(owner)
        return None if worker is None else worker.name

    def _fence(self) -> Fence | None:
        """The group's cutover fence as it stands (None: there is none)."""
        with zookeeper_session(self.group_connect, timeout_s=30) as zk:
            try:
                return Fence.decode(PATHS.fence, zk.get(PATHS.fence)[0])
            except NoNodeError:
                return None

    def leader_kill(self) -> None:
        """A partition's leader dies without a word: members fetching from it must find the
        follower the controller makes leader, from where they were."""
        partition = self.rng.randrange(self.partitions)
        with zookeeper_session(self.cluster.zookeeper_connect, timeout_s=30) as zk:
            leader = wait_for_leader(zk, TOPIC, partition)
            print(f"  partition {partition}, leader: broker {leader}", file=sys.stderr,
                  flush=True)
            with self.brokers_down([leader], graceful=False):
                successor = wait_for_leader(zk, TOPIC, partition, other_than=leader)
                print(f"  new leader: broker {successor}", file=sys.stderr, flush=True)
                time.sleep(self.rng.uniform(0.0, OUTAGE_S))

    def leader_move(self) -> None:
        """Leadership moved on purpose to another in-sync replica: the old leader answers
        fetches with NOT_LEADER_FOR_PARTITION from then on."""
        self._move_leadership(TOPIC, lambda zk: self.rng.randrange(self.partitions))

    def coordinator_move(self) -> None:
        """The same for the offsets topic's partition that keeps the group: the old
        coordinator answers NOT_COORDINATOR from then on, and the new one loads the group."""
        self._move_leadership(OFFSETS_TOPIC, lambda zk: offsets_partition(zk, GROUP))

    def _move_leadership(self, topic: str, choose: Callable[[KazooClient], int]) -> None:
        with zookeeper_session(self.cluster.zookeeper_connect, timeout_s=30) as zk:
            wait_until_in_sync(zk)  # a broker restarted by the last fault may be catching up
            partition = choose(zk)
            state = partition_state(zk, topic, partition)
            target = self.rng.choice([b for b in state.isr if b != state.leader])
            print(f"  {topic}-{partition}: broker {state.leader} -> {target}",
                  file=sys.stderr, flush=True)
            move_leader(zk, topic, partition, target)

    def coordinator_kill(self) -> None:
        """The group's coordinator dies while a worker restarts: the rebalance's release
        commits and claim-time offset fetches of Kafka-storage members meet a coordinator
        that is gone, then one that is loading the offsets topic's partition."""
        with zookeeper_session(self.cluster.zookeeper_connect, timeout_s=30) as zk:
            partition = offsets_partition(zk, GROUP)
            coordinator = wait_for_leader(zk, OFFSETS_TOPIC, partition)
            print(f"  coordinator: broker {coordinator} ({OFFSETS_TOPIC}-{partition})",
                  file=sys.stderr, flush=True)
            with self.brokers_down([coordinator], graceful=False):
                self.restart()
                successor = wait_for_leader(zk, OFFSETS_TOPIC, partition, other_than=coordinator)
                print(f"  new coordinator: broker {successor}", file=sys.stderr, flush=True)

    def broker_rolling(self) -> None:
        graceful = self.rng.random() < 0.5
        print(f"  {'SIGTERM' if graceful else 'SIGKILL'}", file=sys.stderr, flush=True)
        with self.kafka_commits_failing():
            self.cluster.rolling_restart(graceful=graceful)

    def zk_leader_kill(self) -> None:
        """The ensemble's leader dies: sessions move to the other servers, every one of them
        with a fresh timeout under the new leader."""
        with self.group_commits_failing():
            leader = self.ensemble.wait_until_serving()
            print(f"  leader: server {leader}", file=sys.stderr, flush=True)
            self.ensemble.kill_server(leader)
            print(f"  new leader: server {self.ensemble.wait_until_serving()}", file=sys.stderr,
                  flush=True)
            time.sleep(self.rng.uniform(0.0, OUTAGE_S))
            self.ensemble.start_server(leader)

    def zk_quorum_loss(self) -> None:
        """No majority for a while: the servers left refuse every client; members must pause,
        neither delivering on an expired session nor giving up, and carry on after."""
        with self.group_commits_failing():
            stopped = self.ensemble.lose_quorum()
            print(f"  stopped: servers {stopped}", file=sys.stderr, flush=True)
            time.sleep(self.rng.uniform(1.0, OUTAGE_S))
            self.ensemble.restore(stopped)

    def zk_rolling(self) -> None:
        graceful = self.rng.random() < 0.5
        print(f"  {'SIGTERM' if graceful else 'SIGKILL'}", file=sys.stderr, flush=True)
        with self.group_commits_failing():
            for server_id in sorted(self.ensemble.servers):
                self.ensemble.stop_server(server_id, graceful=graceful)
                self.ensemble.start_server(server_id)
                self.ensemble.wait_until_serving()

    def crash_then_failover(self) -> None:
        """A worker dies and another joins (so the survivors claim some of the dead one's
        partitions and wait on its owner znodes), and before the dead worker's session could
        expire the ensemble's leader stops: the new leader gives every session a fresh
        timeout, so those owner znodes outlive twice the session timeout counted from the
        crash. The survivors must wait rather than give up, and every partition of the dead
        worker must be owned by a live one once its session expired."""
        victim = self._pick_victim()
        dead_member = victim.consumer_id()
        committed = dict(self.committed)
        victim.kill()
        victim.interrupted(committed)
        victim.ended("killed")
        self.start_worker()
        time.sleep(self.rng.uniform(1.0, SESSION_TIMEOUT_MS / 1000.0 - 0.5))
        with self.group_commits_failing():
            leader = self.ensemble.wait_until_serving()
            print(f"  leader: server {leader}", file=sys.stderr, flush=True)
            self.ensemble.stop_server(leader)
            self.ensemble.wait_until_serving()
            self.ensemble.start_server(leader)
        registration = self._registration(victim)
        with zookeeper_session(self.group_connect, timeout_s=30) as zk:
            # Members may take the dead one's partitions only once ZooKeeper says its session
            # ended (its registration gone): how long that takes is ZooKeeper's part, reported
            # as such; what the members do after it is theirs.
            failed_over = time.monotonic()
            expired = wait_for(lambda: not zk.exists(registration), DEAD_SESSION_S)
            self.dead_session_s.append(time.monotonic() - failed_over)
            if expired is None:
                self.violations.append(f"ZooKeeper kept {victim.name}'s session "
                                       f"{DEAD_SESSION_S:.0f}s after the failover")
                return

            def taken_over() -> bool:
                owners = read_owners(zk, GROUP)
                return len(owners) == self.partitions and all(
                    consumer_of_thread(thread) != dead_member for thread in owners.values())
            if not wait_for(taken_over, SETTLE_S):
                self.violations.append(f"{victim.name}'s partitions not all owned by live "
                                       f"members {SETTLE_S:.0f}s after its session ended")

    # -- fault helpers ------------------------------------------------------------------------

    def _pick_victim(self) -> Worker:
        victim = self.rng.choice(self.victims())
        print(f"  victim: {victim.name}", file=sys.stderr, flush=True)
        return victim

    def _worker_of(self, owner: str | None) -> Worker | None:
        """The running worker an owner names: its consumer thread on ZooKeeper, its client id
        (the worker's name) on Kafka's coordinator."""
        if owner is None:
            return None
        if self.group_on == "kafka":
            return next((w for w in self.running() if w.name == owner), None)
        consumer_id = consumer_of_thread(owner)
        return next((w for w in self.running() if w.consumer_id() == consumer_id), None)

    def _registration(self, worker: Worker) -> str:
        consumer_id = worker.consumer_id()
        if consumer_id is None:
            self.violations.append(f"{worker.name} logged no registration")
        return PATHS.member(consumer_id or worker.name)

    def _wait_until_gone(self, victim: Worker, how: str) -> None:
        """Until the group let the victim go: its ZooKeeper session ended, or the
        coordinator described the group without it."""
        if self.on_kafka:
            bound = 3 * KAFKA_SESSION_MS / 1000.0
            if wait_for(lambda: victim.name not in self.members, bound) is None:
                self.violations.append(f"{victim.name} stayed in the group {bound:.0f}s {how}")
            return
        with zookeeper_session(self.group_connect, timeout_s=30) as zk:
            self._wait_until_session_gone(zk, victim, how)

    def _wait_until_session_gone(self, zk: KazooClient, victim: Worker, how: str) -> None:
        registration = self._registration(victim)
        bound = 3 * SESSION_TIMEOUT_MS / 1000.0
        if wait_for(lambda: not zk.exists(registration), bound) is None:
            self.violations.append(f"{victim.name}'s session outlived {bound:.0f}s {how}")

    @contextlib.contextmanager
    def brokers_down(self, broker_ids: list[int], graceful: bool | None = None) -> Iterator[None]:
        """The brokers stopped (cleanly or not: `graceful`, else at random) for the block, and
        started again after it."""
        if graceful is None:
            graceful = self.rng.random() < 0.5
        with self.kafka_commits_failing():
            for broker_id in broker_ids:
                self.cluster.stop_broker(broker_id, graceful=graceful)
            try:
                yield
            finally:
                for broker_id in broker_ids:
                    self.cluster.start_broker(broker_id)

    @contextlib.contextmanager
    def kafka_commits_failing(self) -> Iterator[None]:
        """A block during which members with Kafka offset storage may commit nothing (their
        coordinator is gone or moving, or a commit waits for a replica that is gone)."""
        with self._commits_failing(lambda worker: worker.kafka_storage):
            yield
            self._wait_for_kafka_commits()

    def _wait_for_kafka_commits(self) -> None:
        """Brokers that are back do not take commits at once (an offsets partition is elected
        and loaded first); until a Kafka-committed offset moves again, members on Kafka
        storage still commit nothing, and a rebalance then hands others what they delivered
        meanwhile. Each member's client finds the coordinator again in its own time, so the
        wait lasts until every partition a member on Kafka storage owns moved on. Bounded: a
        group that commits nothing more is the report's to find."""
        before = dict(self.kafka_committed)

        def committing_again() -> bool:
            on_kafka = {w.consumer_id() for w in self.running() if w.kafka_storage}
            theirs = list(self.owners) if self.on_kafka else [
                tp for tp, thread in self.owners.items()
                if consumer_of_thread(thread) in on_kafka]
            return all(self.kafka_committed.get(tp, -1) > before.get(tp, -1) for tp in theirs)
        wait_for(committing_again, SETTLE_S)

    @contextlib.contextmanager
    def group_commits_failing(self) -> Iterator[None]:
        """A block during which the group's ZooKeeper may not serve a member, whose session
        may then expire: every member may commit nothing."""
        with self._commits_failing(lambda worker: True):
            yield

    @contextlib.contextmanager
    def _commits_failing(self, affects: Callable[[Worker], bool]) -> Iterator[None]:
        """Each member `affects` picks (also one started meanwhile) gets an interruption: what
        it delivered until the block ends may be delivered again once it lets a partition go."""
        committed = dict(self.committed)
        affected = {w for w in self.running() if affects(w)}
        try:
            yield
        finally:
            for worker in affected | {w for w in self.running() if affects(w)}:
                worker.interrupted(committed)

    # -- the run ------------------------------------------------------------------------------

    def schedule(self) -> list[str]:
        kinds = list(self.kinds) + [self.rng.choice(self.kinds)
                                    for _ in range(max(0, self.args.rounds - len(self.kinds)))]
        self.rng.shuffle(kinds)
        return kinds

    def run(self) -> bool:
        started = time.monotonic()
        with zookeeper_session(self.cluster.zookeeper_connect) as brokers_zk:
            create_topic(brokers_zk, TOPIC, self.args.partitions, self.replication)
        for _ in range(self.args.workers):
            self.start_worker(from_beginning=True)
        samplers = (self.sample_coordinator,) if self.on_kafka else (
            self.sample, *((self.sample_coordinator,) if "cutover" in self.kinds else ()))
        background = [threading.Thread(target=target, daemon=True)
                      for target in (self.produce, *samplers, self.sample_kafka_offsets,
                                     self.watch_coordinator_moves)]
        for thread in background:
            thread.start()
        # From here on workers start at the log end when a partition has no offset.
        if not wait_for(lambda: len(self.committed) == self.partitions, SETTLE_S * 2):
            self.violations.append("the group had not committed every partition "
                                   f"{SETTLE_S * 2:.0f}s after it started")
        for round_number, kind in enumerate(self.schedule(), start=1):
            if time.monotonic() - started > self.args.max_seconds:
                print(f"time limit reached after {round_number - 1} rounds", file=sys.stderr)
                break
            time.sleep(self.rng.uniform(self.args.min_gap, self.args.max_gap))
            self.replace_exited_workers()
            self.restart_halted_brokers(round_number)
            print(f"round {round_number}: {kind}", file=sys.stderr, flush=True)
            self.faults[kind] += 1
            injected = time.monotonic()
            try:
                self._inject[kind]()
            except (ClusterError, EnsembleError, TopicCreationError) as exc:
                self.violations.append(f"round {round_number} ({kind}): the cluster did not "
                                       f"recover: {exc}")
            except GroupStranded as exc:
                self.violations.append(f"round {round_number} ({kind}): {exc}; no more rounds")
                break
            print(f"  done in {time.monotonic() - injected:.1f}s", file=sys.stderr, flush=True)
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
            worker.request_stop()
        for worker in self.workers:
            try:
                worker.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()
            worker.close_proxies()
        return self.report(produced, time.monotonic() - started)

    def values_in_log(self) -> set[str]:
        """Every message id the topic's partitions hold now, read from their beginning."""
        consumer = KafkaConsumer(bootstrap_servers=self.cluster.bootstrap_servers,
                                 api_version=(0, 9), enable_auto_commit=False, group_id=None)
        try:
            partitions = [KafkaTopicPartition(TOPIC, p) for p in range(self.partitions)]
            consumer.assign(partitions)
            consumer.seek_to_beginning(*partitions)
            ends = consumer.end_offsets(partitions)
            values: set[str] = set()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and any(
                    consumer.position(tp) < end for tp, end in ends.items()):
                for records in consumer.poll(timeout_ms=1000).values():
                    values.update(record.value.decode() for record in records)
            return values
        finally:
            consumer.close()

    def kill_every_worker(self) -> None:
        """Whatever is still running once the run is over, or failed: nothing it started may
        outlive it."""
        self._stop.set()
        for worker in self.workers:
            if worker.process.poll() is None:
                worker.kill()
            worker.close_proxies()

    def consumed_ids(self) -> set[str]:
        return {r["value"] for w in self.workers for r in w.records()}

    def report(self, produced: set[str], seconds: float) -> bool:
        deliveries = defaultdict(list)
        for worker in self.workers:
            for index, record in enumerate(worker.records()):
                deliveries[(record["partition"], record["offset"])].append((worker, index))
        consumed = self.consumed_ids()
        # What a halted 0.9 broker took with it (see `restart_halted_brokers`) is in no log for
        # a member to find: only a message the log still holds can be lost by the members.
        undelivered = produced - consumed
        in_log = self.values_in_log() if undelivered and self.halted_brokers else undelivered
        lost = undelivered & in_log
        lost_by_brokers = undelivered - in_log
        duplicates = {key: ds for key, ds in deliveries.items() if len(ds) > 1}
        unexplained = defaultdict(list)  # (partition, the workers) -> offsets
        handed_over = _in_hand_at_handovers({w.name: w.delivery_times() for w in self.workers})
        for (partition, offset), ds in sorted(duplicates.items()):
            tp = TopicPartition(TOPIC, partition)
            if (partition, offset) in handed_over:
                continue
            if not any(w.may_be_redelivered(tp, offset, index)
                       or w.in_hand_at_a_revocation(partition, offset) for w, index in ds):
                names = ", ".join(dict.fromkeys(w.name for w, _ in ds))
                unexplained[(partition, names)].append(offset)
        for (partition, names), offsets in unexplained.items():
            self.violations.append(f"partition {partition}: {len(offsets)} offsets "
                                   f"({_spans(offsets)}) delivered by {names}, outside any "
                                   "interrupted worker's uncommitted window")
        overlapping = overlaps({w.name: w.delivery_times() for w in self.workers}, STINT_GAP_S,
                               OVERLAP_TOLERANCE_S)
        for overlap in overlapping:
            self.violations.append(
                f"partition {overlap.partition} delivered by {' and '.join(overlap.members)} "
                f"at once for {overlap.seconds:.3f}s")
        lost_by_partition = Counter(self.produced[message_id] for message_id in lost)
        rebalances = sorted(ms for w in self.workers for ms in w.rebalance_ms())
        rows = [
            ("seed", self.args.seed),
            ("coordination", self.args.coordination),
            ("rounds", self.rounds),
            ("brokers / replication", f"{len(self.cluster.brokers)} / {self.replication}"),
            ("group's ZooKeeper servers", "-" if self.on_kafka else len(self._group_ports)),
            *((f"faults: {kind}", self.faults[kind]) for kind in self.kinds),
            ("workers started", len(self.workers)),
            ("partitions", self.partitions),
            ("messages produced", len(produced)),
            ("messages consumed", len(consumed & produced)),
            ("lost", len(lost)),
            ("acknowledged, then gone from the log with a halted broker", len(lost_by_brokers)),
            ("brokers that stopped by themselves (restarted)",
             ", ".join(self.halted_brokers) or "-"),
            ("lost, by partition", " ".join(f"{p}:{n}" for p, n in sorted(
                lost_by_partition.items())) or "-"),
            ("duplicates", len(duplicates)),
            ("deliveries of a partition by two workers at once", len(overlapping)),
            ("longest such overlap (s)",
             f"{max(o.seconds for o in overlapping):.3f}" if overlapping else "-"),
            ("invariant violations", len(self.violations)),
            ("longest unowned, per partition (s)",
             " ".join(f"{p}:{self.longest_unowned_s[p]:.1f}" for p in range(self.partitions))),
            ("dead member's session after a failover (s)",
             " ".join(f"{waited:.1f}" for waited in self.dead_session_s) or "-"),
            ("longest pause per cutover step, as the command reported it (ms)",
             " ".join(map(str, self.cutover_pauses_ms)) or "-"),
            ("rebalances", len(rebalances)),
            ("rebalance ms p50 / p99 / max", _percentiles(rebalances)),
            ("run time (s)", f"{seconds:.0f}"),
        ]
        width = max(len(name) for name, _ in rows)
        for name, value in rows:
            print(f"{name:<{width}}  {value}")
        for violation in self.violations:
            print(f"VIOLATION: {violation}")
        return not lost and not self.violations


def _in_hand_at_handovers(times: dict[str, list[tuple[int, int, float]]]
                          ) -> set[tuple[int, int]]:
    """(partition, offset) of each message a worker delivered last of a partition before
    another worker delivered it again: the message it still had in hand when the partition
    moved (a message counts as consumed when the next is asked for), which its next owner
    delivers again, on either coordination."""
    by_partition: dict[int, list[tuple[float, int, str]]] = defaultdict(list)
    for name, deliveries in times.items():
        for partition, offset, at in deliveries:
            by_partition[partition].append((at, offset, name))
    found = set()
    for partition, everyones in by_partition.items():
        everyones.sort()
        last_of: dict[str, tuple[float, int]] = {}  # worker -> its latest delivery so far
        for at, offset, name in everyones:
            if any(other != name and their_offset == offset
                   for other, (_t, their_offset) in last_of.items()):
                found.add((partition, offset))
            last_of[name] = (at, offset)
    return found


def _unix_time(iso: str) -> float:
    """A log line's timestamp (ISO 8601, UTC) as seconds since the epoch."""
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _commits_left_undone(worker: Worker) -> list[dict]:
    """Each time the worker stopped without its last commit (see UNFINISHED_LEAVE)."""
    return [line for line in worker.log_lines()
            if str(line.get("event", "")).startswith(UNFINISHED_LEAVE)
            and "commit" in str(line.get("not_done", ""))]


def _spans(numbers: list[int]) -> str:
    """Sorted numbers as runs: [3, 4, 5, 9] -> "3-5, 9"."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _percentiles(values: list[int]) -> str:
    if not values:
        return "-"
    def at(q: float) -> int:
        return values[min(len(values) - 1, int(q * len(values)))]
    return f"{at(0.5)} / {at(0.99)} / {values[-1]}"


def main(argv: list[str] | None = None) -> int:
    # The samplers' own clients see the restarts too; their warnings are expected.
    for library in LIBRARY_LOGGERS:
        logging.getLogger(library).setLevel(logging.CRITICAL)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--brokers", type=int, default=1,
                        help=f"brokers; with more than one, topics (the offsets topic too) get "
                             f"min(brokers, {MAX_REPLICATION}) replicas and the replication "
                             f"faults run")
    parser.add_argument("--zookeepers", type=int, default=1,
                        help="with 3 or more, the group lives on an ensemble of that many "
                             "servers of Debian's ZooKeeper 3.8 and the ensemble faults run")
    parser.add_argument("--coordination", choices=COORDINATIONS, default="zookeeper",
                        help="the group's coordinator: ZooKeeper (the group's servers), or "
                             "Kafka's group coordinator (group.coordination=kafka)")
    parser.add_argument("--kinds", metavar="K1,K2",
                        help="run only these fault kinds (default: every kind the cluster has)")
    parser.add_argument("--rate", type=float, default=200.0, help="messages per second")
    parser.add_argument("--min-gap", type=float, default=2.0, help="seconds between faults")
    parser.add_argument("--max-gap", type=float, default=6.0)
    parser.add_argument("--max-seconds", type=float, default=1800.0,
                        help="stop injecting after this long, whatever --rounds says")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep the workers' output and logs in DIR (default: removed)")
    args = parser.parse_args(argv)
    if args.zookeepers == 2 or args.zookeepers < 1:
        parser.error("--zookeepers: 1, or an ensemble of 3 or more (two servers survive no "
                     "fault a single one does not)")
    if args.coordination == "kafka" and args.zookeepers > 1:
        parser.error("--zookeepers: a group on Kafka's coordinator has no ZooKeeper of its own")
    available = available_kinds(args.brokers, args.zookeepers, args.coordination)
    args.kinds = tuple(args.kinds.split(",")) if args.kinds else available
    unknown = [kind for kind in args.kinds if kind not in available]
    if unknown:
        parser.error(f"--kinds: {', '.join(unknown)} not among {', '.join(available)} "
                     f"(with --brokers {args.brokers} --zookeepers {args.zookeepers} "
                     f"--coordination {args.coordination})")
    with tempfile.TemporaryDirectory(prefix="zkconsumer-faults-") as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as servers:
            cluster = LocalCluster.start(work / "cluster", brokers=args.brokers,
                                         replication_factor=min(args.brokers, MAX_REPLICATION))
            servers.callback(cluster.stop, remove_data=args.keep is None)
            ensemble = None
            if args.zookeepers > 1:
                ensemble = ZookeeperEnsemble.start(work / "ensemble", args.zookeepers)
                servers.callback(ensemble.stop, remove_data=args.keep is None)
            run = Run(cluster, ensemble, work, args)
            servers.callback(run.kill_every_worker)  # first: also when the run itself fails
            ok = run.run()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

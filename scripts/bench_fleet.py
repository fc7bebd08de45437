"""A fleet on one ensemble: a group of --fleet-members members, started together, then restarted
in --rolling-steps steps, with what the ZooKeeper server itself counted in each phase.

The members run several to a process through the Python API (--members-per-process; 1 runs
each in its own process, as a deploy of single workers does), so that 200 members fit on a
2-core machine. Each process ("pack") starts its members at once, each on a thread of its
own, and stops them when told.

The topic is made first, and the phases wait until the broker is quiet, for up to 300 s (a
broker still busy with a new topic of thousands of partitions would take a core from the start).

Phases:
- start: every pack started at once; settled is timed from the last registration (the newest
  registration znode's write, on the server's clock, this machine's) to the last write of an
  owner znode once every partition is owned by the member a range assignment computed here
  gives it (thread ids sorted, partitions split in order, as the reference assigns): when the
  group settled, whenever the harness's read (polled every 200 ms, and as slow as the server)
  found it so, which is printed too;
- after settling: the --fleet-settled-s seconds (5) after the start settled, nothing
  produced: ZooKeeper hears only pings, while the members begin fetching and then long-poll
  the broker;
- rolling restart: in each step a fifth (1/--rolling-steps) of the packs stop (their members
  leave cleanly) and start again with the same consumer ids; each step must settle the same way
  before the next, with every partition owned: a partition left unowned after a step would be
  one the fleet lost.

Per phase, the server's own counters (`mntr`; `srst` at the phase's start): packets received
and sent, the maximum and average request latency, and the most outstanding requests seen by
sampling every 100 ms. The harness's own reads (two child lists every 200 ms, the owners' data
once all partitions are owned and then the registrations' data, 128 at a time: one
multi-read where the server serves them, else as a member reads them) are in those counts too.
With them, from /proc, the cores the server's process ran and how long its threads together
waited for one; and beside them, the cores the fleet's processes and the broker ran: on a
machine they share, what the server does not get.

--fleet-code DIR runs the members on the zkconsumer package found in DIR (another checkout),
to compare code before and after a change on the same harness; --fleet-property KEY=VALUE
(repeatable) sets a consumer key of every member (a window size, say). --fleet-reference N
starts N reference Scala consumers of another group together (the start phase only);
--fleet-members 0 leaves zkconsumer's fleet out. --fleet-server-first runs ZooKeeper's threads
before those of every normal process during the fleet part, and back after it (`run_first`):
what the group asks of a server that has a core whenever it wants one; with TMPDIR on memory
(/dev/shm) its log is there too (and the broker's). --fleet-settled-s S: how long the phase
after settling lasts.

    scripts/bench --only fleet [--fleet-members 200] [--fleet-partitions 5000]
                  [--members-per-process 20] [--rolling-steps 5] [--fleet-code DIR]
                  [--fleet-property KEY=VALUE ...] [--fleet-nice N] [--fleet-reference N]
                  [--fleet-settled-s 5] [--fleet-server-first]
                  [--zookeeper-server bundle|debian]

ZKCONSUMER_FLEET_TRACE=DIR records every member's ZooKeeper requests (sent, kind, path's part,
answered) in DIR and prints them counted by kind per phase.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

SETTLE_TIMEOUT_S = 600.0
POLL_S = 0.2
QUIET_S, QUIET_CORES = 1.0, 0.15  # a broker at rest, its topic made


# -- a pack: several members in one process -------------------------------------------------

def pack(zookeeper: str, group: str, topic: str, consumer_ids: list[str],
         properties: dict[str, str]) -> None:
    """Start a member per id at once (with these extra `properties`), say "joined" when all
    are created, stop all on "stop" (or end of input), then say "stopped"."""
    from zkconsumer import ConsumerConnector

    trace = os.environ.get("ZKCONSUMER_FLEET_TRACE")
    if trace:
        import signal

        _trace_requests(trace)
        # A run stopped by hand still leaves what its members sent.
        signal.signal(signal.SIGTERM, lambda *_: (_write_trace(trace), os._exit(1)))
    members: list[Any] = []
    failures: list[str] = []
    lock = threading.Lock()

    def start(consumer_id: str) -> None:
        try:
            member = ConsumerConnector({"zookeeper.connect": zookeeper, "group.id": group,
                                        "consumer.id": consumer_id,
                                        "auto.offset.reset": "smallest", **properties})
            member.create_message_streams({topic: 1})
        except Exception as exc:  # noqa: BLE001 - reported to the harness
            with lock:
                failures.append(f"{consumer_id}: {type(exc).__name__}: {exc}")
            return
        with lock:
            members.append(member)

    starting = [threading.Thread(target=start, args=(cid,)) for cid in consumer_ids]
    for thread in starting:
        thread.start()
    for thread in starting:
        thread.join()
    print(f"joined {len(members)} failed {len(failures)}", flush=True)
    for failure in failures:
        print(f"failure {failure}", file=sys.stderr, flush=True)
    sys.stdin.readline()
    stopping = [threading.Thread(target=m.shutdown) for m in members]
    for thread in stopping:
        thread.start()
    for thread in stopping:
        thread.join()
    if trace:
        _write_trace(trace)
    print("stopped", flush=True)


_traced: list[list] = []  # [sent at, type:where, ops, answered at (0: never)]


def _trace_requests(_where: str) -> None:
    """Record each ZooKeeper request the pack's members send: when, its type, its ops."""
    from kazoo.client import KazooClient

    sent = KazooClient._call

    def counted(client, request, async_object):
        operations = getattr(request, "operations", None)
        ops = len(operations or getattr(request, "paths", ())) or 1
        first = operations[0].path if operations else (getattr(request, "paths", None) or [""])[0]
        path = getattr(request, "path", "") or first
        # /consumers/<group>/<what>/..., /brokers/<what>/..., a topic's partitions' state
        parts = path.split("/")
        where = parts[3] if parts[1:2] == ["consumers"] and len(parts) > 3 else \
            "/".join(parts[:3]) + ("/*/partitions" if len(parts) > 4 else "")
        kind = type(request).__name__ + (
            "(" + "+".join(sorted({type(op).__name__ for op in operations})) + ")"
            if operations else "")
        entry = [time.time(), f"{kind}:{where}", ops, 0.0]
        _traced.append(entry)
        async_object.rawlink(lambda _answer: entry.__setitem__(3, time.time()))
        return sent(client, request, async_object)

    KazooClient._call = counted  # type: ignore[method-assign]


def _write_trace(where: str) -> None:
    path = Path(where) / f"trace-{os.getpid()}.tsv"
    with path.open("w") as out:
        for at, kind, ops, answered in _traced:
            out.write(f"{at:.4f}\t{kind}\t{ops}\t{answered:.4f}\n")


def trace_summary(where: Path, began: float, ended: float) -> str:
    """Requests the members sent between two wall-clock times, by type (ops in multis)."""
    kinds: dict[str, list[int]] = {}
    for path in where.glob("trace-*.tsv"):
        for line in path.read_text().splitlines():
            at, kind, ops, _answered = line.split("\t")
            if began <= float(at) < ended:
                entry = kinds.setdefault(kind, [0, 0])
                entry[0] += 1
                entry[1] += int(ops)
    return ", ".join(f"{kind} {n} ({ops} ops)" if ops != n else f"{kind} {n}"
                     for kind, (n, ops) in sorted(kinds.items(), key=lambda kv: -kv[1][0]))


class Pack:
    def __init__(self, zookeeper: str, group: str, topic: str, consumer_ids: list[str],
                 code: Path | None, work: Path, properties: list[str], nice: int = 0) -> None:
        self.consumer_ids = consumer_ids
        env = dict(os.environ)
        if code is not None:
            env["PYTHONPATH"] = str(code)
        self._stderr = open(work / f"pack-{consumer_ids[0]}.err", "w")  # noqa: SIM115
        self._process = subprocess.Popen(
            [sys.executable, __file__, "pack", zookeeper, group, topic, ",".join(consumer_ids),
             *properties],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
            env=env, cwd=str(code) if code is not None else None,
            preexec_fn=(lambda: os.nice(nice)) if nice else None)

    @property
    def pid(self) -> int:
        return self._process.pid

    def joined(self) -> tuple[int, int]:
        words = self._process.stdout.readline().split()  # type: ignore[union-attr]
        if len(words) != 4:
            raise RuntimeError(f"pack {self.consumer_ids[0]} ended: see {self._stderr.name}")
        return int(words[1]), int(words[3])

    def failures(self) -> list[str]:
        """What its members that failed to start said (their first lines)."""
        self._stderr.flush()
        return [line.strip() for line in Path(self._stderr.name).read_text().splitlines()
                if line.startswith("failure ")][:3]

    def stop(self) -> None:
        self._process.stdin.write("stop\n")  # type: ignore[union-attr]
        self._process.stdin.flush()  # type: ignore[union-attr]

    def wait_stopped(self) -> None:
        self._process.communicate(timeout=120)
        self._stderr.close()

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()


# -- the server's counters ------------------------------------------------------------------

def four_letters(port: int, word: str) -> str:
    from zkconsumer.zk.four_letters import ask

    return ask(("127.0.0.1", port), word.encode(), 5.0, limit=1 << 24)


def mntr(port: int) -> dict[str, str]:
    from zkconsumer.zk.four_letters import parse_mntr

    return parse_mntr(four_letters(port, "mntr"))


def _scheduled(pid: int | None) -> tuple[float, float, float] | None:
    """(when, CPU seconds of the process, seconds its live threads together waited for a core),
    the CPU time from /proc (it keeps that of threads that ended), the wait from Linux's
    per-thread schedstat; None where either cannot be read."""
    from bench_start import cpu_s

    if pid is None:
        return None
    waited, read = 0, 0
    try:
        ran = cpu_s(pid)
        tasks = os.listdir(f"/proc/{pid}/task")
    except (OSError, IndexError, ValueError):
        return None
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
                waited += int(stat.read().split()[1])
            read += 1
        except (OSError, IndexError, ValueError):
            continue  # a thread that ended meanwhile
    return (time.monotonic(), ran, waited / 1e9) if read else None


class ServerCounters:
    """`srst` at the start, `mntr` sampled every 100 ms for outstanding requests (each sample
    kept, and with `ZKCONSUMER_FLEET_TRACE` set written beside the members' requests), and how
    much CPU the server's process had: on a machine the members share, a server whose threads
    wait for a core answers late whatever the group asks of it."""

    def __init__(self, server) -> None:
        """`server`: the local cluster's ZooKeeper (its port and pid)."""
        self._port = server.port
        self._pid = server.pid
        self._scheduled = _scheduled(server.pid)
        self.max_outstanding = 0
        self.samples: list[tuple[float, int, int]] = []  # when, outstanding, max latency
        self._stop = threading.Event()
        four_letters(self._port, "srst")
        self._start = mntr(self._port)
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.1):
            try:
                counters = mntr(self._port)
                now = int(counters["zk_outstanding_requests"])
                self.samples.append((time.time(), now, int(counters["zk_max_latency"])))
            except (OSError, KeyError, ValueError):
                continue
            self.max_outstanding = max(self.max_outstanding, now)

    def finish(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        trace = os.environ.get("ZKCONSUMER_FLEET_TRACE")
        if trace:
            with open(Path(trace) / f"server-{time.time_ns()}.tsv", "w") as out:
                out.writelines(f"{at}\t{outstanding}\t{latency}\n"
                               for at, outstanding, latency in self.samples)
        end = mntr(self._port)
        scheduled = _scheduled(self._pid)
        cpu = {}
        if self._scheduled is not None and scheduled is not None \
                and scheduled[0] > self._scheduled[0]:
            elapsed = scheduled[0] - self._scheduled[0]
            # A thread that ended between the two readings takes its wait with it: a floor.
            cpu = {"cores": (scheduled[1] - self._scheduled[1]) / elapsed,
                   "waiting": max(0.0, scheduled[2] - self._scheduled[2]) / elapsed}
        return {**cpu, "packets": sum(int(end[k]) - int(self._start[k])
                               for k in ("zk_packets_received", "zk_packets_sent")),
                "max_latency_ms": float(end["zk_max_latency"]),
                "avg_latency_ms": float(end["zk_avg_latency"]),
                "max_outstanding": float(max(self.max_outstanding,
                                             int(end["zk_outstanding_requests"]))),
                # servers from 3.6 on time their transaction log's fsyncs (srst resets them)
                **{key: float(end[name]) for key, name in (
                    ("fsyncs", "zk_cnt_fsynctime"), ("avg_fsync_ms", "zk_avg_fsynctime"),
                    ("max_fsync_ms", "zk_max_fsynctime")) if name in end}}


class Shares:
    """The cores the fleet's processes and the broker ran over a phase: what the server
    shares the machine with. A pack that ended is counted by the harness's reaped children's
    times, a live one from /proc."""

    def __init__(self, broker_pid: int, packs: list[Pack]) -> None:
        """`packs`: the list the phase replaces packs in."""
        self._broker = broker_pid
        self._packs = packs
        self._start = self._read()

    def _read(self) -> tuple[float, float, float]:
        from bench_start import cpu_s

        reaped = os.times()
        members = reaped.children_user + reaped.children_system
        for pack in self._packs:
            try:
                members += cpu_s(pack.pid)
            except (OSError, IndexError, ValueError):
                # Gone from /proc: reaped, so in the children's times already (this thread
                # reaps the packs, never between the two readings; one ended and not yet
                # reaped still has its times in /proc).
                continue
        return time.monotonic(), members, cpu_s(self._broker)

    def finish(self) -> dict[str, float]:
        end = self._read()
        elapsed = end[0] - self._start[0]
        return {"members_cores": (end[1] - self._start[1]) / elapsed,
                "broker_cores": (end[2] - self._start[2]) / elapsed}


def _phase(cluster, packs: list[Pack]) -> Callable[[], dict[str, float]]:
    """A phase's counting begun: the server's counters and what ran beside it; call the
    result at the phase's end for both."""
    counters, shares = ServerCounters(cluster.zookeeper), Shares(_broker(cluster).pid, packs)
    return lambda: {**counters.finish(), **shares.finish()}


# -- judging the group from its znodes ------------------------------------------------------

def range_assignment(thread_ids: list[str], partitions: int) -> dict[int, str]:
    """The reference's range assignment of one topic's partitions to these threads."""
    threads = sorted(thread_ids)
    share, extra = divmod(partitions, len(threads))
    owners = {}
    for index, thread in enumerate(threads):
        start = share * index + min(index, extra)
        for partition in range(start, start + share + (1 if index < extra else 0)):
            owners[partition] = thread
    return owners


class Settled(NamedTuple):
    """When a group was found settled: the newest registration's write and the last write of
    an owner znode as it now is, on the server's clock (stamped as the server takes each write
    in, before its log's fsync), and the start of the harness's read that found it so, on the
    harness's clock (the same machine's)."""

    newest_registration: float
    last_owner_written: float
    checked_at: float

    @property
    def after_s(self) -> float:
        """From the last registration to the moment the group settled: its last owner's write
        (0 when every owner in place was written before the last registration)."""
        return max(0.0, self.last_owner_written - self.newest_registration)

    @property
    def found_after_s(self) -> float:
        """From the last registration to when the harness's read found it: the read's start,
        or the last owner's write if that came while the read ran."""
        return max(0.0, max(self.checked_at, self.last_owner_written)
                   - self.newest_registration)

    def told(self) -> str:
        return (f"settled {self.after_s:.2f} s after the last registration (found "
                f"{self.found_after_s:.2f} s after it")


def settled_at(zk, group: str, topic: str, members: int, partitions: int) -> Settled | None:
    """The group settled (every member registered and every partition owned by its
    range-assigned thread), or None."""
    from zkconsumer.zk.multi_read import BATCH
    from zkconsumer.zk.znode_reader import KazooReader

    checked_at = time.time()
    ids_path, owners_path = f"/consumers/{group}/ids", f"/consumers/{group}/owners/{topic}"
    ids = zk.get_children(ids_path)
    if len(ids) != members or len(zk.exists(owners_path) and zk.get_children(owners_path)
                                  or ()) != partitions:
        return None
    expected = range_assignment([f"{consumer_id}-0" for consumer_id in ids], partitions)
    reader = KazooReader(zk)
    # A multi-read's worth at a time where the server serves them (else as a member reads a
    # level), stopping at the first owner out of place.
    last_owner_written = 0.0
    for first in range(0, partitions, BATCH):
        paths = {p: f"{owners_path}/{p}" for p in range(first, min(partitions, first + BATCH))}
        nodes = reader.data(paths.values())
        for partition, path in paths.items():
            node = nodes.get(path)  # None: released meanwhile, not settled
            if node is None or node.data.decode() != expected[partition]:
                return None
            last_owner_written = max(last_owner_written, node.mtime_s)
    # The registrations read as the owners are (where multi-reads are served, a few requests,
    # not one each: a burst of hundreds would be the phase's most outstanding requests).
    registered = reader.data(f"{ids_path}/{consumer_id}" for consumer_id in ids)
    if len(registered) != len(ids):
        return None  # one left meanwhile
    return Settled(max(node.mtime_s for node in registered.values()), last_owner_written,
                   checked_at)


def wait_settled(zk, group: str, topic: str, members: int, partitions: int) -> Settled:
    """The first check that finds the group settled."""
    from kazoo.exceptions import KazooException

    from zkconsumer.zk.multi_read import MultiReadAnswerError

    def check() -> Settled | None:
        try:
            return settled_at(zk, group, topic, members, partitions)
        except (KazooException, MultiReadAnswerError):  # the harness's own session on a
            return None                                 # starved machine: look again

    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while (found := check()) is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the group did not settle within {SETTLE_TIMEOUT_S:.0f}s")
        time.sleep(POLL_S)
    return found


# -- the scenario ---------------------------------------------------------------------------

def _topic_with_leaders(cluster, zk, topic: str, partitions: int) -> None:
    """The topic made, named with a leader for every partition in the broker's metadata, and
    the broker quiet: a deploy onto a topic that exists finds its leaders named (members
    started before ask again and again, each answer thousands of partitions long), and a broker
    that has long made the topic's logs (one still busy with them would take a core from the
    phase that follows)."""
    from zkconsumer.localcluster import create_topic, wait_for_broker_metadata

    broker = _broker(cluster)
    create_topic(zk, topic, partitions, timeout=600)
    wait_for_broker_metadata(broker.port, topic, partitions, timeout=600)
    waited, quiet = _quiet(broker.pid)
    print(f"{'':<16} the broker was {'done with' if quiet else 'still busy with'} the topic "
          f"{waited:.1f} s after naming its leaders", flush=True)


def _broker(cluster):
    """The local cluster's first broker (the one the fleet's topic lives on)."""
    return cluster.brokers[min(cluster.brokers)]


def may_run_first() -> bool:
    """Whether this process may set real-time scheduling (tried on its own thread, and its
    scheduling put back as it was)."""
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
    except PermissionError:
        return False
    os.sched_setscheduler(0, policy, param)
    return True


def run_first(pid: int, first: bool = True) -> None:
    """Every thread of the process under real-time round-robin scheduling at the lowest
    priority (the threads it makes later inherit it): it gets a core whenever it wants one, as
    on a machine of its own, and the members take what is left. `first=False` puts them back
    under the normal scheduler."""
    policy, priority = (os.SCHED_RR, 1) if first else (os.SCHED_OTHER, 0)
    done: set[int] = set()
    try:
        while tasks := {int(task) for task in os.listdir(f"/proc/{pid}/task")} - done:
            for task in tasks:  # again until no thread is new: one may make another meanwhile
                try:
                    os.sched_setscheduler(task, policy, os.sched_param(priority))
                except ProcessLookupError:
                    pass  # a thread that ended meanwhile
                done.add(task)
    except PermissionError:
        raise SystemExit("error: --fleet-server-first needs the right to set real-time "
                         "scheduling (root, or CAP_SYS_NICE)") from None
    except FileNotFoundError:
        if first:
            raise SystemExit(f"error: the ZooKeeper server (pid {pid}) is gone") from None
        # gone by the end: nothing to put back, and whatever ended the fleet part is told


def _quiet(pid: int, timeout_s: float = 300.0) -> tuple[float, bool]:
    """(seconds waited, whether the process ran under QUIET_CORES over a QUIET_S window
    within timeout_s)."""
    from bench_start import cpu_s

    began = time.monotonic()
    before = (began, cpu_s(pid))
    while time.monotonic() - began < timeout_s:
        time.sleep(QUIET_S)
        now = (time.monotonic(), cpu_s(pid))
        if (now[1] - before[1]) / (now[0] - before[0]) < QUIET_CORES:
            return time.monotonic() - began, True
        before = now
    return time.monotonic() - began, False


def fleet(cluster, args, work: Path) -> None:
    from zkconsumer.zk.session import zookeeper_session

    members, partitions, per = args.fleet_members, args.fleet_partitions, args.members_per_process
    code = Path(args.fleet_code).resolve() if args.fleet_code else None
    port = cluster.zookeeper.port
    zookeeper = cluster.zookeeper_connect
    group, topic = f"fleet-{time.time_ns()}", f"fleet-{time.time_ns()}"
    ids = [f"m{index:04d}" for index in range(members)]
    batches = [ids[start:start + per] for start in range(0, members, per)]
    print(f"{members} members x {partitions} partitions, {per} per process "
          f"({len(batches)} processes{f', nice {args.fleet_nice}' if args.fleet_nice else ''}"
          f"{', the server first' if args.fleet_server_first else ''}), "
          f"code: {code or 'this checkout'}, properties: "
          f"{' '.join(args.fleet_property) or 'defaults'}, "
          f"{four_letters(port, 'srvr').splitlines()[0].split(',')[0]}")
    with zookeeper_session(zookeeper, timeout_s=30) as zk:
        _topic_with_leaders(cluster, zk, topic, partitions)
        packs: list[Pack] = []
        try:
            counted = _phase(cluster, packs)
            phases = [time.time()]
            began = time.monotonic()
            packs.extend(Pack(zookeeper, group, topic, batch, code, work, args.fleet_property,
                              args.fleet_nice)
                         for batch in batches)
            outcomes = [p.joined() for p in packs]
            print(f"{'':<16} every process started its members "
                  f"{time.monotonic() - began:.1f} s after the first began", flush=True)
            joined = sum(ok for ok, _failed in outcomes)
            failed = sum(bad for _ok, bad in outcomes)
            settled = wait_settled(zk, group, topic, members, partitions) \
                if failed == 0 else None
            _report("start", counted(),
                    f"{joined} joined, {failed} failed, "
                    + (f"{settled.told()}; " if settled is not None else "settled never (")
                    + f"{time.monotonic() - began:.1f} s from the first process started)")
            phases.append(time.time())
            if failed:
                return
            # What the settled group costs the machine while ZooKeeper hears only its pings:
            # its members begin fetching, and long-poll the broker from then on (every
            # fetch.wait.max.ms when nothing is produced).
            counted = _phase(cluster, packs)
            time.sleep(args.fleet_settled_s)
            _report("after settling", counted(),
                    f"the {args.fleet_settled_s:g} s after it, nothing produced")
            counted = _phase(cluster, packs)
            steps = args.rolling_steps
            settles = []
            for step in range(steps):
                chosen = [index for index in range(len(packs))
                          if index * steps // len(packs) == step]
                for index in chosen:
                    packs[index].stop()
                for index in chosen:
                    packs[index].wait_stopped()
                    packs[index] = Pack(zookeeper, group, topic, batches[index], code, work,
                                         args.fleet_property, args.fleet_nice)
                for index in chosen:
                    ok, bad = packs[index].joined()
                    if bad:
                        raise RuntimeError(f"{bad} members failed to start again: "
                                           f"{packs[index].failures()}")
                settles.append(wait_settled(zk, group, topic, members, partitions))
            _report("rolling restart", counted(),
                    f"{steps} steps, each settled with every partition owned by its range "
                    f"owner (nothing unowned); settle after each step's last registration: "
                    f"{', '.join(f'{s.after_s:.2f}' for s in settles)} s (found "
                    f"{', '.join(f'{s.found_after_s:.2f}' for s in settles)} s after it)")
            phases.append(time.time())
        finally:
            for p in packs:
                try:
                    p.stop()
                except (OSError, ValueError):  # ended, or its pipe closed by an interrupted wait
                    pass
            for p in packs:
                try:
                    p.wait_stopped()
                except (subprocess.TimeoutExpired, OSError, ValueError):
                    p.kill()
            trace = os.environ.get("ZKCONSUMER_FLEET_TRACE")
            if trace:
                for name, began_at, ended_at in zip(("start", "rolling restart"), phases,
                                                    phases[1:], strict=False):
                    print(f"{name:<16} members' requests: "
                          f"{trace_summary(Path(trace), began_at, ended_at)}", flush=True)


def reference_fleet(cluster, args, work: Path) -> None:
    """--fleet-reference reference Scala consumers (a JVM each) of one group on the same
    topic shape, started together: the start phase only, judged and counted as ours are."""
    from zkconsumer.testing.reference import ReferenceConsumer
    from zkconsumer.zk.session import zookeeper_session

    members, partitions = args.fleet_reference, args.fleet_partitions
    group, topic = f"fleet-ref-{time.time_ns()}", f"fleet-ref-{time.time_ns()}"
    print(f"reference Scala consumer: {members} members x {partitions} partitions, a process "
          "each, rebalance.backoff.ms 500, rebalance.max.retries 10")
    with zookeeper_session(cluster.zookeeper_connect, timeout_s=30) as zk:
        _topic_with_leaders(cluster, zk, topic, partitions)
        consumers: list[Any] = []
        try:
            counters = ServerCounters(cluster.zookeeper)
            began = time.monotonic()
            consumers = [ReferenceConsumer(work / "reference", cluster.zookeeper_connect, group,
                                           topic=topic, properties={
                                               "rebalance.backoff.ms": "500",
                                               "rebalance.max.retries": "10"})
                         for _ in range(members)]
            settled = wait_settled(zk, group, topic, members, partitions)
            _report("reference start", counters.finish(),
                    f"{members} joined, {settled.told()}; "
                    f"{time.monotonic() - began:.1f} s from the first process started)")
        finally:
            for consumer in consumers:
                consumer.stop()


def _report(phase: str, counted: dict[str, float], outcome: str) -> None:
    print(f"{phase:<16} {outcome}", flush=True)
    print(f"{'':<16} ZooKeeper: {counted['packets']:.0f} packets, max latency "
          f"{counted['max_latency_ms']:.0f} ms, avg {counted['avg_latency_ms']:.1f} ms, max "
          f"outstanding {counted['max_outstanding']:.0f}"
          + (f"; {counted['fsyncs']:.0f} fsyncs of its log, avg {counted['avg_fsync_ms']:.1f} "
             f"ms, max {counted['max_fsync_ms']:.0f} ms" if "fsyncs" in counted else "")
          + (f"; its process ran {counted['cores']:.2f} cores, its threads together waited "
             f"{counted['waiting']:.1f} s a second for one" if "cores" in counted else ""),
          flush=True)
    if "members_cores" in counted:
        print(f"{'':<16} beside it, the members' processes ran {counted['members_cores']:.2f} "
              f"cores and the broker {counted['broker_cores']:.2f}", flush=True)


if __name__ == "__main__" and len(sys.argv) >= 6 and sys.argv[1] == "pack":
    import logging

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    pack(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5].split(","),
         dict(setting.split("=", 1) for setting in sys.argv[6:]))

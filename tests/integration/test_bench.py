"""scripts/bench end to end on a tiny data set: every scenario runs and prints its figures, so
the benchmark that backs the performance claims cannot rot unnoticed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.java import require_java
from support.waiting import wait_until

pytestmark = pytest.mark.integration

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
# contender, records/s, the two ratios, peak RSS (MB, or "-" where not measured)
THROUGHPUT_ROW = re.compile(r"^(?P<name>\S.*?)\s+(?P<rate>[\d,]+)\s+[\d.]+x\s+[\d.]+x\s+"
                            r"(?P<rss>\d+|-)$", re.MULTILINE)
# contender, events, p50, p99 and max (ms)
REBALANCE_ROW = re.compile(r"^(?P<name>\S.*?)\s+(?P<events>\d+)\s+\d+\s+\d+\s+\d+$",
                           re.MULTILINE)
# reader, records/s, the ratio to kafka-python's reader
DECODE_ROW = re.compile(r"^(?P<name>\S.*?)\s+(?P<rate>[\d,]+)\s+(?P<ratio>[\d.]+)x$",
                        re.MULTILINE)
DECODE_READERS = ("kafka-python v2 (MemoryRecords)", "aiokafka v1 (MemoryRecords, C)",
                  "aiokafka v2 (MemoryRecords, C)",
                  *(f"zkconsumer {form}, {path}" for form in ("v0", "v1", "v2")
                    for path in ("aiokafka path (tuples)", "compiled (tuples)",
                                 "compiled (arrow)")))


def run_bench(scratch: Path, *arguments: str) -> subprocess.CompletedProcess:
    """`scripts/bench.py` with these arguments, its cluster in `scratch` (where strays are
    reaped); asserts that it ended well."""
    require_java()
    scratch.mkdir(exist_ok=True)
    result = subprocess.run([sys.executable, str(SCRIPTS / "bench.py"), *arguments],
                            env={**os.environ, "TMPDIR": str(scratch)},
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


# Among the long runs (`scripts/test -m long`): a check of the benchmark script, not of the
# member, and 40 s of the default run's budget.
@pytest.mark.long
@pytest.mark.reference  # one of its contenders is the reference Scala consumer
def test_the_benchmark_runs_every_scenario_and_prints_each_figure(work_root):
    result = run_bench(
        work_root / "bench", "--records", "3000", "--partitions", "2",
        "--coordination-rounds", "1", "--members", "3", "--rebalance-partitions", "6",
        "--events", "2", "--reference-events", "0", "--groups", "20", "--group-partitions", "2",
        "--scrapes", "3", "--start-runs", "1", "--start-fleet", "2",
        "--start-fleet-partitions", "4", "--start-fleet-rounds", "1")
    rows = {match["name"]: match for match in THROUGHPUT_ROW.finditer(result.stdout)}
    for contender in ("zkconsumer (per record)", "zkconsumer (batches)",
                      "zkconsumer (arrow batches)", "zkconsumer (per record, Kafka-coordinated)",
                      "zkconsumer (batches, Kafka-coordinated)",
                      "kafka-python (per record)", "reference Scala consumer (its own timing)"):
        assert contender in rows, result.stdout
        assert int(rows[contender]["rate"].replace(",", "")) > 0, rows[contender][0]
    for own in ("zkconsumer (per record)", "zkconsumer (batches)"):
        assert rows[own]["rss"].isdigit(), f"no peak RSS measured: {rows[own][0]}"
    for way in ("per record", "batches"):  # each Kafka-coordinated member against its twin
        assert re.search(rf"^{way}, Kafka-coordinated: [\d.]+x the ZooKeeper-coordinated "
                         r"member's records/s from the streams being ready, [\d.]+x as a whole",
                         result.stdout, re.MULTILINE), result.stdout
    after_start_up = result.stdout.partition("after start-up, as the reference times itself")[2]
    for own, target in (("zkconsumer (per record)", "0.7x"), ("zkconsumer (batches)", "1.0x"),
                        ("zkconsumer (arrow batches)", "1.5x")):
        assert re.search(rf"^{re.escape(own)}\s+[\d,]+\s+[\d.]+x\s+{target}$", after_start_up,
                         re.MULTILINE), result.stdout
    for way in ("per record", "batches"):  # the SASL part: a ratio against the plain relay
        assert re.search(rf"^{way}, SCRAM-SHA-512\s+[\d,]+\s+[\d.]+x\s+0\.8x$", result.stdout,
                         re.MULTILINE), result.stdout
    assert re.search(r"logins checked by the front: [1-9]\d* accepted, 0 refused",
                     result.stdout), result.stdout
    assert "commit 1,000 changed offsets: batched" in result.stdout
    rebalanced = {match["name"]: match["events"]
                  for match in REBALANCE_ROW.finditer(result.stdout)}
    for contender in ("zkconsumer", "zkconsumer, Kafka-coordinated",
                      "kafka-python KafkaConsumer (Kafka-coordinated)"):
        assert rebalanced.get(contender) == "2", result.stdout
    for members in ("zkconsumer", "Kafka-coordinated zkconsumer", "kafka-python"):
        assert re.search(rf"partitions held by two {members} members at once, .*: \d+$",
                         result.stdout, re.MULTILINE), result.stdout
    assert "Kafka-coordinated zkconsumer p50 is" in result.stdout
    assert "20 groups x 2 partitions" in result.stdout
    assert re.search(r"scrape of /metrics: median \d+ ms", result.stdout), result.stdout
    assert "the cached scrape is" in result.stdout
    assert re.search(r"^  zkconsumer --help: [\d.]+x import kafka's wall time, [\d.]+x its CPU",
                     result.stdout, re.MULTILINE), result.stdout
    assert "zkconsumer consume, registered" in result.stdout
    assert len(re.findall(r"^  zkconsumer consume: [\d.]+x KafkaConsumer's wall time",
                          result.stdout, re.MULTILINE)) == 2, result.stdout  # one, and the fleet
    assert_decode_rows(result.stdout)


def test_the_decode_part_runs_without_a_cluster():
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench.py"), "--only", "decode", "--records", "3000"],
        capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_decode_rows(result.stdout)


def assert_decode_rows(output: str) -> None:
    rows = {match["name"]: match for match in DECODE_ROW.finditer(output)}
    for reader in DECODE_READERS:
        assert reader in rows, output
        assert int(rows[reader]["rate"].replace(",", "")) > 0, rows[reader][0]
    assert rows["kafka-python v2 (MemoryRecords)"]["ratio"] == "1.00"


def test_the_handout_part_runs_without_a_cluster():
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench.py"), "--only", "handout", "--records", "3000"],
        capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {match["name"]: match for match in DECODE_ROW.finditer(result.stdout)}
    for way in ("per record", "batches"):
        for name in (f"direct ({way})", f"stream ({way})"):
            assert name in rows, result.stdout
            assert int(rows[name]["rate"].replace(",", "")) > 0, rows[name][0]
        assert rows[f"direct ({way})"]["ratio"] == "1.000"


# The fleet part on a tiny group (about 12 s, so in the default run), on the ZooKeeper that
# serves multi-reads: its checks (every member joined, every partition owned by its range owner
# after the start and after each rolling step) and its counters cannot rot unnoticed.
def test_the_fleet_benchmark_starts_and_restarts_a_group_and_prints_the_servers_counters(
        work_root):
    result = run_bench(
        work_root / "bench-fleet", "--only", "fleet", "--fleet-members", "4",
        "--fleet-partitions", "12", "--members-per-process", "2", "--rolling-steps", "2",
        "--zookeeper-server", "debian", "--fleet-settled-s", "1")
    assert "Zookeeper version: 3.8" in result.stdout, result.stdout
    # settled: timed to the last owner's write; found: when the harness's read saw it
    assert re.search(r"^start\s+4 joined, 0 failed, settled [\d.]+ s after the last "
                     r"registration \(found [\d.]+ s after it;", result.stdout,
                     re.MULTILINE), result.stdout
    assert re.search(r"^rolling restart\s+2 steps, each settled with every partition owned by "
                     r"its range owner .*: [\d.]+, [\d.]+ s \(found [\d.]+, [\d.]+ s after it\)",
                     result.stdout, re.MULTILINE), result.stdout
    counters = re.findall(r"ZooKeeper: (\d+) packets, max latency \d+ ms, avg [\d.]+ ms, max "
                          r"outstanding \d+; \d+ fsyncs of its log, .*; its process ran "
                          r"[\d.]+ cores, its threads together waited [\d.]+ s a second", result.stdout)
    # the phase after settling may be too short for a ping
    assert len(counters) == 3 and int(counters[0]) > 0 and int(counters[2]) > 0, result.stdout
    assert re.search(r"^after settling\s+the 1 s after it", result.stdout, re.MULTILINE), \
        result.stdout
    assert "the broker was done with the topic" in result.stdout, result.stdout
    shares = re.findall(r"beside it, the members' processes ran ([\d.]+) cores and the broker "
                        r"([\d.]+)", result.stdout)
    assert len(shares) == 3 and float(shares[0][0]) > 0 and float(shares[2][0]) > 0, \
        result.stdout


def test_the_fleet_benchmark_runs_every_thread_of_a_server_first_and_back(tmp_path):
    """--fleet-server-first: every thread of the server's process under real-time round-robin
    scheduling; and back under the normal one for the parts that follow."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        from bench_fleet import may_run_first, run_first
    finally:
        sys.path.remove(str(SCRIPTS))
    if not may_run_first():
        pytest.skip("this machine refuses real-time scheduling (no CAP_SYS_NICE)")
    ready = tmp_path / "ready"
    server = subprocess.Popen([sys.executable, "-c", (
        "import pathlib, sys, threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        f"pathlib.Path({str(ready)!r}).touch()\n"
        "time.sleep(60)\n")])
    try:
        wait_until(ready.exists, timeout=30, message="the process and its second thread")
        tasks = [int(task) for task in os.listdir(f"/proc/{server.pid}/task")]
        assert len(tasks) >= 2
        run_first(server.pid)
        assert {os.sched_getscheduler(task) for task in tasks} == {os.SCHED_RR}
        run_first(server.pid, first=False)
        assert {os.sched_getscheduler(task) for task in tasks} == {os.SCHED_OTHER}
    finally:
        server.kill()
        server.wait()


def test_the_fleet_benchmark_refuses_server_first_without_the_fleet_part():
    result = subprocess.run([sys.executable, str(SCRIPTS / "bench.py"), "--only", "decode",
                             "--fleet-server-first"], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 2, result.stderr
    assert "--fleet-server-first: only with --only fleet" in result.stderr.splitlines()[-1]

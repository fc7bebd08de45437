"""The original Scala tools from the 0.9.0.1 bundle, run as independent judges of compatibility.

`ReferenceConsumer` is a real member of a ZooKeeper-coordinated group (the console consumer on
the old consumer); `run_tool` runs a one-shot tool such as ConsumerOffsetChecker.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Mapping
from pathlib import Path

from zkconsumer.localcluster.bundle import ensure_bundle
from zkconsumer.localcluster.processes import bundle_environment, is_alive, spawn, stop_process


class ReferenceConsumer:
    """A `kafka-console-consumer.sh --zookeeper` process in a group.

    Its command line carries its own config file path, which lives in `work_dir`; that is how
    it is found again when stopped, and how a test run's clean-up finds strays.
    """

    def __init__(self, work_dir: Path, zookeeper_connect: str, group: str, *,
                 topic: str | None = None, whitelist: str | None = None,
                 blacklist: str | None = None, properties: Mapping[str, str] | None = None,
                 kafka_home: Path | None = None) -> None:
        if sum(x is not None for x in (topic, whitelist, blacklist)) != 1:
            raise ValueError("give exactly one of topic, whitelist, blacklist")
        self.work_dir = Path(work_dir) / f"reference-{uuid.uuid4().hex[:8]}"
        self.work_dir.mkdir(parents=True)
        config = self.work_dir / "consumer.properties"
        settings = {"group.id": group, **(properties or {})}
        config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        selector = (["--topic", topic] if topic is not None else
                    ["--whitelist", whitelist] if whitelist is not None else
                    ["--blacklist", blacklist])
        home = kafka_home or ensure_bundle()
        self.output = self.work_dir / "output.log"
        self._process = spawn(
            [str(home / "bin" / "kafka-console-consumer.sh"), "--zookeeper", zookeeper_connect,
             *selector, "--consumer.config", str(config)],
            bundle_environment(heap="-Xmx128M", log_dir=self.work_dir),
            self.output,
        )

    @property
    def pid(self) -> int:
        return self._process.pid

    def is_running(self) -> bool:
        return is_alive(self.pid, str(self.work_dir), self._process)

    def stop(self, graceful: bool = True) -> None:
        stop_process(self.pid, str(self.work_dir), graceful=graceful, timeout=20.0,
                     child=self._process)


def run_tool(class_name: str, args: list[str], *, work_dir: Path, timeout: float = 120.0,
             kafka_home: Path | None = None) -> subprocess.CompletedProcess:
    """Run one of the bundle's tools (e.g. kafka.tools.ConsumerOffsetChecker) to completion."""
    home = kafka_home or ensure_bundle()
    work_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [str(home / "bin" / "kafka-run-class.sh"), class_name, *args],
        env=bundle_environment(heap="-Xmx128M", log_dir=work_dir),
        check=False, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )


def produce_test_data(bootstrap_servers: str, topic: str, records: int, *, work_dir: Path,
                      record_size: int = 100) -> None:
    """Fill a topic fast with the reference kafka-producer-perf-test (fixed-size records),
    for benchmarks; raises ClusterError with the tool's last words if it fails."""
    from zkconsumer.localcluster.cluster import ClusterError

    tool = ensure_bundle() / "bin" / "kafka-producer-perf-test.sh"
    work_dir.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [str(tool), "--topic", topic, "--num-records", str(records), "--record-size",
         str(record_size), "--throughput", "-1", "--producer-props",
         f"bootstrap.servers={bootstrap_servers}", "acks=1", "batch.size=65536", "linger.ms=5"],
        env=bundle_environment(heap="-Xmx512M", log_dir=work_dir), capture_output=True,
        text=True, check=False, timeout=900, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise ClusterError(f"producing test data failed: {result.stderr.strip()[-500:]}")

"""`zkconsumer exporter` run as operators run it, and reading what it serves."""

from __future__ import annotations

import subprocess
import sys

from support.scrape import get, samples
from zkconsumer.localcluster.processes import free_port, log_tail


def lag_of(found: dict, group: str, topic: str, partition: int) -> float | None:
    return found.get(("zkconsumer_group_lag",
                      (("group", group), ("partition", str(partition)), ("topic", topic))))


class ExporterProcess:
    """`zkconsumer exporter` in a process of its own, as operators run it."""

    def __init__(self, tmp_path, *args: str) -> None:
        self.port = free_port()
        self.log = tmp_path / f"exporter-{self.port}.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "zkconsumer", "--log-format", "json", "exporter",
                 "--port", str(self.port), *args],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def scrape(self) -> dict:
        if self.process.poll() is not None:
            raise AssertionError(f"the exporter exited with {self.process.returncode}:\n"
                                 f"{log_tail(self.log)}")
        try:
            status, text = get(self.port, "/metrics")
        except OSError:
            return {}  # not listening yet
        return samples(text) if status == 200 else {}

    def stop(self) -> int:
        """A clean stop (SIGTERM); returns the exit status."""
        if self.process.poll() is None:
            self.process.terminate()
        return self.process.wait(timeout=60)

    def kill(self) -> None:
        """Clean-up after a test: whatever is still running is killed."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

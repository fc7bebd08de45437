"""zkconsumer members as separate `zkconsumer consume` processes, so they can be killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path


class CliMember:
    def __init__(self, cluster, group: str, topic: str, output_dir: Path, name: str,
                 *extra: str) -> None:
        self.name = name
        self.output = output_dir / f"{name}.jsonl"
        self.errors = output_dir / f"{name}.log"
        command = [sys.executable, "-m", "zkconsumer", "--log-format", "json", "consume",
                   "--zookeeper", cluster.zookeeper_connect, "--group", group, "--topic", topic,
                   "--from-beginning", "--format", "jsonl", *extra]
        with open(self.output, "wb") as out, open(self.errors, "wb") as err:
            self.process = subprocess.Popen(command, stdout=out, stderr=err,
                                            stdin=subprocess.DEVNULL, env=dict(os.environ))

    def records(self) -> list[dict]:
        lines = self.output.read_bytes().splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def has_rebalanced(self) -> bool:
        """True once the member owns its share (before that, SIGTERM may find Python still
        starting, with no handler installed yet)."""
        return b'"event": "rebalanced"' in self.errors.read_bytes()

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(self.errors.read_text(errors="replace").splitlines()[-lines:])

    def terminate(self, timeout: float = 60) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

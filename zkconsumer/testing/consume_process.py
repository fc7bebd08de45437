"""A `zkconsumer consume` worker in a process of its own, as deployments run it.

Tests and the fault runner kill, freeze and stop these the way real workers die; what a worker
delivered (`--format jsonl`) and logged (`--log-format json`) is read back from its files. The
Python-API worker (`api_worker`, for callbacks the command cannot take) writes the same files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

# How each kind of worker is started: the command, and the Python-API worker.
CLI = ("-m", "zkconsumer", "--log-format", "json", "consume", "--format", "jsonl")
API_WORKER = ("-m", "zkconsumer.testing.api_worker")


class ConsumeProcess:
    def __init__(self, zookeeper_connect: str | None, group: str, topic: str, work_dir: Path,
                 name: str, *extra: str, from_beginning: bool = True,
                 program: tuple[str, ...] = CLI,
                 environment: Mapping[str, str] | None = None,
                 launcher: tuple[str, ...] = ()) -> None:
        """`zookeeper_connect` None: a member that needs none (its `extra` options say where
        Kafka is); `environment`: variables added to this process's own; `launcher`: what the
        command runs under (`ip netns exec NAME`, for a member on a host of its own)."""
        self.name = name
        self.output = Path(work_dir) / f"{name}.jsonl"
        self.log = Path(work_dir) / f"{name}.log"
        zookeeper = ["--zookeeper", zookeeper_connect] if zookeeper_connect else []
        command = [*launcher, sys.executable, *program, *zookeeper, "--group", group, "--topic", topic,
                   *(["--from-beginning"] if from_beginning else []), *extra]
        self._stop_requested = False
        with open(self.output, "wb") as out, open(self.log, "wb") as err:
            self.process = subprocess.Popen(command, stdout=out, stderr=err,
                                            stdin=subprocess.DEVNULL,
                                            env={**os.environ, **(environment or {})})

    def records(self) -> list[dict]:
        """Every record delivered so far; a last line cut short by SIGKILL is not one."""
        return _json_lines(self.output)

    def log_lines(self) -> list[dict]:
        """Every JSON log line so far (a plain `error: ...` line on failure is not one)."""
        return _json_lines(self.log)

    def log_events(self, event: str) -> list[dict]:
        return [line for line in self.log_lines() if line.get("event") == event]

    def rebalance_ms(self) -> list[int]:
        return [line["ms"] for line in self.log_events("rebalanced") if "ms" in line]

    def consumer_id(self) -> str | None:
        """The member's consumer id, once it has registered in the group (a member on
        ZooKeeper coordination; one on Kafka's has a member id per generation instead). The
        latest: a worker that followed its group through a cutover and back registered again,
        as a new member."""
        return next((line["consumer_id"] for line in reversed(self.log_events("registered"))
                     if "consumer_id" in line), None)

    def has_rebalanced(self) -> bool:
        """True once the worker owns its share (before that, SIGTERM may find Python still
        starting, with no handler installed yet)."""
        return bool(self.log_events("rebalanced"))

    def log_tail(self, lines: int = 20) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def request_stop(self) -> None:
        """Ask for a clean stop (SIGTERM), once: a second signal could arrive after the run
        ended and Python's default handler is back, and kill a worker that stopped cleanly."""
        if not self._stop_requested:
            self._stop_requested = True
            self.process.send_signal(signal.SIGTERM)

    def terminate(self, timeout: float = 60) -> int:
        """A clean stop, as a service manager asks for one; returns the exit status."""
        self.request_stop()
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)

    def stop(self) -> None:
        """Kill it if it is still running (clean-up after a test)."""
        if self.process.poll() is None:
            self.kill()


def _json_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    found = []
    for line in path.read_bytes().splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found

"""Starting and stopping the bundle's Java servers by process id.

Every server runs in its own session (process group), so stopping it never touches the caller,
and is identified by its work folder in its command line, so a stale pid that the system has
reused for something else is never signalled.
"""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

from zkconsumer.localcluster.java import find_java

# The 0.9 start scripts pass GC flags that Java 9+ rejects; these replace them.
_JVM_OPTIONS = {
    "KAFKA_JVM_PERFORMANCE_OPTS": "-server -XX:+UseG1GC -Djava.awt.headless=true",
    "KAFKA_GC_LOG_OPTS": " ",
}


_EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST_CHOSEN_PORT = 10000
_PORT_TRIES = 50


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now, chosen below the system's
    ephemeral range when there is room: a port from that range (what binding to port 0 gives)
    can be taken by any outgoing connection in the time a JVM needs to start and bind it."""
    lowest_ephemeral = _lowest_ephemeral_port()
    if lowest_ephemeral - _LOWEST_CHOSEN_PORT >= 1000:
        for _ in range(_PORT_TRIES):
            port = random.randrange(_LOWEST_CHOSEN_PORT, lowest_ephemeral)
            if _bindable(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _lowest_ephemeral_port() -> int:
    try:
        return int(_EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def port_was_taken(log_file: Path, since: int = 0) -> bool:
    """True when a server's log, from byte `since` on, says its port was bound by another."""
    try:
        with open(log_file, "rb") as log:
            log.seek(since)
            text = log.read().decode(errors="replace")
    except OSError:
        return False
    return "Address already in use" in text


def bundle_environment(heap: str, log_dir: Path, log4j_config: Path | None = None) -> dict[str, str]:
    """Environment for the bundle's scripts on a modern JVM, with logs kept out of the bundle."""
    java = find_java()
    env = dict(os.environ)
    env.update(_JVM_OPTIONS)
    env["KAFKA_HEAP_OPTS"] = heap
    env["JAVA_HOME"] = str(Path(java).resolve().parent.parent)
    env["LOG_DIR"] = str(log_dir)
    if log4j_config is not None:
        env["KAFKA_LOG4J_OPTS"] = f"-Dlog4j.configuration=file:{log4j_config}"
    env.pop("JMX_PORT", None)
    return env


def spawn(command: list[str], env: dict[str, str], log_file: Path) -> subprocess.Popen:
    """Start a server detached from our terminal and signals, output appended to its log."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as log:
        return subprocess.Popen(
            command, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def is_running(pid: int, marker: str) -> bool:
    """True when `pid` is alive, not a zombie, and its command line mentions `marker`."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = status.rsplit(")", 1)[-1].split()[0]
    return state != "Z" and marker.encode() in cmdline


def stop_process(pid: int, marker: str, *, graceful: bool = True, timeout: float = 30.0,
                 child: subprocess.Popen | None = None) -> None:
    """Stop a server: SIGTERM and wait (graceful), then SIGKILL whatever is left of its group."""
    def alive() -> bool:
        return is_alive(pid, marker, child)

    if not alive():
        return
    if graceful:
        _signal_group(pid, signal.SIGTERM)
        _wait_for_exit(alive, timeout)
    if alive():
        _signal_group(pid, signal.SIGKILL)
        _wait_for_exit(alive, 10.0)


def is_alive(pid: int, marker: str, child: subprocess.Popen | None = None) -> bool:
    """Our own child answers through its handle (which also reaps it); others by pid and marker.

    The marker check alone is not enough for a child that was just spawned: while a start script
    execs the next program, /proc briefly shows an empty command line.
    """
    if child is not None:
        return child.poll() is None
    return is_running(pid, marker)


def _wait_for_exit(alive, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive():
        time.sleep(0.05)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def log_tail(log_file: Path, lines: int = 5) -> str:
    """The last lines of a server log, for error messages when a server dies at start-up.
    Java stack frames are left out: they would fill the tail and hide the exception's line."""
    try:
        text = log_file.read_text(errors="replace")
    except OSError:
        return ""
    kept = [line.strip() for line in text.strip().splitlines()
            if line.strip() and not _STACK_FRAME.match(line)]
    return " | ".join(kept[-lines:])


_STACK_FRAME = re.compile(r"\s+(at |\.\.\. \d+ more)")

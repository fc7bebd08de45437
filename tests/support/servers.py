"""Starting a test server on a free port, again on another when someone took the port first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

from support.waiting import wait_until
from zkconsumer.localcluster.processes import free_port, log_tail


class StartFailed(Exception):
    """The server stopped before it was ready (most often: its port was taken first)."""


class Server(Protocol):
    log: Path

    def stop(self) -> None: ...


S = TypeVar("S", bound=Server)


def start_on_a_free_port(what: str, launch: Callable[[int, int], S],
                         ready: Callable[[S], bool], *, attempts: int, timeout: float) -> S:
    """`launch(attempt, port)` spawns the server; `ready(server)` is true once it answers, and
    raises StartFailed when it died. A server that is not ready is stopped, never left behind."""
    failures = []
    for attempt in range(attempts):
        port = free_port()
        server = launch(attempt, port)
        try:
            wait_until(lambda started=server: ready(started), timeout=timeout, interval=0.05,
                       message=f"{what} to be ready on port {port}")
            return server
        except StartFailed:
            server.stop()
            failures.append(f"port {port}: {log_tail(server.log)}")
        except BaseException:
            server.stop()
            raise
    raise RuntimeError(f"{what} did not start in {attempts} attempts: " + "; ".join(failures))

"""The settings a ZooKeeper session is opened with, as the session edge takes them.

`ConsumerConfig` holds some forty keys; opening a session needs eight. Handing the edge only these
keeps it from growing quiet dependencies on the rest, and lets a tool that is not a consumer (the
exporter, a test) open a session without a group id.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zkconsumer.config.addresses import ZookeeperConnect

# `zookeeper.startup.deadline.ms` by default: a fleet's deploy restarts every worker at once,
# and the ensemble can be slow for tens of seconds then.
STARTUP_DEADLINE_MS = 60000
# `zookeeper.max.in.flight.requests` by default (see `zk.window` and the README's sizing).
MAX_IN_FLIGHT_REQUESTS = 64


@dataclass(frozen=True)
class SaslLogin:
    mechanism: str
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class ZookeeperSettings:
    """`digest` ("user:password") or `sasl`: the session authenticates, and the znodes it
    creates can be changed only by that user (and read by everyone if `world_readable`)."""

    connect: ZookeeperConnect
    connection_timeout_s: float = 6.0
    session_timeout_s: float = 6.0
    digest: str | None = field(default=None, repr=False)
    sasl: SaslLogin | None = None
    world_readable: bool = True
    # How long a slow first connection is tried again (0: one try), see `zk.startup`.
    startup_deadline_s: float = STARTUP_DEADLINE_MS / 1000.0
    # How many requests one caller of the session has unanswered at a time (`zk.window`).
    max_in_flight_requests: int = MAX_IN_FLIGHT_REQUESTS

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
# `rebalance.turn.ms` by default (see `zk.turns`): 200 members gather a group's changes for
# 1.5 s, then spread their rebalances over 3 s (measured against 10, 20 and 30 ms: see the
# fleet page).
REBALANCE_TURN_MS = 15


@dataclass(frozen=True)
class SaslLogin:
    mechanism: str
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class Store:
    """A key or trust store: its file, password and type (PKCS12 or PEM; None: by the file's
    name, PEM for .pem/.crt/.cer, else PKCS12), and the key prefix errors name."""

    location: str
    password: str | None = field(default=None, repr=False)
    type: str | None = None
    key: str = "zookeeper.ssl.keystore"

    @property
    def kind(self) -> str:
        if self.type:
            return self.type
        name = self.location.lower()
        if name.endswith(".jks"):
            return "JKS"
        return "PEM" if name.endswith((".pem", ".crt", ".cer", ".key")) else "PKCS12"


@dataclass(frozen=True)
class ZookeeperTls:
    """The session speaks TLS: `truststore` holds the CAs the servers' certificates must chain
    to (None: the system's), `keystore` the client's certificate and key (None: none shown).
    With `x509_acl` the znodes the session creates are changeable only by that certificate."""

    keystore: Store | None = None
    truststore: Store | None = None
    protocols: tuple[str, ...] = ("TLSv1.2",)
    cipher_suites: tuple[str, ...] | None = None
    check_hostname: bool = True
    x509_acl: bool = False


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
    tls: ZookeeperTls | None = None

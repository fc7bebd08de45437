"""A ZooKeeper ensemble of N servers from Debian's `zookeeper` package (3.8), on loopback.

Production groups live on 3- or 5-server ensembles, where a leader can die, a new one gives every
session a fresh timeout, and a majority lost stops all service; the single 3.4.6 server of the
Kafka bundle can show none of that. Each server runs the package's `QuorumPeerMain` with `java`
directly, in a folder of its own under the ensemble's work folder (its config, `myid`, data and
log), so its command line names that folder, which is how stray servers are found and stopped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from zkconsumer.errors import ZkConsumerError
from zkconsumer.localcluster.java import find_java
from zkconsumer.localcluster.processes import (
    free_port,
    is_alive,
    log_tail,
    port_was_taken,
    spawn,
    stop_process,
)
from zkconsumer.zk import four_letters

# Where Debian's package puts the server and the libraries its manifest names.
PACKAGE_JAR = Path("/usr/share/java/zookeeper.jar")
LOGGING_JAR = Path("/usr/share/java/slf4j-simple.jar")
SERVER_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
STANDALONE_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
# Netty serves ZooKeeper's TLS port; the package's unversioned links to its jars.
NETTY_JARS = "netty-*.jar"
START_TIMEOUT_S = 60.0
START_ATTEMPTS = 3


class EnsembleError(ZkConsumerError):
    """The ensemble could not be started, or a server did not do what was asked in time."""


@dataclass
class EnsembleServer:
    server_id: int
    client_port: int
    peer_port: int
    election_port: int
    folder: Path
    pid: int = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def log_file(self) -> Path:
        return self.folder / "server.log"


def package_available() -> bool:
    return PACKAGE_JAR.is_file()


class ZookeeperEnsemble:
    """N servers, started by `start`; every server can be stopped, killed and started again on
    its own ports and data, so clients find it where they knew it. `tick_ms` is the servers'
    tick: sessions may last from 2 to 20 ticks."""

    def __init__(self, work_dir: Path, size: int = 3, tick_ms: int = 1000) -> None:
        if size < 1:
            raise ValueError("an ensemble needs at least one server")
        if not package_available():
            raise EnsembleError(f"Debian's zookeeper package is not installed ({PACKAGE_JAR} "
                                "is missing): apt-get install zookeeper")
        self.work_dir = Path(work_dir).resolve()
        self.tick_ms = tick_ms
        self.servers = {
            server_id: EnsembleServer(server_id, free_port(), free_port(), free_port(),
                                      self.work_dir / f"zookeeper-{server_id}")
            for server_id in range(1, size + 1)}
        self._children: dict[int, subprocess.Popen] = {}

    @classmethod
    def start(cls, work_dir: Path, size: int = 3, tick_ms: int = 1000) -> ZookeeperEnsemble:
        """Start every server and wait until the ensemble serves; on failure stop them all.
        When another process took one of the chosen ports first, all start again on others."""
        for attempt in range(1, START_ATTEMPTS + 1):
            ensemble = cls(work_dir, size, tick_ms)
            try:
                for server_id in ensemble.servers:
                    ensemble.start_server(server_id, wait=False)
                ensemble.wait_until_serving()
                return ensemble
            except EnsembleError:
                taken = any(port_was_taken(server.log_file) for server in ensemble.servers.values())
                ensemble.stop(remove_data=True)
                if not taken or attempt == START_ATTEMPTS:
                    raise
            except BaseException:
                ensemble.stop()
                raise
        raise EnsembleError("unreachable: the last attempt returns or raises")

    @property
    def connect_string(self) -> str:
        return ",".join(self.servers[s].address for s in sorted(self.servers))

    @property
    def quorum(self) -> int:
        return len(self.servers) // 2 + 1

    # -- observing -------------------------------------------------------------------------

    def mode(self, server_id: int) -> str | None:
        """'leader', 'follower' or 'standalone' for a server that serves clients, else None."""
        answer = four_letter_word(self.servers[server_id].client_port, b"srvr")
        for line in answer.splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return None

    def leader(self) -> int | None:
        """The id of the server that leads now, if one does."""
        return next((s for s in sorted(self.servers)
                     if self.running(s) and self.mode(s) in ("leader", "standalone")), None)

    def running(self, server_id: int) -> bool:
        server = self.servers[server_id]
        return bool(server.pid) and is_alive(server.pid, str(server.folder),
                                             self._children.get(server.pid))

    def serving(self) -> bool:
        """True while a leader and a majority of servers serve clients."""
        modes = [self.mode(s) for s in self.servers if self.running(s)]
        return (sum(mode is not None for mode in modes) >= self.quorum
                and any(mode in ("leader", "standalone") for mode in modes))

    def wait_until_serving(self, timeout: float = START_TIMEOUT_S) -> int:
        """Wait for a leader and a serving majority; returns the leader's id."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for server_id in self.servers:
                server = self.servers[server_id]
                if server.pid and not self.running(server_id) and server.pid in self._children:
                    raise EnsembleError(f"ZooKeeper server {server_id} exited: "
                                        f"{log_tail(server.log_file)}")
            if self.serving():
                leader = self.leader()
                if leader is not None:
                    return leader
            time.sleep(0.1)
        raise EnsembleError(f"the ZooKeeper ensemble did not serve within {timeout:.0f}s; see "
                            f"the logs under {self.work_dir}")

    # -- faults ----------------------------------------------------------------------------

    def start_server(self, server_id: int, wait: bool = True) -> EnsembleServer:
        """(Re)start one server on its own ports and data; with `wait`, until it serves."""
        server = self.servers[server_id]
        if self.running(server_id):
            raise EnsembleError(f"ZooKeeper server {server_id} is already running")
        server.folder.mkdir(parents=True, exist_ok=True)
        (server.folder / "data").mkdir(exist_ok=True)
        (server.folder / "data" / "myid").write_text(f"{server_id}\n")
        config = server.folder / "zoo.cfg"
        config.write_text(self._config(server))
        classpath = ":".join(str(jar) for jar in (PACKAGE_JAR, LOGGING_JAR) if jar.is_file())
        process = spawn([find_java(), "-Xmx128M", "-XX:+UseSerialGC",
                         "-Dzookeeper.admin.enableServer=false", "-cp", classpath, SERVER_CLASS,
                         str(config)], ensemble_environment(), server.log_file)
        server.pid = process.pid
        self._children[process.pid] = process
        if wait:
            self._wait_for(lambda: self.mode(server_id) is not None,
                           f"ZooKeeper server {server_id} to serve", server)
        return server

    def stop_server(self, server_id: int, graceful: bool = True) -> None:
        """Stop one server: SIGTERM, or SIGKILL at once with `graceful=False`."""
        server = self.servers[server_id]
        if server.pid:
            stop_process(server.pid, str(server.folder), graceful=graceful, timeout=15.0,
                         child=self._children.pop(server.pid, None))
            server.pid = 0

    def kill_server(self, server_id: int) -> None:
        self.stop_server(server_id, graceful=False)

    def lose_quorum(self) -> list[int]:
        """Stop servers, followers first, until fewer than a majority run; returns their ids,
        for `restore`. The servers left refuse every client until a majority is back."""
        leader = self.leader()
        running = [s for s in sorted(self.servers) if self.running(s)]
        order = [s for s in running if s != leader] + [s for s in running if s == leader]
        stopped = order[:len(running) - self.quorum + 1]
        for server_id in stopped:
            self.stop_server(server_id)
        return stopped

    def restore(self, server_ids: list[int]) -> int:
        """Start these servers again and wait until the ensemble serves; returns the leader.
        The servers that return last may take a moment longer to serve (see `mode`)."""
        for server_id in server_ids:
            self.start_server(server_id, wait=False)
        return self.wait_until_serving()

    def stop(self, remove_data: bool = False) -> None:
        for server_id in sorted(self.servers):
            self.stop_server(server_id, graceful=False)
        if remove_data:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    # -- internals -------------------------------------------------------------------------

    def _config(self, server: EnsembleServer) -> str:
        settings = [f"tickTime={self.tick_ms}", "initLimit=10", "syncLimit=5",
                    f"dataDir={server.folder / 'data'}", f"clientPort={server.client_port}",
                    "clientPortAddress=127.0.0.1", "maxClientCnxns=0",
                    "4lw.commands.whitelist=*", "admin.enableServer=false"]
        settings += [f"server.{peer.server_id}=127.0.0.1:{peer.peer_port}:{peer.election_port}"
                     for peer in self.servers.values()]
        return "\n".join(settings) + "\n"

    def _wait_for(self, ready, what: str, server: EnsembleServer) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if not self.running(server.server_id):
                raise EnsembleError(f"ZooKeeper server {server.server_id} exited: "
                                    f"{log_tail(server.log_file)}")
            if ready():
                return
            time.sleep(0.1)
        raise EnsembleError(f"timed out after {START_TIMEOUT_S:.0f}s waiting for {what}; "
                            f"see {server.log_file}")


def ensemble_environment() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("CLASSPATH", None)
    return env


def tls_server_settings(tls, secure_port: int) -> str:
    """zoo.cfg lines for a TLS client port served by Netty with `tls`
    (`zkconsumer.localcluster.ZookeeperServerTls`), the x509 identities of client certificates
    usable in ACLs; the plaintext clientPort stays. The four-letter words and the admin server
    are the standalone config's (`LocalCluster`), as for any server it runs."""
    return (f"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"
            f"secureClientPort={secure_port}\nsecureClientPortAddress=127.0.0.1\n"
            f"ssl.keyStore.location={tls.keystore}\nssl.keyStore.type=PEM\n"
            f"ssl.trustStore.location={tls.truststore}\nssl.trustStore.type=PEM\n"
            f"ssl.clientAuth={tls.client_auth}\n"
            "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n")


def debian_server_command(config: Path, jvm_options: str = "") -> list[str]:
    """Debian's ZooKeeper 3.8 as one standalone server with `config`, Netty on its class path
    (for a TLS port)."""
    if not package_available():
        raise EnsembleError(f"this ZooKeeper needs Debian's zookeeper package ({PACKAGE_JAR} "
                            "is missing): apt-get install zookeeper")
    netty = sorted(jar for jar in PACKAGE_JAR.parent.glob(NETTY_JARS)
                   if not re.search(r"-[0-9]+\.", jar.name))
    classpath = ":".join(str(jar) for jar in (PACKAGE_JAR, LOGGING_JAR, *netty) if jar.is_file())
    return [find_java(), "-Xmx128M", "-XX:+UseSerialGC", *jvm_options.split(), "-cp", classpath,
            STANDALONE_CLASS, str(config)]


def four_letter_word(port: int, word: bytes) -> str:
    """A server's answer to a four-letter command; '' when it does not answer."""
    try:
        return four_letters.ask(("127.0.0.1", port), word, 1.0)
    except OSError:
        return ""

"""A ZooKeeper server and one or more Kafka brokers from the 0.9.0.1 bundle, on loopback.

The cluster's state (ports, pids) lives in `cluster.json` in its work folder, so a cluster started
by one command (`zkconsumer cluster start`) can be inspected and stopped by another.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from zkconsumer.errors import ZkConsumerError
from zkconsumer.localcluster.bundle import ensure_bundle
from zkconsumer.localcluster.ensemble import (
    debian_server_command,
    ensemble_environment,
    four_letter_word,
    tls_server_settings,
)
from zkconsumer.localcluster.java import find_java
from zkconsumer.localcluster.processes import (
    bundle_environment,
    free_port,
    is_alive,
    log_tail,
    port_was_taken,
    spawn,
    stop_process,
)
from zkconsumer.localcluster.topics import OFFSETS_TOPIC, create_topic, wait_until_in_sync
from zkconsumer.zk.session import zookeeper_session
from zkconsumer.znodes.brokers import BrokerRegistration
from zkconsumer.znodes.paths import broker_path

STATE_FILE = "cluster.json"
STALE_REGISTRATION_TIMEOUT_S = 30.0  # the brokers' ZooKeeper session timeout is 6 s
START_TIMEOUT_S = 90.0
OFFSETS_TOPIC_PARTITIONS = 4



class ClusterError(ZkConsumerError):
    """The local cluster could not be started, found or stopped."""


class PortTaken(ClusterError):
    """A server stopped at start-up because another process bound its port first."""


START_ATTEMPTS = 3
T = TypeVar("T")


@dataclass
class ServerProcess:
    """A running server of the cluster, as recorded in the state file."""

    port: int
    pid: int
    log_file: str
    # ZooKeeper's TLS client port, when it has one.
    secure_port: int | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class ZookeeperServerTls:
    """What a local ZooKeeper serves TLS with: its key and certificate (one PEM file) and the
    CAs whose client certificates it accepts (PEM); `client_auth` is ZooKeeper's
    ssl.clientAuth (need, want or none). Such a ZooKeeper is Debian's 3.8 (the bundle's 3.4.6
    has no TLS), with a plaintext port beside the TLS one for the 0.9 brokers."""

    keystore: Path
    truststore: Path
    client_auth: str = "need"


@dataclass
class BrokerProcess(ServerProcess):
    broker_id: int
    data_dir: str
    # A second, SSL listener (for testing Kafka TLS), with its keystore and password.
    ssl_port: int | None = None
    ssl_keystore: str | None = None
    ssl_password: str | None = None
    # Broker settings over the cluster's own (e.g. a fast retention check for a test).
    overrides: dict[str, str | int] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass(frozen=True)
class TlsKeystore:
    """A broker keystore and the PEM certificate clients trust it by."""

    keystore: Path
    certificate: Path
    password: str


def make_self_signed_keystore(directory: Path, password: str = "zkconsumer") -> TlsKeystore:
    """A throw-away self-signed certificate for 127.0.0.1, made with the JDK's keytool."""
    keytool = str(Path(find_java()).resolve().with_name("keytool"))
    directory.mkdir(parents=True, exist_ok=True)
    keystore, certificate = directory / "broker.jks", directory / "broker.pem"
    common = ["-alias", "broker", "-keystore", str(keystore), "-storepass", password]
    for args in (["-genkeypair", *common, "-keypass", password, "-keyalg", "RSA",
                  "-keysize", "2048", "-validity", "7", "-dname", "CN=127.0.0.1",
                  "-ext", "SAN=ip:127.0.0.1"],
                 ["-exportcert", "-rfc", *common, "-file", str(certificate)]):
        result = subprocess.run([keytool, *args], capture_output=True, text=True, check=False,
                                timeout=60)
        if result.returncode != 0:
            raise ClusterError(f"keytool failed: {result.stderr.strip() or result.stdout.strip()}")
    return TlsKeystore(keystore, certificate, password)


class LocalCluster:
    """Owns the server processes started in one work folder."""

    def __init__(self, work_dir: Path, kafka_home: Path | None = None) -> None:
        self.work_dir = Path(work_dir).resolve()
        self.kafka_home = Path(kafka_home) if kafka_home else None
        self.zookeeper: ServerProcess | None = None
        self.brokers: dict[int, BrokerProcess] = {}
        self._children: dict[int, subprocess.Popen] = {}
        self.zookeeper_sasl_users: dict[str, str] = {}
        self.zookeeper_tls: ZookeeperServerTls | None = None
        self.debian_zookeeper = False

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    def start(cls, work_dir: Path, brokers: int = 1, kafka_home: Path | None = None,
              zookeeper_sasl_users: dict[str, str] | None = None,
              replication_factor: int = 1,
              zookeeper_tls: ZookeeperServerTls | None = None,
              debian_zookeeper: bool = False) -> LocalCluster:
        """Start ZooKeeper and `brokers` brokers; on any failure stop what was started.
        `zookeeper_sasl_users` (user -> password) makes ZooKeeper accept SASL DIGEST-MD5 logins
        (unauthenticated clients, such as the brokers, are still let in). With a
        `replication_factor` above 1 the brokers are set up as production clusters are (see
        `replication_settings`) and the offsets topic is created at once with that factor:
        left to the first coordinator request, it would get as many replicas as the asked
        broker then knew alive. `debian_zookeeper` runs Debian's ZooKeeper 3.8 instead of the
        bundle's 3.4.6 (a TLS ZooKeeper always is one)."""
        if not 1 <= replication_factor <= max(brokers, 1):
            raise ClusterError(f"replication factor {replication_factor} needs at least as "
                               f"many brokers; {brokers} asked for")
        cluster = cls(work_dir, kafka_home)
        cluster.zookeeper_sasl_users = dict(zookeeper_sasl_users or {})
        cluster.zookeeper_tls = zookeeper_tls
        cluster.debian_zookeeper = debian_zookeeper or zookeeper_tls is not None
        if (cluster.work_dir / STATE_FILE).exists():
            existing = cls.load(work_dir)
            if existing.is_running():
                raise ClusterError(
                    f"a local cluster is already running in {existing.work_dir} "
                    f"(ZooKeeper {existing.zookeeper_connect}); stop it first"
                )
        try:
            cluster.start_zookeeper()
            overrides = replication_settings(replication_factor) if replication_factor > 1 else {}
            for _ in range(brokers):
                cluster.add_broker(overrides=overrides)
            if replication_factor > 1:
                with zookeeper_session(cluster.zookeeper_connect) as zk:
                    create_topic(zk, OFFSETS_TOPIC, OFFSETS_TOPIC_PARTITIONS, replication_factor,
                                 config={"cleanup.policy": "compact",
                                         "compression.type": "uncompressed"})
        except BaseException:
            cluster.stop()
            raise
        return cluster

    @classmethod
    def load(cls, work_dir: Path) -> LocalCluster:
        """The cluster recorded in a work folder by an earlier `start`."""
        state_path = Path(work_dir) / STATE_FILE
        try:
            state = json.loads(state_path.read_text())
        except FileNotFoundError:
            raise ClusterError(f"no local cluster was started in {Path(work_dir).resolve()}") from None
        except (OSError, ValueError) as exc:
            raise ClusterError(f"cannot read {state_path}: {exc}") from None
        cluster = cls(Path(work_dir), Path(state["kafka_home"]))
        if state.get("zookeeper"):
            cluster.zookeeper = ServerProcess(**state["zookeeper"])
        for broker in state.get("brokers", []):
            cluster.brokers[broker["broker_id"]] = BrokerProcess(**broker)
        return cluster

    def stop(self, remove_data: bool = False) -> None:
        """Stop every broker, then ZooKeeper (brokers first, so they shut down cleanly). Data
        about to be removed needs no clean shutdown: with `remove_data` the servers are killed,
        which spares a replicated cluster its controlled shutdowns (seconds per broker)."""
        graceful = not remove_data
        for broker_id in sorted(self.brokers):
            self.stop_broker(broker_id, graceful=graceful, timeout=20.0)
        if self.zookeeper is not None:
            self._stop(self.zookeeper, graceful=graceful, timeout=10.0)
        if remove_data:
            shutil.rmtree(self.work_dir, ignore_errors=True)
        else:
            self._save()

    def is_running(self) -> bool:
        return self.zookeeper is not None and self._alive(self.zookeeper)

    def _alive(self, server: ServerProcess) -> bool:
        return bool(server.pid) and is_alive(server.pid, str(self.work_dir),
                                             self._children.get(server.pid))

    # -- endpoints -------------------------------------------------------------------------

    @property
    def zookeeper_connect(self) -> str:
        if self.zookeeper is None:
            raise ClusterError("ZooKeeper is not started")
        return f"127.0.0.1:{self.zookeeper.port}"

    @property
    def zookeeper_tls_connect(self) -> str:
        """The TLS client port of a ZooKeeper started with `zookeeper_tls`."""
        if self.zookeeper is None or not self.zookeeper.secure_port:
            raise ClusterError("ZooKeeper serves no TLS port")
        return f"127.0.0.1:{self.zookeeper.secure_port}"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self.brokers[b].address for b in sorted(self.brokers))

    def status(self) -> dict:
        """Each server with its port, pid and whether it is alive, for `cluster status`."""
        marker = str(self.work_dir)
        zookeeper = None
        if self.zookeeper is not None:
            zookeeper = {**asdict(self.zookeeper), "connect": self.zookeeper_connect,
                         "running": self._alive(self.zookeeper)}
        brokers = [{**asdict(broker), "address": broker.address, "running": self._alive(broker)}
                   for _id, broker in sorted(self.brokers.items())]
        return {"work_dir": marker, "kafka_home": str(self.kafka_home), "zookeeper": zookeeper,
                "brokers": brokers}

    # -- servers ---------------------------------------------------------------------------

    def start_zookeeper(self, port: int | None = None) -> ServerProcess:
        """Start ZooKeeper on a free port (another one if that is taken before ZooKeeper binds
        it), or on `port` (a restart, which clients must find at the address they know; the
        data dir keeps sessions and znodes across it)."""
        if port is not None:
            return self._start_zookeeper_on(port)
        return _on_another_port_if_taken(lambda: self._start_zookeeper_on(free_port()))

    def _start_zookeeper_on(self, port: int) -> ServerProcess:
        data_dir = self.work_dir / "zookeeper"
        data_dir.mkdir(parents=True, exist_ok=True)
        config = self.work_dir / "zookeeper.properties"
        settings = (f"dataDir={data_dir}\nclientPort={port}\nclientPortAddress=127.0.0.1\n"
                    "maxClientCnxns=0\ntickTime=2000\n"
                    # mntr and srst for the benchmarks (servers before 3.4.10 allow them all)
                    "4lw.commands.whitelist=*\n"
                    # no HTTP admin server on every interface (3.5 on; 3.4.6 ignores the key)
                    "admin.enableServer=false\n")
        jvm_options = ""
        if self.zookeeper_sasl_users:
            settings += "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"
            jaas = self.work_dir / "zookeeper-jaas.conf"
            users = " ".join(f'user_{user}="{password}"'
                             for user, password in self.zookeeper_sasl_users.items())
            jaas.write_text("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule "
                            f"required {users};\n}};\n")
            jvm_options = f"-Djava.security.auth.login.config={jaas}"
        secure_port = None
        if self.zookeeper_tls is not None:
            secure_port = free_port()
            settings += tls_server_settings(self.zookeeper_tls, secure_port)
        config.write_text(settings)
        log_file = self.work_dir / "logs" / "zookeeper.out"
        log_start = _size(log_file)
        if self.debian_zookeeper:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            process = spawn(debian_server_command(config, jvm_options), ensemble_environment(),
                            log_file)
            self._children[process.pid] = process
        else:
            process = self._spawn("zookeeper-server-start.sh", config, log_file,
                                  heap="-Xmx256M", jvm_options=jvm_options)
        self.zookeeper = ServerProcess(port=port, pid=process.pid, log_file=str(log_file),
                                       secure_port=secure_port)
        self._save()
        self._wait(lambda: _zookeeper_answers(port), self.zookeeper, "ZooKeeper", log_start)
        return self.zookeeper

    def add_broker(self, broker_id: int | None = None,
                   ssl_keystore: TlsKeystore | None = None,
                   overrides: Mapping[str, str | int] | None = None) -> BrokerProcess:
        """Start one more broker (id: the next free one), registered in this ZooKeeper; with
        `ssl_keystore` it also listens for SSL clients on a second port; `overrides` are
        broker settings that win over the cluster's."""
        if broker_id is None:
            broker_id = max(self.brokers, default=-1) + 1
        if broker_id in self.brokers:
            raise ClusterError(f"broker {broker_id} already exists")
        broker = BrokerProcess(port=free_port(), pid=0, log_file="", broker_id=broker_id,
                               data_dir=str(self.work_dir / f"kafka-{broker_id}"),
                               overrides=dict(overrides or {}))
        if ssl_keystore is not None:
            broker.ssl_port = free_port()
        if ssl_keystore is not None:
            broker.ssl_keystore = str(ssl_keystore.keystore)
            broker.ssl_password = ssl_keystore.password
        self.brokers[broker_id] = broker

        def move_to_free_ports() -> None:
            broker.port = free_port()
            if broker.ssl_port:
                broker.ssl_port = free_port()

        try:
            return _on_another_port_if_taken(lambda: self.start_broker(broker_id),
                                             move_to_free_ports)
        except ClusterError:
            del self.brokers[broker_id]
            raise

    def start_broker(self, broker_id: int) -> BrokerProcess:
        """(Re)start a known broker on its own port and data folder; waits for its registration."""
        broker = self.brokers[broker_id]
        if self._alive(broker):
            raise ClusterError(f"broker {broker_id} is already running")
        config = self.work_dir / f"server-{broker_id}.properties"
        config.write_text(self._broker_properties(broker))
        log_file = self.work_dir / "logs" / f"kafka-{broker_id}.out"
        zk = KazooClient(hosts=self.zookeeper_connect, timeout=5.0)
        zk.start(timeout=10.0)
        try:
            # A broker killed without a clean shutdown leaves its ephemeral registration until
            # its session expires; a successor started before then refuses to run ("already
            # registered"), and the stale znode would look like the new broker being ready.
            _wait_until_gone(zk, broker_path(broker_id), STALE_REGISTRATION_TIMEOUT_S)
            log_start = _size(log_file)
            process = self._spawn("kafka-server-start.sh", config, log_file, heap="-Xmx512M",
                                  log_dir=self.work_dir / "logs" / f"kafka-{broker_id}")
            broker.pid = process.pid
            broker.log_file = str(log_file)
            self._save()
            self._wait(lambda: _broker_registered(zk, broker), broker, f"Kafka broker {broker_id}",
                       log_start)
        finally:
            zk.stop()
            zk.close()
        return broker

    def broker_running(self, broker_id: int) -> bool:
        """Whether the broker's process is alive: a 0.9 broker may halt by itself (see
        `scripts/fault_run.py`'s `restart_halted_brokers`)."""
        return self._alive(self.brokers[broker_id])

    def restart_zookeeper(self, graceful: bool = True) -> ServerProcess:
        if self.zookeeper is None:
            raise ClusterError("this cluster runs no ZooKeeper server of its own to restart")
        port = self.zookeeper.port
        self._stop(self.zookeeper, graceful=graceful, timeout=30.0)
        return self.start_zookeeper(port)

    def stop_broker(self, broker_id: int, graceful: bool = True, timeout: float = 30.0) -> None:
        """Stop a broker: SIGTERM for a controlled shutdown, or SIGKILL at once (graceful=False)."""
        self._stop(self.brokers[broker_id], graceful=graceful, timeout=timeout)

    def rolling_restart(self, graceful: bool = True, in_sync_timeout: float = 60.0) -> None:
        """Restart every broker in turn, as an upgrade does: the next one is stopped only once
        every replica is back in sync, so no acknowledged write ever rests on one broker."""
        for broker_id in sorted(self.brokers):
            self.stop_broker(broker_id, graceful=graceful)
            self.start_broker(broker_id)
            with zookeeper_session(self.zookeeper_connect) as zk:
                wait_until_in_sync(zk, in_sync_timeout)

    # -- internals -------------------------------------------------------------------------

    def _broker_properties(self, broker: BrokerProcess) -> str:
        listener = f"PLAINTEXT://127.0.0.1:{broker.port}"
        if broker.ssl_port:
            listener += f",SSL://127.0.0.1:{broker.ssl_port}"
        settings = {
            "broker.id": broker.broker_id,
            "listeners": listener,
            "advertised.listeners": listener,
            "log.dirs": broker.data_dir,
            "zookeeper.connect": self.zookeeper_connect,
            "zookeeper.connection.timeout.ms": 6000,
            "num.partitions": 1,
            "auto.create.topics.enable": "false",
            "delete.topic.enable": "true",
            "offsets.topic.replication.factor": 1,
            "offsets.topic.num.partitions": OFFSETS_TOPIC_PARTITIONS,
            "num.network.threads": 2,
            "num.io.threads": 2,
            "num.recovery.threads.per.data.dir": 1,
            "log.cleaner.dedupe.buffer.size": 16 * 1024 * 1024,
            "controlled.shutdown.enable": "true",
        }
        if broker.ssl_port:
            settings.update({"ssl.keystore.location": broker.ssl_keystore,
                             "ssl.keystore.password": broker.ssl_password,
                             "ssl.key.password": broker.ssl_password,
                             "ssl.enabled.protocols": "TLSv1.2"})
        settings.update(broker.overrides)
        return "".join(f"{key}={value}\n" for key, value in settings.items())

    def _spawn(self, script: str, config: Path, log_file: Path, heap: str,
               log_dir: Path | None = None, jvm_options: str = "") -> subprocess.Popen:
        if self.kafka_home is None:
            self.kafka_home = ensure_bundle()
        env = bundle_environment(heap=heap, log_dir=log_dir or log_file.parent,
                                 log4j_config=self._log4j_config())
        if jvm_options:
            env["KAFKA_OPTS"] = f"{env.get('KAFKA_OPTS', '')} {jvm_options}".strip()
        process = spawn([str(self.kafka_home / "bin" / script), str(config)], env, log_file)
        self._children[process.pid] = process
        return process

    def _log4j_config(self) -> Path:
        """One log4j setup for all servers: INFO to the console, which goes to the server's log."""
        path = self.work_dir / "log4j.properties"
        if not path.exists():
            path.write_text(
                "log4j.rootLogger=INFO, stdout\n"
                "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
                "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
                "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
            )
        return path

    def _wait(self, ready, server: ServerProcess, name: str, log_start: int) -> None:
        """Wait until `ready()`; `log_start` is where this start's lines begin in the log
        (servers append to it), so an old start's failure is never taken for this one's. A
        broker that could not bind its port does not always exit (0.9 hangs in its shutdown),
        so a taken port is read from the log and the server stopped here."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if port_was_taken(Path(server.log_file), log_start):
                self._stop(server, graceful=False, timeout=10.0)
                raise PortTaken(f"{name} could not bind its port: "
                                f"{log_tail(Path(server.log_file))}")
            if not self._alive(server):
                raise ClusterError(
                    f"{name} exited during start-up: {log_tail(Path(server.log_file))}"
                )
            if ready():
                return
            time.sleep(0.2)
        raise ClusterError(f"{name} did not become ready within {START_TIMEOUT_S:.0f}s; "
                           f"see {server.log_file}")

    def _stop(self, server: ServerProcess, graceful: bool, timeout: float) -> None:
        if server.pid:
            stop_process(server.pid, str(self.work_dir), graceful=graceful, timeout=timeout,
                         child=self._children.pop(server.pid, None))
        self._save()

    def _save(self) -> None:
        if not self.work_dir.exists():
            return
        state = {
            "kafka_home": str(self.kafka_home),
            "zookeeper": asdict(self.zookeeper) if self.zookeeper else None,
            "brokers": [asdict(self.brokers[b]) for b in sorted(self.brokers)],
        }
        (self.work_dir / STATE_FILE).write_text(json.dumps(state, indent=2))


def replication_settings(factor: int) -> dict[str, str | int]:
    """Broker settings for topics kept on `factor` brokers that lose no acknowledged write
    while one broker is down: a producer with acks=all is answered once `factor` - 1 replicas
    have a message, and only an in-sync replica may become leader (0.9 would otherwise elect
    any replica, dropping what it had not copied)."""
    return {"default.replication.factor": factor,
            "offsets.topic.replication.factor": factor,
            "min.insync.replicas": factor - 1,
            "unclean.leader.election.enable": "false"}


def _zookeeper_answers(port: int) -> bool:
    return four_letter_word(port, b"ruok") == "imok"


def _on_another_port_if_taken(start: Callable[[], T],
                              move: Callable[[], None] = lambda: None) -> T:
    """`start()`, again after `move()` when the port was taken before the server bound it."""
    for _ in range(START_ATTEMPTS - 1):
        try:
            return start()
        except PortTaken:
            move()
    return start()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _wait_until_gone(zk: KazooClient, path: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        gone = threading.Event()
        if zk.exists(path, watch=lambda _event, gone=gone: gone.set()) is None:
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ClusterError(f"{path} is still registered by another process after "
                               f"{timeout_s:.0f}s; is another broker using this id?")
        gone.wait(min(remaining, 1.0))


def _broker_registered(zk: KazooClient, broker: BrokerProcess) -> bool:
    """Ready once the broker's registration is in ZooKeeper and advertises its own port."""
    path = broker_path(broker.broker_id)
    try:
        data, _ = zk.get(path)
    except NoNodeError:
        return False
    return BrokerRegistration.decode(path, data).address_for() == ("127.0.0.1", broker.port)

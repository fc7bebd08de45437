"""Every key the consumer knows: its parser, default and how it is shown, in one table.

The keys and defaults are the reference consumer's (`kafka.consumer.ConsumerConfig`), so
existing properties files keep their meaning; zkconsumer's own keys follow them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from zkconsumer.config.addresses import bootstrap_servers, zookeeper_connect
from zkconsumer.config.values import (
    api_version,
    boolean,
    cipher_suites,
    consumer_id,
    digest_credentials,
    host_check,
    integer,
    legal_name,
    non_empty,
    one_of,
    port,
    store_type,
    tls_version,
    tls_versions,
    topic_filter,
    topic_list,
)
from zkconsumer.config.zookeeper import (
    MAX_IN_FLIGHT_REQUESTS,
    REBALANCE_TURN_MS,
    STARTUP_DEADLINE_MS,
)


def render(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class Key:
    name: str
    parse: Callable[[str], Any]
    default: Any = None
    derive: Callable[[Mapping[str, Any]], Any] | None = None  # a default from earlier fields
    required: bool = False
    render: Callable[[Any], str] = render
    secret: bool = False  # never echoed in errors
    # Why a reference key is accepted (so shared properties files load) yet changes nothing.
    no_effect: str | None = None
    empty_allowed: bool = False  # an empty value means something (Kafka's "turn it off")

    @property
    def field(self) -> str:
        return self.name.replace(".", "_")


# Order matters only where a default derives from an earlier key.
KEYS = (
    Key("group.id", legal_name, required=True),
    # Who answers "who are the members and which partitions are mine": ZooKeeper's registry
    # and owner znodes, or Kafka's group coordinator (then no ZooKeeper is needed at all).
    Key("group.coordination", one_of("zookeeper", "kafka"), "zookeeper"),
    # Required with group.coordination=zookeeper (checked with the other combinations).
    Key("zookeeper.connect", zookeeper_connect),
    Key("consumer.id", consumer_id),
    Key("socket.timeout.ms", integer(1), 30000),
    Key("socket.receive.buffer.bytes", integer(-1), 65536),
    Key("fetch.message.max.bytes", integer(1), 1048576),
    Key("num.consumer.fetchers", integer(1), 1,
         no_effect="one fetcher thread serves every broker without blocking on any"),
    Key("auto.commit.enable", boolean, True),
    Key("auto.commit.interval.ms", integer(1), 60000),
    Key("queued.max.message.chunks", integer(1), 2),
    Key("rebalance.max.retries", integer(1), 4),
    Key("fetch.min.bytes", integer(0), 1),
    Key("fetch.wait.max.ms", integer(0), 100),
    Key("zookeeper.sync.time.ms", integer(0), 2000),
    Key("rebalance.backoff.ms", integer(0), derive=lambda f: f["zookeeper_sync_time_ms"]),
    # zkconsumer's own: after a change of the group, a member waits half the group's size, then
    # its rank, times this before it reads the group and moves partitions, so a big group's
    # members gather close changes and act a few at a time.
    Key("rebalance.turn.ms", integer(0), REBALANCE_TURN_MS),
    Key("refresh.leader.backoff.ms", integer(0), 200),
    Key("offsets.channel.backoff.ms", integer(0), 1000),
    Key("offsets.channel.socket.timeout.ms", integer(1), 10000),
    Key("offsets.commit.max.retries", integer(0), 5),
    Key("offsets.storage", one_of("zookeeper", "kafka"), "zookeeper"),
    Key("dual.commit.enabled", boolean, derive=lambda f: f["offsets_storage"] == "kafka"),
    Key("auto.offset.reset",
         one_of("smallest", "largest", aliases={"earliest": "smallest", "latest": "largest"}),
         "largest"),
    Key("consumer.timeout.ms", integer(-1), -1),
    Key("client.id", legal_name, derive=lambda f: f["group_id"]),
    Key("exclude.internal.topics", boolean, True),
    Key("partition.assignment.strategy", one_of("range", "roundrobin"), "range"),
    Key("zookeeper.session.timeout.ms", integer(1), 6000),
    Key("zookeeper.connection.timeout.ms", integer(1),
         derive=lambda f: f["zookeeper_session_timeout_ms"]),
    # zkconsumer's own: how long after its first try a worker may still try again a first
    # connection that timed out (each try taking up to zookeeper.connection.timeout.ms); 0
    # makes one try, as the reference does.
    Key("zookeeper.startup.deadline.ms", integer(0), STARTUP_DEADLINE_MS),
    # zkconsumer's own: how many ZooKeeper requests one pipelined read or release of a member
    # has unanswered at a time, so that a big rebalance does not flood the ensemble.
    Key("zookeeper.max.in.flight.requests", integer(1), MAX_IN_FLIGHT_REQUESTS),
    Key("topics", topic_list, render=",".join),
    Key("whitelist", topic_filter),
    Key("blacklist", topic_filter),
    Key("fetch.backend", one_of("auto", "wire", "kafka-python"), "auto"),
    Key("kafka.api.version", api_version, render=lambda v: ".".join(map(str, v))),
    Key("bootstrap.servers", bootstrap_servers),
    Key("isolation.level", one_of("read_uncommitted", "read_committed"), "read_uncommitted"),
    Key("topic.metadata.refresh.interval.ms", integer(100), 10000),
    Key("zookeeper.auth.digest", digest_credentials, secret=True),
    Key("zookeeper.sasl.mechanism", one_of("digest-md5", "gssapi"), "digest-md5"),
    Key("zookeeper.sasl.username", non_empty),
    Key("zookeeper.sasl.password", non_empty, secret=True),
    Key("zookeeper.acl.world.read", boolean, True),
    # ZooKeeper over TLS, with Kafka's keys and meanings (KIP-515), so the file an operator
    # gives `kafka-configs --zk-tls-config-file` serves here too (see zkconsumer.zk.tls).
    Key("zookeeper.ssl.client.enable", boolean, False),
    Key("zookeeper.clientCnxnSocket", non_empty,
         no_effect="Java's socket class; zkconsumer's client speaks TLS by itself"),
    Key("zookeeper.ssl.keystore.location", non_empty),
    Key("zookeeper.ssl.keystore.password", non_empty, secret=True),
    Key("zookeeper.ssl.keystore.type", store_type),
    Key("zookeeper.ssl.truststore.location", non_empty),
    Key("zookeeper.ssl.truststore.password", non_empty, secret=True),
    Key("zookeeper.ssl.truststore.type", store_type),
    Key("zookeeper.ssl.protocol", tls_version, "TLSv1.2"),
    Key("zookeeper.ssl.enabled.protocols", tls_versions, render=",".join,
         derive=lambda f: (f["zookeeper_ssl_protocol"],)),
    Key("zookeeper.ssl.cipher.suites", cipher_suites, render=",".join),
    Key("zookeeper.ssl.endpoint.identification.algorithm", host_check, True,
         render=lambda v: "HTTPS" if v else "", empty_allowed=True),
    # Kafka's broker key: the znodes zkconsumer creates carry the client certificate's
    # identity (x509) as their ACL.
    Key("zookeeper.set.acl", boolean, False),
    # The Java consumer's group keys, for group.coordination=kafka (max.poll.interval.ms is
    # the rebalance timeout a JoinGroup gives).
    Key("session.timeout.ms", integer(1), 10000),
    Key("heartbeat.interval.ms", integer(1), 3000),
    Key("max.poll.interval.ms", integer(1), 300000),
    Key("metrics.port", port, 0),
    Key("metrics.host", non_empty, "127.0.0.1"),
    # What a member does when `group cutover` fences its group off its coordination: join
    # the group through the new one in the same process, or leave and end (see
    # `zkconsumer.znodes.fence`).
    Key("cutover.on.fence", one_of("switch", "exit"), "switch"),
)
KEYS_BY_NAME = {key.name: key for key in KEYS}
KEY_NAMES = frozenset(KEYS_BY_NAME)
# Kafka's ZooKeeper TLS keys: what `kafka-configs --zk-tls-config-file` reads.
ZOOKEEPER_TLS_KEYS = tuple(key.name for key in KEYS if key.name.startswith("zookeeper.ssl.")) \
    + ("zookeeper.clientCnxnSocket", "zookeeper.set.acl")

"""What each key of the key table (`keys.KEYS`) means, in one sentence or two.

The manual's configuration reference is written from `KEYS` (name, default) and this table
(meaning) at build time; the docs test fails when a key has no meaning here or a meaning names
no key, so a key added to the table must be explained here too.
"""

from __future__ import annotations

MEANINGS: dict[str, str] = {
    "group.id": "The consumer group this member joins (its znodes live under "
                "`/consumers/<group.id>/`).",
    "group.coordination": "Who coordinates the group: `zookeeper` (the registry, owner znodes "
                          "and the legacy rebalance) or `kafka` (Kafka's group coordinator, no "
                          "ZooKeeper needed).",
    "zookeeper.connect": "`host:port[,host:port...][/chroot]` of the ZooKeeper ensemble; "
                         "required with ZooKeeper coordination, and with Kafka's it lets the "
                         "member honour `group cutover`'s fence.",
    "consumer.id": "The member's id in the group; by default `<group>_<host>-<time>-<random>`, "
                   "as the Scala consumer makes it.",
    "socket.timeout.ms": "How long a request to a broker may take before the connection is "
                         "given up.",
    "socket.receive.buffer.bytes": "The socket receive buffer for broker connections (-1: the "
                                   "system's).",
    "fetch.message.max.bytes": "The most bytes fetched per partition in one fetch request.",
    "num.consumer.fetchers": "The reference's number of fetcher threads.",
    "auto.commit.enable": "Commit consumed offsets every `auto.commit.interval.ms` (off: only "
                          "`commit_offsets()`, rebalances and shutdown commit).",
    "auto.commit.interval.ms": "How often consumed offsets are committed.",
    "queued.max.message.chunks": "How many fetched chunks may wait in a stream's queue before "
                                 "fetching for it pauses.",
    "rebalance.max.retries": "Rebalance attempts before a member gives up (and only once every "
                             "contested owner znode has outlived twice the session timeout).",
    "fetch.min.bytes": "The least data a broker waits for before answering a fetch.",
    "fetch.wait.max.ms": "How long a broker may wait for `fetch.min.bytes`.",
    "zookeeper.sync.time.ms": "The reference's ZooKeeper follower lag allowance; the default of "
                              "`rebalance.backoff.ms`.",
    "rebalance.backoff.ms": "How long a claim waits on a partition's owner znode per attempt; "
                            "defaults to `zookeeper.sync.time.ms`.",
    "rebalance.turn.ms": "zkconsumer's own: after the group changed, a member waits half the "
                         "group's size, then its rank among the members, times this before it "
                         "reads the group and moves partitions (0: at once, as the reference).",
    "refresh.leader.backoff.ms": "The pause before looking a partition's leader up again after "
                                 "it moved or failed.",
    "offsets.channel.backoff.ms": "The first backoff of a retried Kafka offset commit or fetch.",
    "offsets.channel.socket.timeout.ms": "How long an offset request to Kafka may take.",
    "offsets.commit.max.retries": "Retries of a Kafka offset commit on a transient error "
                                  "(coordinator moved, offsets loading).",
    "offsets.storage": "Where offsets are committed: `zookeeper` or `kafka`.",
    "dual.commit.enabled": "With Kafka storage, also write ZooKeeper and read the larger of the "
                           "two; defaults to on exactly when `offsets.storage=kafka`.",
    "auto.offset.reset": "Where a partition with no committed offset starts: `largest` (the "
                         "log end) or `smallest` (`latest`/`earliest` accepted too).",
    "consumer.timeout.ms": "A stream's iteration ends with `ConsumerTimeout` after this long "
                           "without a message (-1: never).",
    "client.id": "The client id sent to brokers; defaults to `group.id`.",
    "exclude.internal.topics": "Leave Kafka's internal topics (`__consumer_offsets`) out of a "
                               "wildcard subscription.",
    "partition.assignment.strategy": "How partitions are dealt: `range` or `roundrobin`, as the "
                                     "reference (or, on Kafka's coordinator, Java's assignors) "
                                     "deal them.",
    "zookeeper.session.timeout.ms": "The ZooKeeper session timeout asked for.",
    "zookeeper.connection.timeout.ms": "How long one try of a first ZooKeeper connection may "
                                       "take; defaults to `zookeeper.session.timeout.ms`.",
    "zookeeper.startup.deadline.ms": "zkconsumer's own: how long after its first try a worker "
                                     "may still retry a first connection that timed out (0: one "
                                     "try).",
    "zookeeper.max.in.flight.requests": "zkconsumer's own: the most pipelined ZooKeeper "
                                        "requests a member has unanswered at a time (fewer "
                                        "while the server answers slowly).",
    "topics": "The topics to consume, comma-separated (one of `topics`, `whitelist`, "
              "`blacklist`).",
    "whitelist": "A regular expression: consume every topic it matches.",
    "blacklist": "A regular expression: consume every topic it does not match.",
    "fetch.backend": "The fetcher: `wire` (zkconsumer's own client), `kafka-python`, or `auto` "
                     "(the wire fetcher unless a setting needs kafka-python).",
    "kafka.api.version": "The brokers' protocol version, e.g. `0.9`, where it cannot be "
                         "detected; by default from the broker registrations or negotiated.",
    "bootstrap.servers": "`host:port,...` of brokers not registered in this ZooKeeper (KRaft, "
                         "Kafka 4.x); topics then come from Kafka metadata.",
    "isolation.level": "`read_committed` leaves out aborted transactions; "
                       "`read_uncommitted` reads every record.",
    "topic.metadata.refresh.interval.ms": "How often topics and partition counts are read "
                                          "again from Kafka metadata (and a wildcard matched "
                                          "again).",
    "zookeeper.auth.digest": "`user:password`: authenticate to ZooKeeper with digest and put "
                             "that user's ACL on the znodes zkconsumer creates.",
    "zookeeper.sasl.mechanism": "The SASL mechanism for ZooKeeper: `digest-md5` or `gssapi`.",
    "zookeeper.sasl.username": "The SASL user name for ZooKeeper.",
    "zookeeper.sasl.password": "The SASL password for ZooKeeper.",
    "zookeeper.acl.world.read": "With credentials, let everyone read the znodes zkconsumer "
                                "creates (`false`: only the owner).",
    "zookeeper.ssl.client.enable": "Speak TLS to ZooKeeper (Kafka's key, KIP-515).",
    "zookeeper.clientCnxnSocket": "Java's ZooKeeper socket class, as in Kafka's TLS config "
                                  "files.",
    "zookeeper.ssl.keystore.location": "The client certificate's key store for ZooKeeper TLS.",
    "zookeeper.ssl.keystore.password": "The key store's password.",
    "zookeeper.ssl.keystore.type": "The key store's type (`PKCS12`, `JKS`, `PEM`).",
    "zookeeper.ssl.truststore.location": "The trust store of ZooKeeper's server certificate.",
    "zookeeper.ssl.truststore.password": "The trust store's password.",
    "zookeeper.ssl.truststore.type": "The trust store's type (`PKCS12`, `JKS`, `PEM`).",
    "zookeeper.ssl.protocol": "The TLS version asked for.",
    "zookeeper.ssl.enabled.protocols": "The TLS versions accepted; defaults to "
                                       "`zookeeper.ssl.protocol`.",
    "zookeeper.ssl.cipher.suites": "The cipher suites accepted (default: the system's).",
    "zookeeper.ssl.endpoint.identification.algorithm": "`HTTPS` checks the server "
                                                       "certificate's host name; empty turns "
                                                       "that off.",
    "zookeeper.set.acl": "Put the client certificate's identity (x509) as the ACL of the "
                         "znodes zkconsumer creates.",
    "session.timeout.ms": "On Kafka's coordinator: the member's session timeout.",
    "heartbeat.interval.ms": "On Kafka's coordinator: how often the member heartbeats (below "
                             "`session.timeout.ms`).",
    "max.poll.interval.ms": "On Kafka's coordinator: sent as the JoinGroup's rebalance "
                            "timeout.",
    "metrics.port": "Serve Prometheus metrics at `/metrics` and `/healthz` on this port "
                    "(0: none).",
    "metrics.host": "The address the metrics server listens on.",
    "cutover.on.fence": "What a member does when `group cutover` fences its group: `switch` "
                        "(join the new coordination in the same process) or `exit`.",
}

"""The consumer's settings: the reference consumer's keys and defaults, plus a few of our own.

Existing `consumer.properties` files must keep working, so the keys, defaults and checks are
those of the reference Scala consumer (`kafka.consumer.ConsumerConfig`). A few checks are more
lenient: booleans and choice values are case-insensitive, and `auto.offset.reset` also accepts
the modern spellings `earliest`/`latest`. A few are stricter where the reference would only
fail later: numbers must be in a usable range and no known key may be empty.

Settings are layered, lowest precedence first: defaults, a properties file, environment
variables (`ZKCONSUMER_` + the key upper-cased with dots as underscores, e.g.
`ZKCONSUMER_GROUP_ID`; only the keys listed here, never the `kafka.` pass-through ones), then
explicit overrides (`--property key=value`), then values of named command-line options such as
`--zookeeper`. Every value remembers where it came from, so an error names the key, the value
and e.g. `consumer.properties line 3` or `--zookeeper`.

zkconsumer's own keys:

- `topics`: comma-separated static topic list.
- `whitelist` / `blacklist`: a topic filter regex, normalised as the reference does (trimmed,
  `,` becomes `|`, spaces and surrounding quotes removed). At most one of `topics`,
  `whitelist` and `blacklist` may be set; all three are optional because the Python API can
  name the topics in code instead.
- `kafka.api.version`: the broker protocol version for the Kafka client, e.g. `0.9` or
  `0.10.2`; `auto` (the default) lets the client probe the broker.
- `bootstrap.servers`: `host:port,...` of brokers to reach Kafka through instead of the
  ZooKeeper broker registry: for brokers that do not register there (KRaft clusters, or a
  cluster whose own ZooKeeper is not the group's). Topics, partitions and leaders then come
  from Kafka metadata, checked every `topic.metadata.refresh.interval.ms` (default 10000).
- `isolation.level`: `read_uncommitted` (the default, what the legacy consumer did) or
  `read_committed`, which skips messages of aborted transactions on brokers that have them.
- `kafka.<anything else>`: passed to the Kafka client with the prefix removed, e.g.
  `kafka.security.protocol=SSL`.
- `zookeeper.auth.digest`: `user:password` for ZooKeeper digest authentication. When set,
  every znode zkconsumer creates (registrations, owners, offsets) is writable only by that
  user, so a client without the credentials cannot change the group's owners or offsets.
- `zookeeper.sasl.username` / `zookeeper.sasl.password` (and `zookeeper.sasl.mechanism`,
  DIGEST-MD5 by default): SASL authentication instead of a digest; znodes are then writable
  only by that SASL user. At most one of digest and SASL may be set.
- `zookeeper.acl.world.read`: whether everyone may still *read* those znodes (default true,
  so monitoring tools such as ConsumerOffsetChecker keep working).
- `zookeeper.ssl.*` (Kafka's keys: `client.enable`, `keystore.location`/`.password`/`.type`,
  `truststore.*`, `protocol`, `enabled.protocols`, `cipher.suites`,
  `endpoint.identification.algorithm`) and `zookeeper.set.acl`: ZooKeeper over TLS, with a client
  certificate, and an x509 ACL on the znodes zkconsumer creates (see `zkconsumer.zk.tls`).
- `metrics.port` / `metrics.host`: where a member serves its Prometheus metrics (`/metrics`)
  and `/healthz`; port 0 (the default) serves nothing, host defaults to 127.0.0.1.

Secrets (`zookeeper.auth.digest`, `zookeeper.sasl.password`, the `zookeeper.ssl.*` store
passwords, `kafka.*password*`) never appear in
errors or in the config's repr.

Any other key is kept in `ConsumerConfig.unknown_keys` rather than rejected, as the reference
does; like the reference, `load_config` warns about each (naming the closest known key), since a
misspelt key is otherwise silently ignored.
"""

from zkconsumer.config.addresses import ZookeeperConnect
from zkconsumer.config.loading import (
    ConsumerConfig,
    MissingConfigError,
    Setting,
    kafka_only_settings,
    load_config,
    parse_setting,
)
from zkconsumer.config.zookeeper import SaslLogin, Store, ZookeeperSettings, ZookeeperTls

__all__ = [
    "ConsumerConfig",
    "MissingConfigError",
    "SaslLogin",
    "Setting",
    "Store",
    "ZookeeperConnect",
    "ZookeeperSettings",
    "ZookeeperTls",
    "kafka_only_settings",
    "load_config",
    "parse_setting",
]

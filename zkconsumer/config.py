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
- `metrics.port` / `metrics.host`: where a member serves its Prometheus metrics (`/metrics`)
  and `/healthz`; port 0 (the default) serves nothing, host defaults to 127.0.0.1.

Secrets (`zookeeper.auth.digest`, `zookeeper.sasl.password`, `kafka.*password*`) never appear in errors or in the
config's repr.

Any other key is kept in `ConsumerConfig.unknown_keys` rather than rejected, as the reference
does; like the reference, `load_config` warns about each (naming the closest known key), since a
misspelt key is otherwise silently ignored.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, NoReturn

from zkconsumer.assignment.topic_filter import Whitelist, normalize_filter_regex
from zkconsumer.errors import ConfigError, TopicFilterError
from zkconsumer.logs import get_logger, register_secret
from zkconsumer.model import format_address
from zkconsumer.properties import read_properties_file

ENV_PREFIX = "ZKCONSUMER_"
KAFKA_PREFIX = "kafka."
DEFAULT_ZOOKEEPER_PORT = 2181

# The reference reads every number as a Java int.
_INT_MAX = 2**31 - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")
_LEGAL_NAME = re.compile(r"[A-Za-z0-9._-]+")
_MAX_TOPIC_LENGTH = 249
_HOST = re.compile(r"[^\s\[\]/,]+")
_SUBSCRIPTION_KEYS = ("topics", "whitelist", "blacklist")
_SECRET_NAME = re.compile(r"password|secret|token|credential", re.IGNORECASE)
log = get_logger(__name__)


class _Invalid(Exception):
    """Why a value is rejected; the caller knows the key, the value and the source."""


class MissingConfigError(ConfigError):
    """A required key set nowhere: says so, rather than blaming a value of None."""

    def __init__(self, key: str) -> None:
        super().__init__(key, None, "it is required")

    def __str__(self) -> str:
        return f"missing config {self.key}: {self.reason}"


@dataclass(frozen=True)
class ZookeeperConnect:
    """`zookeeper.connect` split up, because the chroot decides where every znode lives."""

    servers: tuple[tuple[str, int], ...]
    chroot: str = ""

    @classmethod
    def parse(cls, text: str, source: str | None = None) -> ZookeeperConnect:
        try:
            return _zookeeper_connect(text.strip())
        except _Invalid as exc:
            raise ConfigError("zookeeper.connect", text, str(exc), source) from None

    @property
    def servers_string(self) -> str:
        return ",".join(format_address(host, port) for host, port in self.servers)

    @property
    def connect_string(self) -> str:
        return self.servers_string + self.chroot

    def __str__(self) -> str:
        return self.connect_string


@dataclass(frozen=True)
class ConsumerConfig:
    """One consumer's validated settings; immutable so every part of the consumer agrees.

    Build it with `load_config` or `ConsumerConfig.from_mapping`, which apply the defaults and
    checks; the fields mirror the keys with dots as underscores.
    """

    group_id: str
    zookeeper_connect: ZookeeperConnect
    consumer_id: str | None
    socket_timeout_ms: int
    socket_receive_buffer_bytes: int  # 0 or -1 keep the OS default, as in the reference
    fetch_message_max_bytes: int
    num_consumer_fetchers: int
    auto_commit_enable: bool
    auto_commit_interval_ms: int
    queued_max_message_chunks: int
    rebalance_max_retries: int
    fetch_min_bytes: int
    fetch_wait_max_ms: int
    rebalance_backoff_ms: int
    refresh_leader_backoff_ms: int
    offsets_channel_backoff_ms: int
    offsets_channel_socket_timeout_ms: int
    offsets_commit_max_retries: int
    offsets_storage: str
    dual_commit_enabled: bool
    auto_offset_reset: str
    consumer_timeout_ms: int  # -1 blocks forever
    client_id: str
    exclude_internal_topics: bool
    partition_assignment_strategy: str
    zookeeper_session_timeout_ms: int
    zookeeper_connection_timeout_ms: int
    zookeeper_sync_time_ms: int
    topics: tuple[str, ...] | None
    whitelist: str | None
    blacklist: str | None
    fetch_backend: str  # zkconsumer's own: "auto" picks the wire fetcher where it can serve
    kafka_api_version: tuple[int, ...] | None
    bootstrap_servers: str | None  # brokers not registered in this ZooKeeper
    isolation_level: str
    topic_metadata_refresh_interval_ms: int
    zookeeper_auth_digest: str | None = field(repr=False)
    zookeeper_sasl_mechanism: str
    zookeeper_sasl_username: str | None
    zookeeper_sasl_password: str | None = field(repr=False)
    zookeeper_acl_world_read: bool
    metrics_port: int  # 0: no metrics server
    metrics_host: str
    kafka_client_properties: Mapping[str, str] = field(hash=False, repr=False)
    unknown_keys: tuple[str, ...] = ()

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, str],
                     source: str = "config mapping") -> ConsumerConfig:
        """Defaults plus `mapping`, like the reference's constructor taking a `Properties`."""
        return _build(_mapping_settings(mapping, source))

    def to_properties(self) -> dict[str, str]:
        """The effective settings as strings that `from_mapping` reads back to an equal config."""
        result = {}
        for key in _KEYS:
            value = getattr(self, key.field)
            if value is not None:
                result[key.name] = key.render(value)
        for name, value in self.kafka_client_properties.items():
            result[KAFKA_PREFIX + name] = value
        return result


class Setting(NamedTuple):
    """A value and where it came from, which errors and warnings name."""

    value: str
    source: str


def load_config(properties_file: str | os.PathLike[str] | None = None,
                overrides: Mapping[str, str] | Iterable[str] = (),
                environ: Mapping[str, str] | None = None,
                options: Mapping[str, Setting] | None = None) -> ConsumerConfig:
    """Layer defaults, the file, the environment (`os.environ` unless given), overrides and
    `options`, and warn about every key that is not known.

    `overrides` is either a mapping or `key=value` strings as given to `--property`; `options`
    holds the values of named options (`--zookeeper`), each with its own source.
    """
    settings: dict[str, Setting] = {}
    if properties_file is not None:
        path = os.fspath(properties_file)
        for key, entry in read_properties_file(path).items():
            settings[key] = Setting(entry.value, f"{path} line {entry.line}")
    settings.update(_environment_settings(os.environ if environ is None else environ))
    settings.update(_override_settings(overrides))
    settings.update(options or {})
    config = _build(settings)
    for name in config.unknown_keys:
        _warn_unknown(name, settings[name].source)
    for name, setting in settings.items():
        known = _KEYS_BY_NAME.get(name)
        if known is not None and known.no_effect is not None:
            log.warning("config key accepted but has no effect", key=name,
                        source=setting.source, why=known.no_effect)
    return config


def parse_setting(name: str, text: str, source: str | None = None) -> Any:
    """One known key's value, checked and converted as the config does it, for a caller holding
    a single value (a command-line option) that wants it checked before anything else runs."""
    key = _KEYS_BY_NAME[name]
    try:
        return key.parse(_non_empty(text.strip()))
    except _Invalid as exc:
        raise ConfigError(name, _shown(text, key.secret), str(exc), source) from None


def _warn_unknown(name: str, source: str) -> None:
    closest = difflib.get_close_matches(name, _KEY_NAMES, n=1)
    log.warning("unknown config key ignored", key=name, source=source,
                **({"closest_known_key": closest[0]} if closest else {}))


def _mapping_settings(mapping: Mapping[str, str], source: str) -> dict[str, Setting]:
    settings = {}
    for key, value in mapping.items():
        if not isinstance(value, str):
            raise ConfigError(key, value, "must be a string, as in Java Properties", source)
        settings[key] = Setting(value, source)
    return settings


def _environment_settings(environ: Mapping[str, str]) -> dict[str, Setting]:
    settings = {}
    for key in _KEYS:
        variable = ENV_PREFIX + key.name.upper().replace(".", "_")
        if variable in environ:
            settings[key.name] = Setting(environ[variable], f"environment {variable}")
    return settings


def _override_settings(overrides: Mapping[str, str] | Iterable[str]) -> dict[str, Setting]:
    if isinstance(overrides, Mapping):
        return _mapping_settings(overrides, "overrides")
    if isinstance(overrides, str):
        overrides = (overrides,)
    settings = {}
    for item in overrides:
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise ConfigError("--property", item, "expected key=value")
        settings[key.strip()] = Setting(value, "--property")
    return settings


def _build(settings: Mapping[str, Setting]) -> ConsumerConfig:
    fields: dict[str, Any] = {}
    for key in _KEYS:
        setting = settings.get(key.name)
        if setting is None:
            if key.required:
                raise MissingConfigError(key.name)
            fields[key.field] = key.derive(fields) if key.derive else key.default
            continue
        fields[key.field] = parse_setting(key.name, setting.value, setting.source)
    _check_combinations(fields, settings)
    if fields["zookeeper_auth_digest"]:
        register_secret(fields["zookeeper_auth_digest"])
        register_secret(fields["zookeeper_auth_digest"].partition(":")[2])
    if fields["zookeeper_sasl_password"]:
        register_secret(fields["zookeeper_sasl_password"])
    kafka_properties = {}
    unknown = []
    for name in sorted(settings):
        if name in _KEY_NAMES:
            continue
        if name.startswith(KAFKA_PREFIX) and name != KAFKA_PREFIX:
            kafka_properties[name[len(KAFKA_PREFIX):]] = settings[name].value.strip()
            if _SECRET_NAME.search(name):
                register_secret(settings[name].value.strip())
        else:
            unknown.append(name)
    return ConsumerConfig(**fields, kafka_client_properties=MappingProxyType(kafka_properties),
                          unknown_keys=tuple(unknown))


def _check_combinations(fields: Mapping[str, Any], settings: Mapping[str, Setting]) -> None:
    """Blame only keys the user set, so a default never appears to be at fault."""
    wait, timeout = fields["fetch_wait_max_ms"], fields["socket_timeout_ms"]
    if wait > timeout:
        if "fetch.wait.max.ms" in settings:
            _reject(settings, "fetch.wait.max.ms",
                    f"must not exceed socket.timeout.ms ({timeout}), or fetches time out")
        _reject(settings, "socket.timeout.ms",
                f"must be at least fetch.wait.max.ms ({wait}), or fetches time out")
    if "zookeeper.auth.digest" in settings and "zookeeper.sasl.username" in settings:
        _reject(settings, "zookeeper.sasl.username",
                "cannot be combined with zookeeper.auth.digest; choose one way to authenticate")
    if ("zookeeper.sasl.username" in settings) != ("zookeeper.sasl.password" in settings):
        missing = ("zookeeper.sasl.password" if "zookeeper.sasl.username" in settings
                   else "zookeeper.sasl.username")
        present = "zookeeper.sasl.username" if missing.endswith("password") else \
            "zookeeper.sasl.password"
        _reject(settings, present, f"needs {missing} too", secret=present.endswith("password"))
    chosen = [name for name in _SUBSCRIPTION_KEYS if name in settings]
    if len(chosen) > 1:
        _reject(settings, chosen[1],
                f"cannot be combined with {chosen[0]} (from {settings[chosen[0]].source}); "
                f"set only one of {', '.join(_SUBSCRIPTION_KEYS)}")


def _reject(settings: Mapping[str, Setting], name: str, reason: str,
            secret: bool = False) -> NoReturn:
    setting = settings[name]
    raise ConfigError(name, _shown(setting.value, secret), reason, setting.source) from None


def _shown(text: str, secret: bool) -> str:
    return "<hidden>" if secret else text.strip()


def _non_empty(text: str) -> str:
    if not text:
        raise _Invalid("must not be empty")
    return text


def _int(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not _INTEGER.fullmatch(text):
            raise _Invalid("must be an integer")
        value = int(text)
        if not minimum <= value <= _INT_MAX:
            raise _Invalid(f"must be between {minimum} and {_INT_MAX}")
        return value
    return parse


def _bool(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise _Invalid("must be true or false")
    return text.lower() == "true"


def _one_of(*choices: str, aliases: Mapping[str, str] = MappingProxyType({})
            ) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = aliases.get(text.lower(), text.lower())
        if value not in choices:
            raise _Invalid(f"must be one of {', '.join(choices + tuple(aliases))}")
        return value
    return parse


def _legal_name(text: str) -> str:
    """The reference's rule for group and client ids, which become znode names and metric tags."""
    if not _LEGAL_NAME.fullmatch(text):
        raise _Invalid("may contain only ASCII alphanumerics, '.', '_' and '-'")
    return text


def _consumer_id(text: str) -> str:
    if "/" in text:
        raise _Invalid("must not contain '/', it becomes part of a znode name")
    return text


def _topics(text: str) -> tuple[str, ...]:
    topics = [topic.strip() for topic in text.split(",")]
    for topic in topics:
        if not _LEGAL_NAME.fullmatch(topic) or topic in (".", "..") \
                or len(topic) > _MAX_TOPIC_LENGTH:
            raise _Invalid(f"{topic!r} is not a legal topic name")
    return tuple(dict.fromkeys(topics))


def _topic_filter(text: str) -> str:
    """The reason names the regex: a command-line option's error shows no value otherwise."""
    if not normalize_filter_regex(text):
        raise _Invalid(f"{text!r} is empty once quotes and spaces are removed")
    try:
        return Whitelist(text).regex
    except TopicFilterError as exc:
        raise _Invalid(f"{text!r} is not a valid regular expression: {exc.reason}") from None


def _api_version(text: str) -> tuple[int, ...] | None:
    if text.lower() == "auto":
        return None
    parts = text.split(".")
    if not 2 <= len(parts) <= 4 or not all(part.isascii() and part.isdigit() for part in parts):
        raise _Invalid("must be 'auto' or a version such as 0.9, 0.10.2 or 2.8")
    return tuple(int(part) for part in parts)


def _bootstrap_servers(text: str) -> str:
    """`host:port,...`, each with a port: a broker has no default one worth guessing."""
    servers = []
    for entry in text.split(","):
        entry = entry.strip()
        host, port = _server(entry)
        if not entry.endswith(f":{port}"):
            raise _Invalid(f"server {entry!r} needs a port, as in host:9092")
        servers.append(format_address(host, port))
    return ",".join(servers)


def _zookeeper_connect(text: str) -> ZookeeperConnect:
    hosts, slash, path = text.partition("/")
    chroot = _chroot(slash + path)
    return ZookeeperConnect(tuple(_server(entry.strip()) for entry in hosts.split(",")), chroot)


def _chroot(path: str) -> str:
    """ZooKeeper treats a bare `/` as no chroot and rejects other malformed paths."""
    if path in ("", "/"):
        return ""
    if path.endswith("/"):
        raise _Invalid(f"chroot {path!r} must not end with '/'")
    if any(segment in ("", ".", "..") for segment in path[1:].split("/")):
        raise _Invalid(f"chroot {path!r} has an empty, '.' or '..' segment")
    return path


def _server(entry: str) -> tuple[str, int]:
    if entry.startswith("["):
        host, bracket, rest = entry[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise _Invalid(f"server {entry!r} must look like [ipv6-address]:port")
        port_text = rest[1:] if rest else None
    else:
        host, colon, port_text = entry.partition(":")
        port_text = port_text if colon else None
        if ":" in (port_text or ""):
            raise _Invalid(f"server {entry!r}: write IPv6 addresses as [address]:port")
    if not _HOST.fullmatch(host):
        raise _Invalid(f"server {entry!r} has no valid host")
    if port_text is None:
        return host, DEFAULT_ZOOKEEPER_PORT
    if not (port_text.isascii() and port_text.isdigit()) or not 1 <= int(port_text) <= 65535:
        raise _Invalid(f"server {entry!r} has an invalid port (1-65535)")
    return host, int(port_text)


def _port(text: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise _Invalid("must be an integer")
    port = int(text)
    if not 0 <= port <= 65535:
        raise _Invalid("must be a port (1-65535), or 0 for none")
    return port


def _digest_credentials(text: str) -> str:
    user, colon, password = text.partition(":")
    if not colon or not user or not password:
        raise _Invalid("must be user:password")
    return text


def _render(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class _Key:
    name: str
    parse: Callable[[str], Any]
    default: Any = None
    derive: Callable[[Mapping[str, Any]], Any] | None = None  # a default from earlier fields
    required: bool = False
    render: Callable[[Any], str] = _render
    secret: bool = False  # never echoed in errors
    # Why a reference key is accepted (so shared properties files load) yet changes nothing.
    no_effect: str | None = None

    @property
    def field(self) -> str:
        return self.name.replace(".", "_")


# Order matters only where a default derives from an earlier key.
_KEYS = (
    _Key("group.id", _legal_name, required=True),
    _Key("zookeeper.connect", _zookeeper_connect, required=True),
    _Key("consumer.id", _consumer_id),
    _Key("socket.timeout.ms", _int(1), 30000),
    _Key("socket.receive.buffer.bytes", _int(-1), 65536),
    _Key("fetch.message.max.bytes", _int(1), 1048576),
    _Key("num.consumer.fetchers", _int(1), 1,
         no_effect="one fetcher thread serves every broker without blocking on any"),
    _Key("auto.commit.enable", _bool, True),
    _Key("auto.commit.interval.ms", _int(1), 60000),
    _Key("queued.max.message.chunks", _int(1), 2),
    _Key("rebalance.max.retries", _int(1), 4),
    _Key("fetch.min.bytes", _int(0), 1),
    _Key("fetch.wait.max.ms", _int(0), 100),
    _Key("zookeeper.sync.time.ms", _int(0), 2000),
    _Key("rebalance.backoff.ms", _int(0), derive=lambda f: f["zookeeper_sync_time_ms"]),
    _Key("refresh.leader.backoff.ms", _int(0), 200),
    _Key("offsets.channel.backoff.ms", _int(0), 1000),
    _Key("offsets.channel.socket.timeout.ms", _int(1), 10000),
    _Key("offsets.commit.max.retries", _int(0), 5),
    _Key("offsets.storage", _one_of("zookeeper", "kafka"), "zookeeper"),
    _Key("dual.commit.enabled", _bool, derive=lambda f: f["offsets_storage"] == "kafka"),
    _Key("auto.offset.reset",
         _one_of("smallest", "largest", aliases={"earliest": "smallest", "latest": "largest"}),
         "largest"),
    _Key("consumer.timeout.ms", _int(-1), -1),
    _Key("client.id", _legal_name, derive=lambda f: f["group_id"]),
    _Key("exclude.internal.topics", _bool, True),
    _Key("partition.assignment.strategy", _one_of("range", "roundrobin"), "range"),
    _Key("zookeeper.session.timeout.ms", _int(1), 6000),
    _Key("zookeeper.connection.timeout.ms", _int(1),
         derive=lambda f: f["zookeeper_session_timeout_ms"]),
    _Key("topics", _topics, render=",".join),
    _Key("whitelist", _topic_filter),
    _Key("blacklist", _topic_filter),
    _Key("fetch.backend", _one_of("auto", "wire", "kafka-python"), "auto"),
    _Key("kafka.api.version", _api_version, render=lambda v: ".".join(map(str, v))),
    _Key("bootstrap.servers", _bootstrap_servers),
    _Key("isolation.level", _one_of("read_uncommitted", "read_committed"), "read_uncommitted"),
    _Key("topic.metadata.refresh.interval.ms", _int(100), 10000),
    _Key("zookeeper.auth.digest", _digest_credentials, secret=True),
    _Key("zookeeper.sasl.mechanism", _one_of("digest-md5", "gssapi"), "digest-md5"),
    _Key("zookeeper.sasl.username", _non_empty),
    _Key("zookeeper.sasl.password", _non_empty, secret=True),
    _Key("zookeeper.acl.world.read", _bool, True),
    _Key("metrics.port", _port, 0),
    _Key("metrics.host", _non_empty, "127.0.0.1"),
)
_KEYS_BY_NAME = {key.name: key for key in _KEYS}
_KEY_NAMES = frozenset(_KEYS_BY_NAME)

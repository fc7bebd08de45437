"""Building one `ConsumerConfig` from layered settings: defaults, a properties file, the
environment, `--property` overrides and named options, in that order of precedence. Each value
keeps its source for the error that may name it; checks that span keys blame only keys the user
set; the secrets found are registered for redaction before anything can log them."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, NoReturn

from zkconsumer.config.addresses import ZookeeperConnect
from zkconsumer.config.keys import KEY_NAMES, KEYS, KEYS_BY_NAME, ZOOKEEPER_TLS_KEYS
from zkconsumer.config.values import Invalid, non_empty
from zkconsumer.config.zookeeper import SaslLogin, Store, ZookeeperSettings, ZookeeperTls
from zkconsumer.errors import ConfigError
from zkconsumer.logs import get_logger, register_secret
from zkconsumer.properties import read_properties_file

ENV_PREFIX = "ZKCONSUMER_"
KAFKA_PREFIX = "kafka."
_SUBSCRIPTION_KEYS = ("topics", "whitelist", "blacklist")
_SECRET_NAME = re.compile(r"password|secret|token|credential", re.IGNORECASE)
log = get_logger(__name__)


class MissingConfigError(ConfigError):
    """A required key set nowhere: says so, rather than blaming a value of None."""

    def __init__(self, key: str, reason: str = "it is required") -> None:
        super().__init__(key, None, reason)

    def __str__(self) -> str:
        return f"missing config {self.key}: {self.reason}"


@dataclass(frozen=True)
class ConsumerConfig:
    """One consumer's validated settings; immutable so every part of the consumer agrees.

    Build it with `load_config` or `ConsumerConfig.from_mapping`, which apply the defaults and
    checks; the fields mirror the keys with dots as underscores.
    """

    group_id: str
    group_coordination: str  # "zookeeper" or "kafka"
    zookeeper_connect: ZookeeperConnect | None  # None only with group_coordination "kafka"
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
    rebalance_turn_ms: int  # zkconsumer's own: a member's wait after a group change (zk.turns)
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
    zookeeper_startup_deadline_ms: int  # zkconsumer's own: a slow first connection tried again
    zookeeper_max_in_flight_requests: int  # zkconsumer's own: the request window
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
    zookeeper_ssl_client_enable: bool
    zookeeper_clientCnxnSocket: str | None
    zookeeper_ssl_keystore_location: str | None
    zookeeper_ssl_keystore_password: str | None = field(repr=False)
    zookeeper_ssl_keystore_type: str | None
    zookeeper_ssl_truststore_location: str | None
    zookeeper_ssl_truststore_password: str | None = field(repr=False)
    zookeeper_ssl_truststore_type: str | None
    zookeeper_ssl_protocol: str
    zookeeper_ssl_enabled_protocols: tuple[str, ...]
    zookeeper_ssl_cipher_suites: tuple[str, ...] | None
    zookeeper_ssl_endpoint_identification_algorithm: bool
    zookeeper_set_acl: bool
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    metrics_port: int  # 0: no metrics server
    metrics_host: str
    cutover_on_fence: str  # "switch" or "exit"
    kafka_client_properties: Mapping[str, str] = field(hash=False, repr=False)
    unknown_keys: tuple[str, ...] = ()

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, str],
                     source: str = "config mapping") -> ConsumerConfig:
        """Defaults plus `mapping`, like the reference's constructor taking a `Properties`."""
        return _build(_mapping_settings(mapping, source))

    @property
    def zookeeper(self) -> ZookeeperSettings:
        """What the ZooKeeper session is opened with (a Kafka-coordinated member has none)."""
        if self.zookeeper_connect is None:
            raise MissingConfigError("zookeeper.connect")
        sasl = None
        if self.zookeeper_sasl_username:
            sasl = SaslLogin(self.zookeeper_sasl_mechanism, self.zookeeper_sasl_username,
                             self.zookeeper_sasl_password or "")
        return ZookeeperSettings(self.zookeeper_connect,
                                 self.zookeeper_connection_timeout_ms / 1000.0,
                                 self.zookeeper_session_timeout_ms / 1000.0,
                                 self.zookeeper_auth_digest, sasl, self.zookeeper_acl_world_read,
                                 self.zookeeper_startup_deadline_ms / 1000.0,
                                 self.zookeeper_max_in_flight_requests,
                                 self._zookeeper_tls())

    def _zookeeper_tls(self) -> ZookeeperTls | None:
        if not self.zookeeper_ssl_client_enable:
            return None
        keystore = truststore = None
        if self.zookeeper_ssl_keystore_location:
            keystore = Store(self.zookeeper_ssl_keystore_location,
                             self.zookeeper_ssl_keystore_password,
                             self.zookeeper_ssl_keystore_type, "zookeeper.ssl.keystore")
        if self.zookeeper_ssl_truststore_location:
            truststore = Store(self.zookeeper_ssl_truststore_location,
                               self.zookeeper_ssl_truststore_password,
                               self.zookeeper_ssl_truststore_type, "zookeeper.ssl.truststore")
        return ZookeeperTls(keystore, truststore, self.zookeeper_ssl_enabled_protocols,
                            self.zookeeper_ssl_cipher_suites,
                            self.zookeeper_ssl_endpoint_identification_algorithm,
                            self.zookeeper_set_acl)

    def to_properties(self) -> dict[str, str]:
        """The effective settings as strings that `from_mapping` reads back to an equal config."""
        result = {}
        for key in KEYS:
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
        known = KEYS_BY_NAME.get(name)
        if known is not None and known.no_effect is not None:
            log.warning("config key accepted but has no effect", key=name,
                        source=setting.source, why=known.no_effect)
    return config


def zookeeper_tls_file_properties(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The ZooKeeper TLS keys of a properties file (Kafka's `--zk-tls-config-file`) as
    `key=value` overrides; like Kafka's tools, every other key in it is ignored, and so is
    `zookeeper.clientCnxnSocket`, which every such file holds and which changes nothing here
    (not warned about on every command)."""
    return tuple(f"{key}={entry.value}" for key, entry in read_properties_file(path).items()
                 if key in ZOOKEEPER_TLS_KEYS and KEYS_BY_NAME[key].no_effect is None)


def parse_setting(name: str, text: str, source: str | None = None) -> Any:
    """One known key's value, checked and converted as the config does it, for a caller holding
    a single value (a command-line option) that wants it checked before anything else runs."""
    key = KEYS_BY_NAME[name]
    try:
        return key.parse(text.strip() if key.empty_allowed else non_empty(text.strip()))
    except Invalid as exc:
        raise ConfigError(name, _shown(text, key.secret), str(exc), source) from None


def _warn_unknown(name: str, source: str) -> None:
    closest = difflib.get_close_matches(name, KEY_NAMES, n=1)
    log.warning("unknown config key ignored", key=name, source=source,
                **({"closest_known_key": closest[0]} if closest else {}))


def _mapping_settings(mapping: Mapping[str, str], source: str) -> dict[str, Setting]:
    settings = {}
    for key, value in mapping.items():
        if not isinstance(value, str):
            raise ConfigError(key, value, "must be a string, as in Java Properties", source)
        settings[key] = Setting(value, source)
    return settings


def env_variable(key: str) -> str:
    """The environment variable of a known key: `ZKCONSUMER_GROUP_ID` for `group.id`."""
    return ENV_PREFIX + key.upper().replace(".", "_")


def _environment_settings(environ: Mapping[str, str]) -> dict[str, Setting]:
    settings = {}
    for key in KEYS:
        variable = env_variable(key.name)
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
    for key in KEYS:
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
    for secret in ("zookeeper_sasl_password", "zookeeper_ssl_keystore_password",
                   "zookeeper_ssl_truststore_password"):
        if fields[secret]:
            register_secret(fields[secret])
    others = {name: setting for name, setting in settings.items() if name not in KEY_NAMES}
    kafka_properties, unknown = _kafka_client_properties(others)
    return ConsumerConfig(**fields, kafka_client_properties=MappingProxyType(kafka_properties),
                          unknown_keys=tuple(unknown))


def kafka_only_settings(overrides: Iterable[str]
                        ) -> tuple[tuple[int, ...] | None, Mapping[str, str]]:
    """`kafka.api.version` and the Kafka client's properties from `--property` strings, for a
    command that asks Kafka and no ZooKeeper: any other key is an error, as it could only be
    a mistake there."""
    settings = _override_settings(overrides)
    version = settings.pop("kafka.api.version", None)
    properties, others = _kafka_client_properties(settings)
    if others:
        raise ConfigError(others[0], "<hidden>", "only kafka.<key> settings apply without "
                          "ZooKeeper", settings[others[0]].source)
    return (None if version is None
            else parse_setting("kafka.api.version", version.value, version.source)), properties


def _kafka_client_properties(settings: Mapping[str, Setting]
                             ) -> tuple[dict[str, str], list[str]]:
    """The `kafka.*` pass-through properties, prefix removed, their secrets registered; and
    the names of the other settings."""
    kafka_properties = {}
    others = []
    for name in sorted(settings):
        if name.startswith(KAFKA_PREFIX) and name != KAFKA_PREFIX:
            kafka_properties[name[len(KAFKA_PREFIX):]] = settings[name].value.strip()
            if _SECRET_NAME.search(name):
                register_secret(settings[name].value.strip())
        else:
            others.append(name)
    return kafka_properties, others


def _check_combinations(fields: Mapping[str, Any], settings: Mapping[str, Setting]) -> None:
    """Blame only keys the user set, so a default never appears to be at fault."""
    _check_coordination(fields, settings)
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
    if fields["zookeeper_set_acl"] and fields["zookeeper_ssl_client_enable"] \
            and not fields["zookeeper_ssl_keystore_location"]:
        _reject(settings, "zookeeper.set.acl", "needs a client certificate "
                "(zookeeper.ssl.keystore.location) for the znodes' x509 ACL")
    chosen = [name for name in _SUBSCRIPTION_KEYS if name in settings]
    if len(chosen) > 1:
        _reject(settings, chosen[1],
                f"cannot be combined with {chosen[0]} (from {settings[chosen[0]].source}); "
                f"set only one of {', '.join(_SUBSCRIPTION_KEYS)}")


def _check_coordination(fields: Mapping[str, Any], settings: Mapping[str, Setting]) -> None:
    """ZooKeeper coordination needs `zookeeper.connect`; Kafka's needs the brokers only, and
    heartbeats well within a session."""
    if fields["group_coordination"] == "zookeeper":
        if fields["zookeeper_connect"] is None:
            raise MissingConfigError("zookeeper.connect")
        return
    if fields["bootstrap_servers"] is None:
        raise MissingConfigError("bootstrap.servers", "it is required with "
                                 "group.coordination=kafka")
    heartbeat, session = fields["heartbeat_interval_ms"], fields["session_timeout_ms"]
    if heartbeat >= session:
        blamed = "heartbeat.interval.ms" if "heartbeat.interval.ms" in settings \
            else "session.timeout.ms"
        _reject(settings, blamed, f"heartbeat.interval.ms ({heartbeat}) must be lower than "
                f"session.timeout.ms ({session}), typically a third of it")


def _reject(settings: Mapping[str, Setting], name: str, reason: str,
            secret: bool = False) -> NoReturn:
    setting = settings[name]
    raise ConfigError(name, _shown(setting.value, secret), reason, setting.source) from None


def _shown(text: str, secret: bool) -> str:
    return "<hidden>" if secret else text.strip()

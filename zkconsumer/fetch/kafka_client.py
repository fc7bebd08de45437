"""`kafka.`-prefixed properties as kafka-python options, shared by every Kafka client we open.

The fetcher and the Kafka offset store both need the same security settings (SSL, SASL) and
tuning, so a user writes them once, e.g. `kafka.security.protocol=SASL_SSL`, and both get them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from zkconsumer.errors import ConfigError, ZkConsumerError
from zkconsumer.kafka.errors import FetchError

if TYPE_CHECKING:
    from kafka import KafkaConsumer

# Options zkconsumer sets itself: the group is coordinated in ZooKeeper and the broker list
# comes from the registry, so letting a property change these would break the protocol.
MANAGED_OPTIONS = frozenset({"bootstrap_servers", "group_id", "enable_auto_commit", "api_version",
                             "key_deserializer", "value_deserializer", "kafka_client",
                             "isolation_level"})
# Managed options that one of our own keys sets instead.
_OWN_KEYS = {"bootstrap_servers": "bootstrap.servers (or --bootstrap-server)",
             "api_version": "kafka.api.version", "isolation_level": "isolation.level"}


def kafka_client_options(properties: Mapping[str, str]) -> dict[str, Any]:
    """`security.protocol=SSL` becomes `security_protocol="SSL"`.

    Properties files hold only text, so a value is converted to the type of kafka-python's
    default where that is a number or a boolean. A misspelt key fails here, naming the key,
    instead of deep inside kafka-python; values are never echoed, since some are passwords.
    """
    options: dict[str, Any] = {}
    if properties:  # kafka-python's import, only for what it has to judge
        from kafka import KafkaConsumer
    for key, text in properties.items():
        name = key.replace(".", "_")
        if name in MANAGED_OPTIONS:
            instead = f"; set {_OWN_KEYS[name]} instead" if name in _OWN_KEYS else ""
            raise ConfigError(f"kafka.{key}", "<hidden>", f"is set by zkconsumer itself{instead}")
        if name not in KafkaConsumer.DEFAULT_CONFIG:
            raise ConfigError(f"kafka.{key}", "<hidden>",
                              "is not a kafka-python consumer option")
        options[name] = _convert(key, text, KafkaConsumer.DEFAULT_CONFIG[name])
    return options


def _convert(key: str, text: str, default: Any) -> Any:
    if isinstance(default, bool):
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"kafka.{key}", text, "must be true or false")
        return text.lower() == "true"
    if isinstance(default, (int, float)):
        try:
            return type(default)(text)
        except ValueError:
            raise ConfigError(f"kafka.{key}", text, "must be a number") from None
    return text


def client_settings(pass_through: Mapping[str, Any], bootstrap_servers: str,
                    api_version: tuple[int, ...] | None, **managed: Any) -> dict[str, Any]:
    """Options for one of our kafka-python clients: the user's pass-through options, then what
    zkconsumer manages, which always wins (brokers, protocol, and never an automatic commit)."""
    settings = {**pass_through, **managed, "bootstrap_servers": bootstrap_servers,
                "enable_auto_commit": False}
    if api_version is not None:
        settings["api_version"] = api_version
    return settings


class LazyConsumer:
    """An unsubscribed kafka-python consumer, opened at the first question.

    kafka-python 3 starts bootstrapping as soon as a client exists, and closing one before that
    finished logs errors (`Bootstrap failed: ... Unable to bootstrap`) although nothing failed;
    a command that ends up asking nothing should open nothing. Before it is opened, one
    connection of the wire client's finds a refused SASL login, an unreachable broker or a 0.9
    broker within seconds (`first_contact`), where kafka-python would wait out its bootstrap
    timeout and say only "Unable to bootstrap". Not thread-safe by itself.
    """

    def __init__(self, options: Mapping[str, Any], error: type[ZkConsumerError]) -> None:
        self._options = dict(options)
        self._error = error
        self.where = options["bootstrap_servers"]
        self._client: KafkaConsumer | None = None
        self._closed = False

    def get(self) -> KafkaConsumer:
        """The client; after `close`, an error rather than a new client nobody would close."""
        if self._closed:
            raise self._error(f"the Kafka client for {self.where} is closed")
        if self._client is None:
            # Imported here: the first contact's own imports (the wire fetcher's settings)
            # come back to this module.
            from kafka import KafkaConsumer
            from kafka.errors import KafkaError

            from zkconsumer.fetch.first_contact import checked_options
            try:
                options = checked_options(self._options)
            except FetchError as exc:
                raise self._error(str(exc)) from None
            try:
                self._client = KafkaConsumer(**options)
            except KafkaError as exc:
                raise self._error(f"cannot reach Kafka at {self.where}: {exc}") from exc
        return self._client

    def close(self) -> None:
        self._closed = True
        if self._client is not None:
            self._client.close(autocommit=False)
            self._client = None

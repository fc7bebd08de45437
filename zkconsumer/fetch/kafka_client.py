"""`kafka.`-prefixed properties as kafka-python options, shared by every Kafka client we open.

The fetcher, the offset stores and readers, the log-offsets client and the admin commands all
need the same security settings (SSL, SASL) and tuning, so a user writes them once, e.g.
`kafka.security.protocol=SASL_SSL`, and every client gets them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zkconsumer.errors import ConfigError
from zkconsumer.kafka.io.logins import token_provider_named

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
    default where that is a number or a boolean, and `sasl.oauth.token.provider` (an object
    to kafka-python) names its provider as `module:attribute` (`kafka.io.logins`), so that
    every client, kafka-python's included, gets the same provider. A misspelt key fails here,
    naming the key, instead of deep inside kafka-python; values are never echoed, since some
    are passwords.
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
        options[name] = (token_provider_named(text) if name == "sasl_oauth_token_provider"
                         else _convert(key, text, KafkaConsumer.DEFAULT_CONFIG[name]))
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

"""What the exporter watches and how, told in the words of Burrow's configuration (pure).

Burrow's UI and scripts read `/v3/kafka/<cluster>` and `/v3/config/...` to learn which cluster
is watched, through which servers, how often, and with what window. The exporter has no such
configuration file: its options and the connections it opened say the same things, and this
module lays them out in Burrow's modules: one cluster module (the brokers), a consumer module
per place offsets are read from (`zookeeper`, class `kafka_zk`; `kafka` when the offsets groups
keep in Kafka are read too), one storage module (the window) and one evaluator (the scan).
Field names and JSON types are Burrow 1.2's; values Burrow has and the exporter has not (a
pidfile, log rotation) are empty or zero.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Burrow's names for the log levels Python's logging has under other names.
_BURROW_LEVELS = {"warning": "warn", "critical": "fatal"}
_SSL_PROTOCOLS = ("SSL", "SASL_SSL")
_SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
_PROFILE = "exporter"
ZOOKEEPER_MODULE = "zookeeper"
KAFKA_MODULE = "kafka"
DEFAULT_MODULE = "default"


@dataclass(frozen=True)
class KafkaClientProfile:
    """Burrow's client profile: how the brokers are spoken to. `tls` and `sasl` are Burrow's
    profile objects, None where the connection uses neither."""

    kafka_version: str = ""
    tls: Mapping[str, Any] | None = None
    sasl: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Connections:
    """Where the exporter reads from and listens, as it was started."""

    zookeeper_servers: tuple[str, ...] = ()
    zookeeper_chroot: str = ""
    zookeeper_timeout_s: float = 6.0
    bootstrap_servers: tuple[str, ...] = ()
    client: KafkaClientProfile = field(default_factory=KafkaClientProfile)
    group_regex: str = ""
    listen: str = ""
    log_level: str = "info"
    notifier: NotifierSummary | None = None


@dataclass(frozen=True)
class NotifierSummary:
    """The notifier the exporter was started with (`--notify-*`), as Burrow's http notifier
    module describes one: the URL (as `logs.url_shown` shows it: no credentials), the least
    status that alerts, how often an alert that holds is sent again (0: never) and the groups
    notified about."""

    url: str
    threshold: int
    resend_s: float | None = None
    group_regex: str = ""
    timeout_s: float = 5.0


@dataclass(frozen=True)
class BurrowSetup:
    """Everything the configuration endpoints tell: the cluster's name, the scan and window
    (Burrow's offset refresh, storage intervals and evaluator cache) and the connections."""

    cluster: str
    interval_s: float
    window_samples: int
    kafka_offsets: bool
    connections: Connections = field(default_factory=Connections)


def client_profile(client_options: Mapping[str, Any], api_version: tuple[int, ...] | None
                   ) -> KafkaClientProfile:
    """The profile from kafka-python's client options; secrets (passwords) are never in it."""
    protocol = str(client_options.get("security_protocol", "PLAINTEXT")).upper()
    tls = None
    if protocol in _SSL_PROTOCOLS:
        tls = {"name": _PROFILE, "noverify": not client_options.get("ssl_check_hostname", True),
               "certfile": client_options.get("ssl_certfile") or "",
               "keyfile": client_options.get("ssl_keyfile") or "",
               "cafile": client_options.get("ssl_cafile") or ""}
    sasl = None
    if protocol in _SASL_PROTOCOLS:
        sasl = {"name": _PROFILE, "handshake-first": True,
                "username": client_options.get("sasl_plain_username") or ""}
    return KafkaClientProfile(".".join(map(str, api_version)) if api_version else "", tls, sasl)


def burrow_log_level(python_level: str) -> str:
    """Python's level name (`WARNING`) as Burrow says it (`warn`)."""
    lowered = python_level.lower()
    return _BURROW_LEVELS.get(lowered, lowered)


def cluster_module(setup: BurrowSetup) -> dict:
    """`/v3/kafka/<cluster>` and `/v3/config/cluster/<cluster>`: the brokers and how often
    their topics and log ends are read (every scan)."""
    every_scan = _whole_seconds(setup.interval_s)
    return {"class-name": "kafka", "servers": list(setup.connections.bootstrap_servers),
            "client-profile": _profile(setup.connections.client, _PROFILE),
            "topic-refresh": every_scan, "offset-refresh": every_scan}


def consumer_modules(setup: BurrowSetup) -> dict[str, dict]:
    """Where the groups' offsets are read: ZooKeeper unless the exporter watches only Kafka's
    group coordinator, Kafka unless turned off."""
    connections = setup.connections
    modules = {} if not connections.zookeeper_servers else {ZOOKEEPER_MODULE: _consumer_module(
        setup, "kafka_zk", list(connections.zookeeper_servers),
        zookeeper_path=connections.zookeeper_chroot,
        zookeeper_timeout=_whole_seconds(connections.zookeeper_timeout_s),
        profile=_profile(KafkaClientProfile(), ""), offsets_topic="")}
    if setup.kafka_offsets:
        modules[KAFKA_MODULE] = _consumer_module(
            setup, "kafka", list(connections.bootstrap_servers), zookeeper_path="",
            zookeeper_timeout=0, profile=_profile(connections.client, _PROFILE),
            offsets_topic="__consumer_offsets")
    return modules


def storage_modules(setup: BurrowSetup) -> dict[str, dict]:
    """The window: `intervals` observations, one a scan; a group is forgotten when its znodes
    are gone, never by age (`expire-group` 0)."""
    return {DEFAULT_MODULE: {"class-name": "inmemory", "intervals": setup.window_samples,
                             "min-distance": _whole_seconds(setup.interval_s),
                             "group-whitelist": setup.connections.group_regex,
                             "expire-group": 0}}


def evaluator_modules(setup: BurrowSetup) -> dict[str, dict]:
    """Statuses are judged once a scan and served from it until the next."""
    return {DEFAULT_MODULE: {"class-name": "caching",
                             "expire-cache": _whole_seconds(setup.interval_s)}}


def notifier_modules(setup: BurrowSetup) -> dict[str, dict]:
    """The one http notifier, when the exporter has one: it POSTs on a status change and on
    recovery (`send-close`), with the body the template makes (not a Burrow template file)."""
    notifier = setup.connections.notifier
    if notifier is None:
        return {}
    return {DEFAULT_MODULE: {
        "class-name": "http", "group-whitelist": notifier.group_regex,
        "interval": 0 if notifier.resend_s is None else _whole_seconds(notifier.resend_s),
        "threshold": notifier.threshold, "timeout": _whole_seconds(notifier.timeout_s),
        "keepalive": 0, "url-open": notifier.url, "url-close": notifier.url,
        "method-open": "POST", "method-close": "POST", "template-open": "",
        "template-close": "", "extra": {}, "send-close": True}}


def main_config(setup: BurrowSetup) -> dict:
    """`/v3/config`'s sections: the ZooKeeper watched (Burrow names its own there) and the
    address served on; the exporter logs to stderr and keeps no pidfile."""
    connections = setup.connections
    return {
        "general": {"pidfile": "", "stdout-logfile": "", "access-control-allow-origin": ""},
        "logging": {"filename": "", "max-size": 0, "max-backups": 0, "max-age": 0,
                    "use-local-time": False, "use-compression": False,
                    "level": connections.log_level},
        "zookeeper": {"servers": list(connections.zookeeper_servers),
                      "timeout": _whole_seconds(connections.zookeeper_timeout_s),
                      "root-path": connections.zookeeper_chroot},
        "httpserver": {DEFAULT_MODULE: {"address": connections.listen, "tls": "", "timeout": 0}},
    }


def _consumer_module(setup: BurrowSetup, class_name: str, servers: list[str], *,
                     zookeeper_path: str, zookeeper_timeout: int, profile: dict,
                     offsets_topic: str) -> dict:
    return {"class-name": class_name, "cluster": setup.cluster, "servers": servers,
            "group-whitelist": setup.connections.group_regex, "zookeeper-path": zookeeper_path,
            "zookeeper-timeout": zookeeper_timeout, "client-profile": profile,
            "offsets-topic": offsets_topic, "start-latest": False}


def _profile(client: KafkaClientProfile, name: str) -> dict:
    return {"name": name, "client-id": "", "kafka-version": client.kafka_version,
            "tls": None if client.tls is None else dict(client.tls),
            "sasl": None if client.sasl is None else dict(client.sasl)}


def _whole_seconds(seconds: float) -> int:
    """Burrow's durations are whole seconds; a sub-second scan interval counts as one."""
    return max(1, math.ceil(seconds))

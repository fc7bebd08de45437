"""`zkconsumer exporter`: lag, owners and status of every ZooKeeper group and every group on
Kafka's group coordinator, for Prometheus and for Burrow's clients, from one long-running
process; with only `--bootstrap-server`, of the coordinator's groups alone (KRaft clusters)."""

from __future__ import annotations

import dataclasses
import logging
import re
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import click

from zkconsumer.cli.admin_options import ZK_TLS_CONFIG_FILE, with_zk_tls_config_file
from zkconsumer.cli.duration_option import Duration
from zkconsumer.lag.status import DEFAULT_INTERVAL_S, DEFAULT_WINDOW_SAMPLES, Status, WindowRules
from zkconsumer.logs import get_logger, url_shown
from zkconsumer.model import format_address

if TYPE_CHECKING:
    from zkconsumer.config import ZookeeperSettings
    from zkconsumer.exporter.burrow_config import Connections, NotifierSummary
    from zkconsumer.exporter.kafka_groups import NoZookeeper
    from zkconsumer.exporter.notifier import Notifier
    from zkconsumer.exporter.zk_groups import GroupsCache
    from zkconsumer.fetch.brokers import KafkaAccess

# What an HTTP request line or header cannot carry.
_UNSENDABLE = re.compile(r"[\x00-\x20\x7f]")

# Loading /consumers of a big cluster (tens of thousands of znodes) takes seconds, not minutes.
CACHE_LOAD_TIMEOUT_S = 300


def _regex(_ctx, _param, value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise click.BadParameter(f"{value!r} is not a regular expression: {exc}") from None
    return value


def _http_url(_ctx, _param, value: str | None) -> str | None:
    """A URL every POST can be made to: what http.client would refuse is refused now."""
    if value is not None:
        try:
            parts = urlsplit(value)
            usable = (parts.scheme in ("http", "https") and bool(parts.hostname)
                      and not _UNSENDABLE.search(value) and parts.port != 0)
        except ValueError:  # a port that is not a number, or out of range
            usable = False
        if not usable:
            raise click.BadParameter(f"{value!r} is not an http:// or https:// URL")
    return value


def _header_value(_ctx, _param, value: str) -> str:
    if _UNSENDABLE.search(value.replace(" ", "")):
        raise click.BadParameter(f"{value!r} holds control characters")
    return value


def _template(_ctx, _param, value: Path | None) -> str | None:
    """The template file's text, checked now: a bad one is said at start, in one line."""
    if value is None:
        return None
    from zkconsumer.exporter.notice_body import BodyTemplate, NotifyTemplateError

    try:
        text = value.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"cannot read {value}: {exc}") from None
    try:
        BodyTemplate(text, json_escaped=False)
    except NotifyTemplateError as exc:
        raise click.BadParameter(f"{value}: {exc}") from None
    return text


NOTIFY_THRESHOLDS = [status.name for status in Status if status > Status.OK]


@click.command("exporter")
@click.option("--zookeeper", "zookeeper_connect", envvar="ZKCONSUMER_ZOOKEEPER_CONNECT",
              help="host:port[,host:port...][/chroot]; without it, --bootstrap-server is "
                   "needed and only the groups on Kafka's group coordinator are watched.")
@click.option("--bootstrap-server", envvar="ZKCONSUMER_BOOTSTRAP_SERVER",
              help="host:port,... of brokers to use instead of those registered in ZooKeeper "
                   "(KRaft clusters, or another cluster's ZooKeeper).")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE",
              help="Kafka client setting (kafka.security.protocol=SSL, kafka.api.version=0.9, "
                   "...) or ZooKeeper credential; repeatable.")
@click.option("--port", type=click.IntRange(0, 65535), default=9308, show_default=True,
              envvar="ZKCONSUMER_EXPORTER_PORT",
              help="Serve /metrics, /healthz, Burrow's /v3/kafka/... and the page at / on "
                   "this port.")
@click.option("--host", default="127.0.0.1", show_default=True, envvar="ZKCONSUMER_EXPORTER_HOST",
              help="The address to listen on (0.0.0.0: every interface).")
@click.option("--group-regex", callback=_regex, envvar="ZKCONSUMER_EXPORTER_GROUP_REGEX",
              help="Only groups whose whole name matches this regex.")
@click.option("--interval", type=Duration(), default=f"{DEFAULT_INTERVAL_S:g}s",
              show_default=True,
              envvar="ZKCONSUMER_EXPORTER_INTERVAL",
              help="How often log ends and Kafka offsets are read and statuses judged.")
@click.option("--window-samples", type=click.IntRange(2, 1000), default=DEFAULT_WINDOW_SAMPLES,
              show_default=True,
              envvar="ZKCONSUMER_EXPORTER_WINDOW_SAMPLES",
              help="Scans in a status window (Burrow's intervals): the window spans "
                   "interval x samples.")
@click.option("--cluster-name", default="local", show_default=True,
              envvar="ZKCONSUMER_EXPORTER_CLUSTER_NAME",
              help="The cluster name in Burrow's paths (/v3/kafka/<name>/consumer/...).")
@click.option("--kafka-offsets/--no-kafka-offsets", default=True, show_default=True,
              envvar="ZKCONSUMER_EXPORTER_KAFKA_OFFSETS",
              help="Also read the offsets groups keep in Kafka (offsets.storage=kafka).")
@click.option("--kafka-groups/--no-kafka-groups", default=True, show_default=True,
              envvar="ZKCONSUMER_EXPORTER_KAFKA_GROUPS",
              help="Also watch the groups on Kafka's group coordinator and those with only "
                   "Kafka-stored offsets (needs --kafka-offsets).")
@click.option("--notify-url", callback=_http_url, envvar="ZKCONSUMER_EXPORTER_NOTIFY_URL",
              help="POST a notification here when a group's status turns bad, changes, and "
                   "turns OK again.")
@click.option("--notify-template", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              callback=_template, envvar="ZKCONSUMER_EXPORTER_NOTIFY_TEMPLATE",
              help="The body: a file of $field placeholders (default: every field as JSON).")
@click.option("--notify-content-type", default="application/json", show_default=True,
              callback=_header_value,
              envvar="ZKCONSUMER_EXPORTER_NOTIFY_CONTENT_TYPE",
              help="The body's Content-Type; with JSON, text fields are escaped for JSON.")
@click.option("--notify-timeout", type=Duration(), default="5s", show_default=True,
              envvar="ZKCONSUMER_EXPORTER_NOTIFY_TIMEOUT", help="Each POST's timeout.")
@click.option("--notify-threshold", type=click.Choice(NOTIFY_THRESHOLDS, case_sensitive=False),
              default="WARN", show_default=True, envvar="ZKCONSUMER_EXPORTER_NOTIFY_THRESHOLD",
              help="The least status that alerts (in Burrow's order).")
@click.option("--notify-resend", type=Duration(), envvar="ZKCONSUMER_EXPORTER_NOTIFY_RESEND",
              help="Send an alert again this often while it holds (default: once).")
@click.option("--notify-group", callback=_regex, envvar="ZKCONSUMER_EXPORTER_NOTIFY_GROUP",
              help="Only notify about groups whose whole name matches this regex.")
@ZK_TLS_CONFIG_FILE
@with_zk_tls_config_file
def exporter(zookeeper_connect, bootstrap_server, properties, port, host, group_regex,
             interval, window_samples, cluster_name, kafka_offsets, kafka_groups, notify_url,
             notify_template, notify_content_type, notify_timeout, notify_threshold,
             notify_resend, notify_group) -> None:
    """Serve lag, owners and Burrow-style status of every group under /consumers and on
    Kafka's group coordinator, and a page of them at /, until Ctrl-C or SIGTERM."""
    log = get_logger(__name__)
    from zkconsumer.admin.context import admin_config, kafka_access_for
    from zkconsumer.cli.signals import stop_on_signals
    from zkconsumer.config import kafka_only_settings
    from zkconsumer.exporter.burrow_config import NotifierSummary
    from zkconsumer.exporter.kafka_groups import NoZookeeper
    from zkconsumer.exporter.kafka_reads import ClusterReads
    from zkconsumer.exporter.service import ExporterSettings, LagExporter
    from zkconsumer.exporter.zk_groups import GroupsCache
    from zkconsumer.fetch import LogOffsets
    from zkconsumer.fetch.brokers import KafkaAccess
    from zkconsumer.fetch.kafka_client import kafka_client_options
    from zkconsumer.metrics import MetricsServer
    from zkconsumer.topology import KafkaTopics, open_topic_source
    from zkconsumer.zk.session import connect_for

    if not zookeeper_connect:
        if not bootstrap_server:
            raise click.UsageError("give --zookeeper, or --bootstrap-server to watch only the "
                                   "groups on Kafka's group coordinator")
        if not (kafka_groups and kafka_offsets):
            raise click.UsageError("without --zookeeper only the groups on Kafka's group "
                                   "coordinator are watched, which needs --kafka-groups and "
                                   "--kafka-offsets (the defaults)")
    notifier = _notifier(notify_url, notify_template, notify_content_type, notify_timeout,
                         notify_threshold, notify_resend, notify_group, cluster_name)
    notified = None if notifier is None else NotifierSummary(
        url_shown(notify_url), Status[notify_threshold.upper()].value, notify_resend,
        notify_group or "", notify_timeout)
    with stop_on_signals() as stop_requested, ExitStack() as opened:
        groups: GroupsCache | NoZookeeper
        zookeeper: ZookeeperSettings | None = None
        if zookeeper_connect:
            config = admin_config(zookeeper_connect, properties)
            client_options = kafka_client_options(config.kafka_client_properties)
            zookeeper = config.zookeeper
            zk = connect_for(zookeeper)
            opened.callback(zk.close)
            opened.callback(zk.stop)
            groups = GroupsCache(zk, group_regex)
            access = kafka_access_for(zk, client_options, config.kafka_api_version,
                                      bootstrap_server)
            _check_login(access, client_options)
            topics = open_topic_source(zk, bootstrap_server, access.api_version, client_options)
        else:
            api_version, kafka_properties = kafka_only_settings(properties)
            client_options = kafka_client_options(kafka_properties)
            groups = NoZookeeper()
            access = KafkaAccess(bootstrap_server, api_version)
            _check_login(access, client_options)
            topics = KafkaTopics(LogOffsets(bootstrap_server, api_version, client_options))
        opened.callback(_quietly, groups.close)
        opened.callback(_quietly, topics.close)
        settings = ExporterSettings(
            interval, WindowRules(window_samples, interval * window_samples), cluster_name,
            kafka_offsets, _connections(zookeeper, access, client_options, group_regex,
                                        format_address(host, port), notified),
            kafka_groups, group_regex)
        reads = ClusterReads(access, topics, client_options)
        opened.callback(_quietly, reads.close)
        service = LagExporter(groups, reads, settings,
                              after_scan=None if notifier is None else notifier.scan_done,
                              fences=groups.fences)
        # Listening first: a port in use is said at once, not after loading /consumers.
        server = MetricsServer(host, port, service.registry, service.health, service.route,
                               text=service.metrics_text, paths=service.paths)
        opened.callback(_quietly, server.stop)
        if groups.start(CACHE_LOAD_TIMEOUT_S, stop_requested):
            if notifier is not None:
                service.registry.register(notifier.notifications)
                notifier.start()
                opened.callback(_quietly, notifier.stop)
            service.start()
            opened.callback(_quietly, service.stop)
            log.info("exporting group lag", zookeeper=zookeeper_connect or "none",
                     interval_s=interval, window_s=settings.rules.span_s,
                     groups=group_regex or "all")
            stop_requested.wait()
    log.info("exporter stopped")


def _notifier(url: str | None, template: str | None, content_type: str, timeout_s: float,
              threshold: str, resend_s: float | None, group_regex: str | None,
              cluster: str) -> Notifier | None:
    """The notifier the options ask for; None without --notify-url."""
    from zkconsumer.exporter.notice_body import DEFAULT_TEMPLATE, BodyTemplate
    from zkconsumer.exporter.notice_rules import NoticeRules
    from zkconsumer.exporter.notifier import Notifier, NotifySettings

    if url is None:
        given = [option for option, value in (("--notify-template", template),
                                              ("--notify-resend", resend_s),
                                              ("--notify-group", group_regex)) if value]
        if given:
            raise click.UsageError(f"{given[0]} needs --notify-url")
        return None
    body = BodyTemplate(template or DEFAULT_TEMPLATE,
                        json_escaped="json" in content_type.lower())
    rules = NoticeRules(Status[threshold.upper()], resend_s,
                        re.compile(group_regex) if group_regex else None)
    return Notifier(NotifySettings(url, body, rules, cluster, content_type, timeout_s))


def _connections(zookeeper: ZookeeperSettings | None, access: KafkaAccess, client_options: dict,
                 group_regex: str | None, listen: str, notifier: NotifierSummary | None
                 ) -> Connections:
    """What Burrow's /v3/config and /v3/kafka/<cluster> tell about the exporter; no ZooKeeper
    servers when it watches only Kafka's group coordinator."""
    from zkconsumer.exporter.burrow_config import Connections, burrow_log_level, client_profile

    connections = Connections(
        bootstrap_servers=tuple(access.bootstrap_servers.split(",")),
        client=client_profile(client_options, access.api_version),
        group_regex=group_regex or "", listen=listen,
        log_level=burrow_log_level(
            logging.getLevelName(logging.getLogger().getEffectiveLevel())),
        notifier=notifier)
    if zookeeper is None:
        return connections
    return dataclasses.replace(
        connections, zookeeper_servers=tuple(zookeeper.connect.servers_string.split(",")),
        zookeeper_chroot=zookeeper.connect.chroot,
        zookeeper_timeout_s=zookeeper.session_timeout_s)


def _check_login(access: KafkaAccess, client_options: dict) -> None:
    """A refused Kafka login ends the exporter at start, in one line: no scan could succeed
    with those credentials. Kafka out of reach is only said: it may yet come back, and each
    scan tries again."""
    from zkconsumer.fetch.first_contact import checked_options
    from zkconsumer.fetch.kafka_client import client_settings
    from zkconsumer.kafka.errors import FetchError
    from zkconsumer.kafka.protocol.sasl import SaslLoginError

    try:
        checked_options(client_settings(client_options, access.bootstrap_servers,
                                        access.api_version))
    except SaslLoginError:
        raise
    except FetchError as exc:
        get_logger(__name__).warning("Kafka cannot be asked yet; every scan tries again", error=str(exc))


def _quietly(close) -> None:
    """Closing goes on past a part that fails to close, so every other one is closed too."""
    try:
        close()
    except Exception as exc:  # noqa: BLE001 - whatever a client raises, the rest still close
        get_logger(__name__).warning("closing the exporter",
                                     part=getattr(close, "__qualname__", str(close)),
                                     error=f"{type(exc).__name__}: {exc}")

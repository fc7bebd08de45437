"""`zkconsumer exporter`: lag, owners and status of every ZooKeeper group and every group on
Kafka's group coordinator, for Prometheus and for Burrow's clients, from one long-running
process; with only `--bootstrap-server`, of the coordinator's groups alone (KRaft clusters)."""

from __future__ import annotations

import re
from contextlib import ExitStack

import click

from zkconsumer.admin.context import admin_config, kafka_access_for
from zkconsumer.cli.duration_option import Duration
from zkconsumer.cli.signals import stop_on_signals
from zkconsumer.config import kafka_only_settings
from zkconsumer.exporter.kafka_groups import NoZookeeper
from zkconsumer.exporter.kafka_reads import ClusterReads
from zkconsumer.exporter.service import ExporterSettings, LagExporter
from zkconsumer.exporter.zk_groups import GroupsCache
from zkconsumer.fetch import LogOffsets
from zkconsumer.fetch.brokers import KafkaAccess
from zkconsumer.fetch.first_contact import checked_options
from zkconsumer.fetch.kafka_client import client_settings, kafka_client_options
from zkconsumer.kafka.errors import FetchError
from zkconsumer.kafka.protocol.sasl import SaslLoginError
from zkconsumer.lag.status import DEFAULT_INTERVAL_S, DEFAULT_WINDOW_SAMPLES, WindowRules
from zkconsumer.logs import get_logger
from zkconsumer.metrics import MetricsServer
from zkconsumer.topology import KafkaTopics, open_topic_source
from zkconsumer.zk.session import connect_for

log = get_logger(__name__)

# Loading /consumers of a big cluster (tens of thousands of znodes) takes seconds, not minutes.
CACHE_LOAD_TIMEOUT_S = 300


def _regex(_ctx, _param, value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise click.BadParameter(f"{value!r} is not a regular expression: {exc}") from None
    return value


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
              help="Serve /metrics, /healthz and Burrow's /v3/kafka/... on this port.")
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
def exporter(zookeeper_connect, bootstrap_server, properties, port, host, group_regex,
             interval, window_samples, cluster_name, kafka_offsets, kafka_groups) -> None:
    """Serve lag, owners and Burrow-style status of every group under /consumers and on
    Kafka's group coordinator until Ctrl-C or SIGTERM."""
    if not zookeeper_connect:
        if not bootstrap_server:
            raise click.UsageError("give --zookeeper, or --bootstrap-server to watch only the "
                                   "groups on Kafka's group coordinator")
        if not (kafka_groups and kafka_offsets):
            raise click.UsageError("without --zookeeper only the groups on Kafka's group "
                                   "coordinator are watched: --no-kafka-groups and "
                                   "--no-kafka-offsets leave nothing")
    settings = ExporterSettings(interval, WindowRules(window_samples, interval * window_samples),
                                cluster_name, kafka_offsets, kafka_groups, group_regex)
    with stop_on_signals() as stop_requested, ExitStack() as opened:
        groups: GroupsCache | NoZookeeper
        if zookeeper_connect:
            config = admin_config(zookeeper_connect, properties)
            client_options = kafka_client_options(config.kafka_client_properties)
            zk = connect_for(config.zookeeper)
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
        reads = ClusterReads(access, topics, client_options)
        opened.callback(_quietly, reads.close)
        service = LagExporter(groups, reads, settings)
        # Listening first: a port in use is said at once, not after loading /consumers.
        server = MetricsServer(host, port, service.registry, service.health, service.route)
        opened.callback(_quietly, server.stop)
        if groups.start(CACHE_LOAD_TIMEOUT_S, stop_requested):
            service.start()
            opened.callback(_quietly, service.stop)
            log.info("exporting group lag", zookeeper=zookeeper_connect or "none",
                     interval_s=interval, window_s=settings.rules.span_s,
                     groups=group_regex or "all")
            stop_requested.wait()
    log.info("exporter stopped")


def _check_login(access: KafkaAccess, client_options: dict) -> None:
    """A refused Kafka login ends the exporter at start, in one line: no scan could succeed
    with those credentials. Kafka out of reach is only said: it may yet come back, and each
    scan tries again."""
    try:
        checked_options(client_settings(client_options, access.bootstrap_servers,
                                        access.api_version))
    except SaslLoginError:
        raise
    except FetchError as exc:
        log.warning("Kafka cannot be asked yet; every scan tries again", error=str(exc))


def _quietly(close) -> None:
    """Closing goes on past a part that fails to close, so every other one is closed too."""
    try:
        close()
    except Exception as exc:  # noqa: BLE001 - whatever a client raises, the rest still close
        log.warning("closing the exporter", part=getattr(close, "__qualname__", str(close)),
                    error=f"{type(exc).__name__}: {exc}")

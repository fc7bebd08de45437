"""The Docker Compose demo's monitoring files, checked without Docker: the compose file parses,
Prometheus scrapes the worker and the exporter where they listen, Grafana's provisioning points
at that Prometheus, and every metric the dashboard queries is one zkconsumer publishes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from zkconsumer.exporter.notice_body import BodyTemplate
from zkconsumer.exporter.notice_rules import NoticeRules
from zkconsumer.exporter.notifier import Notifier, NotifySettings
from zkconsumer.exporter.prometheus_view import group_families
from zkconsumer.exporter.service import ExporterSettings, LagExporter
from zkconsumer.lag.status import WindowRules
from zkconsumer.metrics.member_metrics import MemberMetrics

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
COMPOSE_DIR = ROOT / "scripts" / "compose"
PROMETHEUS_CONFIG = COMPOSE_DIR / "prometheus.yml"
ALERT_RULES = COMPOSE_DIR / "prometheus-alerts.yml"
GRAFANA = COMPOSE_DIR / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "zkconsumer.json"

METRIC_NAME = re.compile(r"\b(?:zkconsumer|kafka_consumergroupzookeeper)_[a-zA-Z0-9_]+")


def _services() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def _scrape_targets() -> dict[str, list[str]]:
    """job name -> targets of the compose Prometheus config."""
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    return {job["job_name"]: [t for static in job["static_configs"] for t in static["targets"]]
            for job in config["scrape_configs"]}


def _series_names(registry) -> set[str]:
    """The series names a registry can produce: a counter's `_total` (and `_created`), a
    histogram's `_bucket`, `_sum`, `_count`, a gauge's own name."""
    suffixes = {"counter": ("_total", "_created"), "gauge": ("",),
                "histogram": ("_bucket", "_sum", "_count", "_created")}
    return {family.name + suffix for family in registry.collect()
            for suffix in suffixes[family.type]}


def _worker_metric_names() -> set[str]:
    return _series_names(MemberMetrics().registry)


def _exporter_metric_names() -> set[str]:
    """The exporter's group families, its own health and its notifier's counter."""
    exporter = LagExporter(None, None, ExporterSettings(30, WindowRules(10, 300)))
    notifier = Notifier(NotifySettings("http://receiver/", BodyTemplate("", json_escaped=False),
                                       NoticeRules()))
    exporter.registry.register(notifier.notifications)
    return _series_names(exporter.registry) | {family.name for family in group_families([])}


def _dashboard_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"]
             for target in panel.get("targets", ())]
    exprs += [variable["definition"] for variable in dashboard["templating"]["list"]]
    return exprs


def test_the_compose_file_parses_and_runs_the_worker_and_the_exporter_with_metrics():
    services = _services()
    assert {"zookeeper", "kafka", "worker", "exporter", "prometheus", "grafana"} <= set(services)
    worker, exporter = services["worker"]["command"], services["exporter"]["command"]
    assert "--metrics-port 9400 --metrics-host 0.0.0.0" in worker
    assert "zkconsumer exporter --zookeeper zookeeper:2181 --port 9308 --host 0.0.0.0" in exporter
    for command in (worker, exporter):  # folded into one line: sh reads no stray line breaks
        assert "\n" not in command.strip()
    # Both share the broker's network (its advertised address is localhost:9092 there), so
    # their metrics ports are published on the kafka service.
    assert services["worker"]["network_mode"] == services["exporter"]["network_mode"] \
        == "service:kafka"
    assert {"9400:9400", "9308:9308"} <= set(services["kafka"]["ports"])
    mounts = services["prometheus"]["volumes"] + services["grafana"]["volumes"]
    for mount in mounts:
        assert (ROOT / mount.split(":")[0]).exists(), mount


def test_prometheus_scrapes_the_worker_and_the_exporter_at_the_kafka_host():
    assert _scrape_targets() == {"worker": ["kafka:9400"], "exporter": ["kafka:9308"]}


def test_grafana_is_provisioned_with_that_prometheus_and_the_dashboard_uses_it():
    datasource = (GRAFANA / "datasources" / "prometheus.yml").read_text()
    assert "url: http://prometheus:9090" in datasource
    uid = re.search(r"^\s*uid:\s*(\S+)", datasource, re.MULTILINE).group(1)
    provider = (GRAFANA / "dashboards" / "zkconsumer.yml").read_text()
    assert "path: /etc/grafana/provisioning/dashboards" in provider
    dashboard = json.loads(DASHBOARD.read_text())
    sources = [panel["datasource"] for panel in dashboard["panels"] if "datasource" in panel]
    sources += [target["datasource"] for panel in dashboard["panels"]
                for target in panel.get("targets", ())]
    sources += [variable["datasource"] for variable in dashboard["templating"]["list"]]
    assert sources and all(source == {"type": "prometheus", "uid": uid} for source in sources)
    assert {v["name"] for v in dashboard["templating"]["list"]} >= {"group"}
    assert yaml.safe_load(datasource)["datasources"][0]["uid"] == uid
    assert yaml.safe_load(provider)["providers"][0]["type"] == "file"


def test_every_metric_the_dashboard_queries_is_published():
    known = _worker_metric_names() | {family.name for family in group_families([])}
    used = {name for expr in _dashboard_exprs() for name in METRIC_NAME.findall(expr)}
    assert used, "no metric found in the dashboard"
    assert used - known == set()
    # The exporter's group panels and the workers' panels are both there.
    assert {"zkconsumer_group_lag", "zkconsumer_group_total_lag", "zkconsumer_group_status",
            "zkconsumer_partition_owned", "zkconsumer_messages_consumed_total",
            "zkconsumer_rebalance_duration_seconds_bucket", "zkconsumer_commits_total"} <= used


def test_prometheus_loads_the_alert_rules_and_they_use_only_published_metrics():
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    mounts = dict(mount.removesuffix(":ro").split(":")
                  for mount in _services()["prometheus"]["volumes"])
    assert config["rule_files"] == [mounts[f"./{ALERT_RULES.relative_to(ROOT).as_posix()}"]]
    rules = [rule for group in yaml.safe_load(ALERT_RULES.read_text())["groups"]
             for rule in group["rules"]]
    used = {name for rule in rules for name in METRIC_NAME.findall(rule["expr"])}
    assert used - _exporter_metric_names() == set()
    assert {"zkconsumer_group_status", "zkconsumer_group_total_lag", "zkconsumer_partition_owned",
            "zkconsumer_exporter_scans_total"} <= used

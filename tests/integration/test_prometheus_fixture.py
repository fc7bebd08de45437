"""The Prometheus test server itself: it scrapes a registry served in this process, answers
PromQL with what it scraped, and says which target is down and why.

Needs no cluster, only Debian's `prometheus` package (fetched once into the download cache);
skipped with the reason when that cannot be had."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Gauge, start_http_server
from support.prometheus import PrometheusError, start_prometheus
from support.waiting import wait_until

from zkconsumer.localcluster.processes import free_port


@pytest.fixture
def served_registry():
    """A registry with one gauge, served over HTTP on a free loopback port: (registry, port)."""
    registry = CollectorRegistry()
    Gauge("zkconsumer_fixture_probe", "A value for Prometheus to scrape.", ["kind"],
          registry=registry).labels("probe").set(42.5)
    for _ in range(3):  # the free port may be taken before we bind it
        port = free_port()
        try:
            server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
            break
        except OSError:
            continue
    else:
        pytest.fail("no free port for the metrics server")
    yield registry, port
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_prometheus_scrapes_a_served_registry_and_answers_promql(
        prometheus_binary, served_registry, work_root):
    _, port = served_registry
    prometheus = start_prometheus(work_root / "prometheus", prometheus_binary,
                                  {"probe": f"127.0.0.1:{port}"})
    try:
        prometheus.wait_for_targets_up(timeout=30)
        (sample,) = prometheus.wait_for('zkconsumer_fixture_probe{job="probe"}')
        assert sample["metric"]["kind"] == "probe"
        assert sample["metric"]["instance"] == f"127.0.0.1:{port}"
        assert float(sample["value"][1]) == 42.5
        ((_, total),) = [s["value"] for s in prometheus.query("sum(zkconsumer_fixture_probe)")]
        assert float(total) == 42.5
        with pytest.raises(PrometheusError, match="bad_data"):
            prometheus.query("sum(")
    finally:
        prometheus.stop()
    assert prometheus.process.poll() is not None


def test_targets_not_up_are_named_with_their_scrape_error(prometheus_binary, work_root):
    nothing = free_port()  # nobody listens there
    prometheus = start_prometheus(work_root / "prometheus", prometheus_binary,
                                  {"absent": f"127.0.0.1:{nothing}"})
    try:
        wait_until(lambda: [t for t in prometheus.api("/api/v1/targets")["activeTargets"]
                            if t["health"] == "down"], timeout=30, message="a failed scrape")
        with pytest.raises(AssertionError, match=rf"absent http://127\.0\.0\.1:{nothing}/metrics"
                                                 r": down \(.*connection refused"):
            prometheus.wait_for_targets_up(timeout=0.5)
    finally:
        prometheus.stop()


def test_a_start_on_a_taken_port_is_retried_on_another(prometheus_binary, work_root,
                                                       monkeypatch):
    import support.servers

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        ports = iter([busy])
        monkeypatch.setattr(support.servers, "free_port", lambda: next(ports, 0) or free_port())
        prometheus = start_prometheus(work_root / "prometheus", prometheus_binary, {})
    try:
        assert prometheus.port != busy
        assert prometheus.log.name == "prometheus-1.log"
        assert "address already in use" in (prometheus.work_dir / "prometheus-0.log").read_text()
    finally:
        prometheus.stop()


def test_the_compose_dashboard_queries_are_valid_promql(prometheus_binary, work_root):
    dashboard = Path(__file__).resolve().parents[2] / "scripts/compose/grafana/dashboards"
    exprs = [target["expr"]
             for panel in json.loads((dashboard / "zkconsumer.json").read_text())["panels"]
             for target in panel.get("targets", ())]
    assert exprs
    prometheus = start_prometheus(work_root / "prometheus", prometheus_binary, {})
    try:
        for expr in exprs:  # Grafana's variables as "All" would expand them
            promql = (expr.replace("$__rate_interval", "1m").replace("$group", ".*")
                      .replace("$instance", ".*"))
            assert "$" not in promql
            prometheus.query(promql)  # PrometheusError on a syntax or type error
    finally:
        prometheus.stop()

"""The exporter's own page in a real browser: Debian's chromium, driven headless by Playwright,
reading what the exporter serves of scripted groups on the real cluster (OK, WARN, STALL, STOP,
one on Kafka's coordinator, one fenced mid-cutover), as a person would read it.

Screenshots of both pages are kept in the test's tmp dir (`exporter-index.png`,
`exporter-group.png`); the test prints where.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from click.testing import CliRunner
from support.coordinator_members import member_at
from support.kafka import produce
from support.legacy_groups import kafka_version_args, register_member, write_offsets
from support.waiting import wait_until

from zkconsumer.cli import cli
from zkconsumer.exporter.kafka_reads import ClusterReads
from zkconsumer.exporter.service import ExporterSettings, LagExporter
from zkconsumer.exporter.zk_groups import GroupsCache
from zkconsumer.fetch import KafkaAccess
from zkconsumer.lag.status import WindowRules
from zkconsumer.metrics import MetricsServer
from zkconsumer.topology import open_topic_source
from zkconsumer.znodes.fence import Fence
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration

CHROMIUM = "/usr/bin/chromium"
# Nothing of the browser's own talks to the network: the page is all it loads.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@pytest.fixture
def browser_page(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("Debian's chromium package is not installed (scripts/test installs it)")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 900})
        try:
            yield context.new_page()
        finally:
            context.close()


def describe(cluster, group: str) -> dict:
    result = CliRunner().invoke(cli, ["group", "describe", "--group", group, "--json",
                                      "--zookeeper", cluster.zookeeper_connect,
                                      *kafka_version_args(cluster)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_the_page_shows_every_groups_status_place_fence_chart_and_partitions(
        cluster, zk, topic_factory, unique_name, members, browser_page, tmp_path):
    page = browser_page
    topic, moving = topic_factory(partitions=1), topic_factory(partitions=1)
    produce(cluster, topic, [b"x"] * 20, partitions=1)
    produce(cluster, moving, [b"y"] * 4, partitions=1)
    prefix = unique_name("page")
    ok, warned, stalled, stopped, on_kafka, fenced = (
        f"{prefix}-{kind}" for kind in ("ok", "warn", "stall", "stop", "kafka", "fenced"))
    healthy = members(ok, topics={topic: 1}, **{"auto.commit.interval.ms": "200"})
    wait_until(lambda: len(healthy.values()) == 20, timeout=60, message="the OK member")
    write_offsets(zk, stopped, topic, {0: 5})
    write_offsets(zk, stalled, topic, {0: 7})
    register_member(zk, stalled, topic, owned=[0])
    write_offsets(zk, fenced, topic, {0: 20})  # caught up, and on its way to Kafka
    fence = Fence("kafka", "draining", int(time.time() * 1000))
    zk.create(GroupPaths(fenced).fence, fence.encode())

    groups = GroupsCache(zk, f"{prefix}-.*")
    groups.start(60)
    reads = ClusterReads(KafkaAccess(cluster.bootstrap_servers, cluster.kafka_api_version),
                         open_topic_source(zk, None, cluster.kafka_api_version, {}), {})
    exporter = LagExporter(groups, reads, ExporterSettings(
        1.0, WindowRules(3, 3.0), kafka_groups=True, group_regex=f"{prefix}-.*"),
        fences=groups.fences)
    server = MetricsServer("127.0.0.1", 0, exporter.registry, exporter.health, exporter.route)
    base = f"http://127.0.0.1:{server.port}"
    try:
        with member_at(cluster.bootstrap_servers, cluster.kafka_api_version, on_kafka, topic, 6):
            # The silent groups turn STOP and STALL once the window (3 s) has passed ...
            wait_until(lambda: exporter.scan_once() and {
                name: r.status.name for name, r in exporter.reports().items()} == {
                ok: "OK", stalled: "STALL", stopped: "STOP", on_kafka: "STALL", fenced: "OK"},
                timeout=60, interval=1.0, message="STOP and STALL")
            # ... then three scans where the warned group's consumer moves 1 as 2 arrive.
            for step in range(1, 4):
                write_offsets(zk, warned, moving, {0: 1 + step})
                produce(cluster, moving, [b"y", b"y"], partitions=1)
                wait_until(lambda written=1 + step: _offset_in(groups, warned) == written,
                           timeout=20, message="the write in the cache")
                assert exporter.scan_once()
            statuses = {name: r.status.name for name, r in exporter.reports().items()}
            assert statuses == {ok: "OK", warned: "WARN", stalled: "STALL", stopped: "STOP",
                                on_kafka: "STALL", fenced: "OK"}

            page.goto(f"{base}/")
            shown = _rows(page)
            assert [row["group"] for row in shown[:4]] == sorted(
                [stalled, on_kafka], key=lambda g: -exporter.reports()[g].total_lag
            ) + [stopped, warned]  # worst first; then OK
            by_name = {row["group"]: row for row in shown}
            assert {name: row["status"] for name, row in by_name.items()} == statuses
            assert by_name[on_kafka]["members_on"] == "Kafka"
            assert by_name[on_kafka]["offsets_in"] == "Kafka"
            assert by_name[stalled]["members_on"] == "ZooKeeper"
            assert by_name[stalled]["offsets_in"] == "ZooKeeper"
            assert by_name[stopped]["members_on"] == "none"
            assert by_name[fenced]["fence"].startswith("draining → Kafka's coordinator since")
            assert by_name[ok]["fence"] == "none"
            # The chart: a dot per scan of the window, at the lags Burrow's JSON gives.
            window = json.loads(exporter.route(f"/v3/kafka/local/consumer/{warned}").body)
            lags = [o["lag"] for o in window["topics"][moving][0]["offsets"] if o]
            chart = page.locator(f'tr[data-group="{warned}"] svg.chart')
            assert chart.get_attribute("data-lags") == " ".join(map(str, lags))
            assert chart.locator("circle").count() == len(lags) == 3
            page.screenshot(path=str(tmp_path / "exporter-index.png"), full_page=True)

            # The filter, as one types and picks: no reload, only the rows change.
            page.evaluate("window.notReloaded = true")
            page.fill("input[name=q]", f"{prefix}-st")
            wait_until(lambda: {r["group"] for r in _rows(page)} == {stalled, stopped},
                       timeout=10, message="the name filter")
            page.select_option("select[name=status]", "STOP")
            wait_until(lambda: [r["group"] for r in _rows(page)] == [stopped], timeout=10,
                       message="the status filter")
            assert page.evaluate("window.notReloaded") is True
            assert "-st&" in page.url and "status=STOP" in page.url

            # A group's page: its partitions as `group describe` prints them.
            for group in (stalled, on_kafka):
                page.goto(f"{base}/")
                page.click(f'tr[data-group="{group}"] td.name a')
                page.wait_for_selector("table.partitions")
                described = describe(cluster, group)
                expected = {(p["topic"], p["partition"]): (p["owner"] or "nobody", str(p["lag"]))
                            for p in described["partitions"]}
                assert _partition_rows(page) == expected
                assert page.inner_text("dd.fact-status") == "STALL"
            assert page.locator('a.json[href$="/lag"]').count() == 1
            lag_json = page.locator('a.json[href$="/lag"]').get_attribute("href")
            assert json.loads(exporter.route(lag_json).body)["status"]["group"] == on_kafka
            page.goto(f"{base}/group/{stalled}")
            assert "first seen" in page.inner_text("table.changes")
            page.screenshot(path=str(tmp_path / "exporter-group.png"), full_page=True)
            print(f"screenshots: {tmp_path}/exporter-index.png, {tmp_path}/exporter-group.png")
    finally:
        server.stop()
        reads.close()
        groups.close()


def _offset_in(groups: GroupsCache, group: str) -> int | None:
    state = next((s for s in groups.groups() if s.name == group), None)
    offsets = {} if state is None else state.zookeeper_offsets
    return next((o.offset for o in offsets.values()), None)


def _rows(page) -> list[dict]:
    """Each row of the list as a person reads it."""
    return page.eval_on_selector_all("table.groups tbody tr", """rows => rows.map(row => ({
        group: row.querySelector('td.name').innerText,
        status: row.querySelector('td .status').innerText,
        members_on: row.querySelector('td.members-on').innerText,
        offsets_in: row.querySelector('td.offsets-in').innerText,
        fence: row.querySelector('td.fence').innerText}))""")


def _partition_rows(page) -> dict:
    found = page.eval_on_selector_all("table.partitions tbody tr", """rows => rows.map(row => [
        row.cells[0].innerText, row.cells[1].innerText, row.querySelector('td.owner').innerText,
        row.querySelector('td.lag').innerText])""")
    return {(topic, int(number)): (owner, lag) for topic, number, owner, lag in found}

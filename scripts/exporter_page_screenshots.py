"""The manual's pictures of the exporter's page (docs/lag/page.md): docs/exporter-page.png and
docs/exporter-group-page.png; run by hand, not part of the suite:

    python scripts/exporter_page_screenshots.py [--out docs]

Seven scripted groups (one in each status, one on Kafka's group coordinator, one draining for its
cutover) go through ten scans, 30 s apart on a made-up clock, of the exporter's own scan, window
history, service, HTTP server and page; Debian's chromium (through Playwright, as the page's test
drives it) photographs `/` and one group's page. No cluster is needed: only what ZooKeeper and the
brokers would have answered is made up.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from zkconsumer.exporter.service import ExporterSettings, LagExporter
from zkconsumer.lag.history import OffsetHistory
from zkconsumer.lag.report import GroupState, ScanInputs, ZookeeperOffset, scan
from zkconsumer.lag.status import WindowRules
from zkconsumer.metrics import MetricsServer
from zkconsumer.model import TopicPartition
from zkconsumer.znodes.consumers import ConsumerRegistration
from zkconsumer.znodes.fence import Fence

START = 1_800_000_000.0
INTERVAL_S = 30.0
SCANS = 10
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
COORDINATOR_MEMBER = "consumer-1-8c1d7e2a-3b5f-4c61-9e0a-2f4b6d8a1c3e"


class _Cluster:
    """What ZooKeeper and the brokers hold at scan `step`."""

    def __init__(self) -> None:
        self.step = 0
        self._states: list[GroupState] = []
        self._layout: dict[str, list[TopicPartition]] = {}
        self._ends: dict[TopicPartition, int] = {}

    def inputs(self, now: float) -> ScanInputs:
        i = self.step
        self._states, self._layout, self._ends = [], {}, {}
        self._add("orders-indexer", "orders", [1000 + 400 * i - 5 * p - 7 * (i % 3)
                                               for p in range(3)],
                  lambda p: 1010 + 400 * i, now - 2, host="ip-10-0-1-12")  # keeps up
        self._add("billing-sync", "invoices", [500 + 60 * i, 520 + 55 * i],
                  lambda p: 600 + 110 * i + 20 * p, now - 3, host="ip-10-0-2-40")  # half
        self._add("search-feed", "listings", [7200, 7310, 7105, 7422],
                  lambda p: 7500 + 35 * i + 7 * p, START - 900, host="ip-10-0-3-17")  # hung
        self._add("audit-archiver", "audit", [3000, 2950], lambda p: 3400 + 12 * i,
                  START - 1200)  # nobody left
        self._add("clickstream-enricher", "clicks", [20000, 20000], lambda p: 20000,
                  START - 60)  # drained for its cutover
        self._add("reports-builder", "reports", [4000 + 20 * i if i < 8 else 3000],
                  lambda p: 4100 + 20 * i, now - 5, host="ip-10-0-4-8")  # reset back
        payments = [TopicPartition("payments", p) for p in range(2)]
        self._states.append(GroupState("payments-ledger", owners=dict.fromkeys(
            payments, COORDINATOR_MEMBER), coordinator_members=(COORDINATOR_MEMBER,)))
        self._layout["payments-ledger"] = payments
        self._ends.update(dict.fromkeys(payments, 9000 + 150 * i))
        kafka = {"payments-ledger": dict.fromkeys(payments, 9000 + 150 * i - 30 * bool(i % 3))}
        return ScanInputs(self._states, self._layout, self._ends, kafka)

    def _add(self, group: str, topic: str, offsets: list[int], log_end, written: float,
             host: str | None = None) -> None:
        partitions = [TopicPartition(topic, p) for p in range(len(offsets))]
        members, owners = {}, {}
        if host is not None:
            consumer_id = f"{group}_{host}-1799990000000-4f2a9c1e"
            members[consumer_id] = ConsumerRegistration.static({topic: 1}, 0)
            owners = dict.fromkeys(partitions, f"{consumer_id}-0")
        self._states.append(GroupState(group, members, owners, {
            tp: ZookeeperOffset(offset, written) for tp, offset in zip(partitions, offsets,
                                                                      strict=True)}))
        self._layout[group] = partitions
        self._ends.update({tp: log_end(tp.partition) for tp in partitions})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    clock = [START]
    cluster = _Cluster()
    history = OffsetHistory(WindowRules(SCANS, INTERVAL_S * SCANS))
    fence = Fence("kafka", "draining", int((START + 170) * 1000))
    exporter = LagExporter(None, None, ExporterSettings(INTERVAL_S, history.rules),
                           clock=lambda: clock[0],
                           fences=lambda: {"clickstream-enricher": fence})
    exporter._scan = lambda now: scan(cluster.inputs(now), history, now)  # type: ignore[method-assign]
    for step in range(SCANS):
        cluster.step = step
        assert exporter.scan_once()
        clock[0] += INTERVAL_S
    clock[0] -= INTERVAL_S - 2  # the page is read 2 s after the last scan
    server = MetricsServer("127.0.0.1", 0, exporter.registry, exporter.health, exporter.route)
    try:
        with sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
            browser = playwright.chromium.launch_persistent_context(
                profile, executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS,
                viewport={"width": 1280, "height": 700})
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.port}/")
            page.screenshot(path=str(args.out / "exporter-page.png"), full_page=True)
            page.goto(f"http://127.0.0.1:{server.port}/group/search-feed")
            page.set_viewport_size({"width": 1280, "height": 1010})  # down to the JSON paths
            page.screenshot(path=str(args.out / "exporter-group-page.png"))
            browser.close()
    finally:
        server.stop()
    print({group: report.status.name for group, report in sorted(exporter.reports().items())})


if __name__ == "__main__":
    main()

"""A short run of scripts/fault_run.py: every fault kind once (worker deaths, broker and
ZooKeeper restarts, a member cut off from ZooKeeper, a Kafka offset-store outage during a
rebalance, a failing rebalance callback, a restart before a reset partition got any message),
every invariant held, nothing lost."""

from __future__ import annotations

import pytest
from support.fault_runner import load_runner, report_rows
from support.java import require_java

from zkconsumer.localcluster.ensemble import package_available

pytestmark = pytest.mark.integration


def test_every_fault_kind_is_survived_without_loss_or_double_ownership(capsys, tmp_path):
    require_java()
    runner = load_runner()
    code = runner.main(["--rounds", str(len(runner.FAULTS)), "--seed", "5", "--min-gap", "1.5",
                        "--max-gap", "3", "--rate", "150", "--keep", str(tmp_path)])
    report = capsys.readouterr().out
    rows = report_rows(report)
    assert all(int(rows[f"faults: {kind}"]) >= 1 for kind in runner.FAULTS), report
    assert int(rows["messages produced"]) > 0
    assert rows["lost"] == "0" and rows["invariant violations"] == "0", report
    assert code == 0, report


def test_every_zookeeper_ensemble_fault_is_survived_by_the_runners_workers(capsys, tmp_path):
    """The ensemble's faults (leader killed, quorum lost, rolling restart, a crash followed by
    a leader failover) with the group on a 3-server ensemble, through the same runner."""
    require_java()
    if not package_available():
        pytest.skip("Debian's zookeeper package is not installed (scripts/test installs it)")
    runner = load_runner()
    kinds = runner.ENSEMBLE_FAULTS
    code = runner.main(["--rounds", str(len(kinds)), "--seed", "23", "--zookeepers", "3",
                        "--kinds", ",".join(kinds), "--min-gap", "1.5", "--max-gap", "3",
                        "--rate", "150", "--keep", str(tmp_path)])
    report = capsys.readouterr().out
    rows = report_rows(report)
    assert all(int(rows[f"faults: {kind}"]) >= 1 for kind in kinds), report
    assert rows["lost"] == "0" and rows["invariant violations"] == "0", report
    assert code == 0, report

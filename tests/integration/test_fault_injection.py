"""A short run of scripts/fault_run.py: every fault kind once (worker deaths, broker and
ZooKeeper restarts, a member cut off from ZooKeeper, a Kafka offset-store outage during a
rebalance, a failing rebalance callback, a restart before a reset partition got any message, a
slow handler through a rebalance, the group cut over to Kafka's coordinator and back by the
command), every invariant held, nothing lost, no partition delivered by two workers at once;
the same for a group on Kafka's group coordinator (but the cutover). The long runs the
issue asks for (100 rounds and more) are marked `long`."""

from __future__ import annotations

import pytest
from support.fault_runner import load_runner, report_rows
from support.java import require_java

from zkconsumer.localcluster.ensemble import package_available

pytestmark = pytest.mark.integration

# Between two faults of the default run's single rounds: each kind waits for the group to
# settle before it returns, so the gap only spreads the faults over the producer's stream.
SHORT_GAPS = ("--min-gap", "0.5", "--max-gap", "1")


def test_every_fault_kind_is_survived_without_loss_or_double_ownership(capsys, tmp_path):
    require_java()
    runner = load_runner()
    code = runner.main(["--rounds", str(len(runner.FAULTS)), "--seed", "5", *SHORT_GAPS,
                        "--rate", "150", "--keep", str(tmp_path)])
    report = capsys.readouterr().out
    rows = report_rows(report)
    assert all(int(rows[f"faults: {kind}"]) >= 1 for kind in runner.FAULTS), report
    assert int(rows["messages produced"]) > 0
    assert rows["deliveries of a partition by two workers at once"] == "0", report
    assert rows["lost"] == "0" and rows["invariant violations"] == "0", report
    assert code == 0, report


def test_every_fault_kind_on_kafkas_group_coordinator_is_survived_without_overlap(
        capsys, tmp_path):
    """Workers with group.coordination=kafka: SIGKILL, SIGTERM, a member frozen past its
    session, the coordinator's broker and the brokers' ZooKeeper restarted, every broker down
    while a member leaves, a failing callback, a slow handler through a rebalance."""
    require_java()
    runner = load_runner()
    kinds = runner.available_kinds(1, 1, "kafka")
    code = runner.main(["--coordination", "kafka", "--rounds", str(len(kinds)), "--seed", "3",
                        *SHORT_GAPS, "--rate", "150",
                        "--keep", str(tmp_path)])
    report = capsys.readouterr().out
    rows = report_rows(report)
    assert all(int(rows[f"faults: {kind}"]) >= 1 for kind in kinds), report
    assert rows["coordination"] == "kafka"
    assert rows["deliveries of a partition by two workers at once"] == "0", report
    assert rows["lost"] == "0" and rows["invariant violations"] == "0", report
    assert code == 0, report


@pytest.mark.long
@pytest.mark.parametrize("coordination", ["zookeeper", "kafka"])
def test_a_hundred_rounds_on_three_brokers_lose_nothing_and_never_overlap(
        capsys, tmp_path, coordination):
    """Every kind the coordination allows on replicated brokers, 100 rounds (about 15-25
    minutes each): `scripts/test -m long`."""
    require_java()
    runner = load_runner()
    code = runner.main(["--coordination", coordination, "--brokers", "3", "--rounds", "100",
                        "--seed", "11", "--max-seconds", "3600", "--keep", str(tmp_path)])
    report = capsys.readouterr().out
    rows = report_rows(report)
    assert int(rows["rounds"]) >= 100, report
    assert rows["deliveries of a partition by two workers at once"] == "0", report
    assert rows["lost"] == "0" and rows["invariant violations"] == "0", report
    assert code == 0, report


@pytest.mark.long
def test_every_zookeeper_ensemble_fault_is_survived_by_the_runners_workers(capsys, tmp_path):
    """The ensemble's faults (leader killed, quorum lost, rolling restart, a crash followed by
    a leader failover) with the group on a 3-server ensemble, through the same runner."""
    require_java()
    if not package_available():
        pytest.skip("Debian's zookeeper package is not installed (scripts/test installs it)")
    runner = load_runner()
    kinds = runner.ENSEMBLE_FAULTS
    code = runner.main(["--rounds", str(len(kinds)), "--seed", "23", "--zookeepers", "3",
                        "--kinds", ",".join(kinds), "--min-gap", "1", "--max-gap", "2",
                        "--rate", "150", "--keep", str(tmp_path)])
    report = capsys.readouterr().out
    rows = report_rows(report)
    assert all(int(rows[f"faults: {kind}"]) >= 1 for kind in kinds), report
    assert rows["lost"] == "0" and rows["invariant violations"] == "0", report
    assert code == 0, report

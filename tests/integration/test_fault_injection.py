"""A short run of scripts/fault_run.py: every fault kind once (worker deaths, broker and
ZooKeeper restarts, a member cut off from ZooKeeper, a Kafka offset-store outage during a
rebalance, a failing rebalance callback, a restart before a reset partition got any message),
every invariant held, nothing lost."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from support.java import require_java

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fault_run.py"


def _load_runner():
    spec = importlib.util.spec_from_file_location("fault_run", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_fault_kind_is_survived_without_loss_or_double_ownership(capsys, tmp_path):
    require_java()
    runner = _load_runner()
    code = runner.main(["--rounds", str(len(runner.FAULTS)), "--seed", "5", "--min-gap", "1.5",
                        "--max-gap", "3", "--rate", "150", "--keep", str(tmp_path)])
    report = capsys.readouterr().out
    rows = dict(re.findall(r"^(.+?)\s{2,}(.+)$", report, re.MULTILINE))
    assert all(int(rows[f"faults: {kind}"]) >= 1 for kind in runner.FAULTS), report
    assert int(rows["messages produced"]) > 0
    assert rows["lost"] == "0" and rows["invariant violations"] == "0", report
    assert code == 0, report

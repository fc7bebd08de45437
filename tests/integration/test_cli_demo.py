"""`zkconsumer demo`, what `scripts/run` does with nothing configured: a real worker on a
throw-away local cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.java import require_java

pytestmark = pytest.mark.integration


def test_demo_consumes_its_topic_as_a_group_member_and_cleans_up(tmp_path):
    require_java()
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "zkconsumer", "demo", "--messages", "30", "--max-messages", "30"],
        capture_output=True, text=True, timeout=240, check=False,
        env={**os.environ, "TMPDIR": str(env_tmp)})
    assert result.returncode == 0, result.stderr[-3000:]
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == 30
    assert {r["topic"] for r in records} == {"zkconsumer-demo"}
    assert sorted(r["value"] for r in records) == sorted(f"demo message {n}" for n in range(30))
    assert "consuming zkconsumer-demo as group zkconsumer-demo" in result.stderr
    assert list(env_tmp.iterdir()) == [], "the demo left its cluster's files behind"
    assert _processes_mentioning(str(env_tmp)) == [], "the demo left servers running"


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found

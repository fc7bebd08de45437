"""A newcomer's path from the manual alone: the getting-started page's shell blocks run in order,
in one bash, exactly as the page shows them, on a local cluster of their own (`zkconsumer
cluster start`), with only the exporter's port moved to a free one and the Kafka bundle taken
from the suite's cache. A page whose commands stop working, or that drops a step of the path,
fails here."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.java import require_java

from zkconsumer.localcluster.processes import free_port

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "getting-started.md"
PAGE_EXPORTER_PORT = "9308"

# The newcomer's path, step by step: each must be among the page's commands.
STEPS = {
    "start a cluster": r"^zkconsumer cluster start$",
    "create a topic": r"^zkconsumer cluster create-topic .*--topic orders",
    "produce": r"^zkconsumer cluster produce .*--topic orders",
    "a worker": r"^zkconsumer consume --group orders-audit ",
    "describe the group": r"^zkconsumer group describe --group orders-audit$",
    "the exporter": r"^zkconsumer exporter ",
    "a cutover to Kafka": r"^zkconsumer group cutover --group orders-audit --to kafka --execute$",
    "and back": r"^zkconsumer group cutover --group orders-audit --to zookeeper --execute$",
    "stop the cluster": r"^zkconsumer cluster stop$",
}


def page_blocks() -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```$", PAGE.read_text(), re.DOTALL | re.MULTILINE)


def test_the_page_shows_every_step_of_the_path_and_two_workers():
    commands = "\n".join(page_blocks())
    for step, pattern in STEPS.items():
        assert re.search(pattern, commands, re.MULTILINE), f"the page has no step '{step}'"
    assert len(re.findall(STEPS["a worker"], commands, re.MULTILINE)) == 2


def newcomer_environment(work: Path) -> dict[str, str]:
    """The user's environment: the venv's commands on PATH, none of the developer's ZKCONSUMER_*
    settings but the bundle's cache, the cluster's folder in the test's work folder."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("ZKCONSUMER_")
           or name in ("ZKCONSUMER_CACHE_DIR", "ZKCONSUMER_KAFKA_HOME")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["ZKCONSUMER_CLUSTER_DIR"] = str(work / "cluster")
    return env


def stop_whatever_is_left(shell: subprocess.Popen, env: dict[str, str]) -> None:
    """After a failure midway: the shell's jobs (the workers, the exporter), then the cluster."""
    if shell.poll() is None:
        os.killpg(shell.pid, signal.SIGKILL)
        shell.wait()
    else:
        try:
            os.killpg(shell.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    status = subprocess.run(["zkconsumer", "cluster", "status", "--json"], env=env,
                            capture_output=True, text=True, check=False)
    if status.returncode == 0 and '"running": true' in status.stdout:
        subprocess.run(["zkconsumer", "cluster", "stop"], env=env, capture_output=True,
                       check=False, timeout=60)


def test_the_getting_started_page_runs_as_written(work_root, unique_name):
    require_java()
    work = work_root / unique_name("getting-started")
    work.mkdir()
    env = newcomer_environment(work)
    port = str(free_port())
    script = "\n".join(block.replace(PAGE_EXPORTER_PORT, port) for block in page_blocks())
    shell = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], cwd=work, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
    try:
        output, _ = shell.communicate(timeout=300)
    finally:
        stop_whatever_is_left(shell, env)
    assert shell.returncode == 0, output[-4000:]
    assert "Traceback" not in output, output[-4000:]

    # Two workers in one group delivered every message between them (at least once), each
    # came to own its share (2 of the 4 partitions; the first may have delivered all 100
    # before the second joined), and stopped cleanly.
    delivered = [(work / f"worker-{n}.out").read_text().splitlines() for n in (1, 2)]
    assert set(delivered[0] + delivered[1]) == {f"message {i}" for i in range(100)}
    for n in (1, 2):
        log = (work / f"worker-{n}.log").read_text()
        assert re.search(r"\brebalanced\b.* members=2 .*owned=2\b", log), log[-3000:]
        assert "Traceback" not in log and "[error" not in log, log[-3000:]
    # The exporter served the group's lag, and the cluster is gone at the end.
    assert 'zkconsumer_group_lag{group="orders-audit"' in output
    status = subprocess.run(["zkconsumer", "cluster", "status", "--json"], env=env, cwd=work,
                            capture_output=True, text=True, check=False)
    assert status.returncode != 0 or not any(
        server.get("running") for server in
        [json.loads(status.stdout).get("zookeeper") or {}, *json.loads(status.stdout)["brokers"]])

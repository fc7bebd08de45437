"""What users install is the built wheel or sdist, not this tree: both are built here and
installed in fresh virtual environments (dependencies from the package index, as a user's pip
gets them), and each runs `zkconsumer` against the cluster. The sdist is installed with the C
compiler hidden, as on a machine without one: the optional extensions are skipped and the
Python fallbacks consume the same messages."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from support.kafka import produce

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = [f"message {n}".encode() for n in range(5)]
# Where the installed package came from, and which of its compiled parts it loaded.
PROBE = """
import json, zkconsumer
from zkconsumer.records import columns
from zkconsumer.member import streams
print(json.dumps({"file": zkconsumer.__file__, "compiled_decoder": columns.compiled(),
                  "compiled_cursor": streams._Cursor is not streams._PythonCursor}))
"""


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 600) -> subprocess.CompletedProcess:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout, check=False)
    assert result.returncode == 0, \
        f"{command} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    return result


def _environment(**changes: str) -> dict[str, str]:
    """This process's environment without what would let a child import the work tree."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(changes)
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """The sdist, and the wheel `build` makes from it (so the sdist is known to be complete)."""
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], cwd=out,
         env=_environment())
    return {"wheel": next(out.glob("zkconsumer-*.whl")),
            "sdist": next(out.glob("zkconsumer-*.tar.gz"))}


def _fresh_venv(path: Path) -> Path:
    _run([sys.executable, "-m", "venv", str(path)], cwd=path.parent, env=_environment())
    return path / "bin"


def _probe(bin_dir: Path, env: dict[str, str]) -> dict:
    return json.loads(_run([str(bin_dir / "python"), "-c", PROBE], cwd=bin_dir, env=env).stdout)


def _consume(bin_dir: Path, env: dict[str, str], cluster, topic: str, group: str) -> list[bytes]:
    result = _run([str(bin_dir / "zkconsumer"), "consume",
                   "--zookeeper", cluster.zookeeper_connect, "--group", group, "--topic", topic,
                   "--from-beginning",
                   "--max-messages", str(len(MESSAGES)), "--format", "value"],
                  cwd=bin_dir, env=env, timeout=120)
    return [line.encode() for line in result.stdout.splitlines()]


@pytest.fixture
def topic(cluster, topic_factory) -> str:
    name = topic_factory(partitions=1)
    produce(cluster, name, MESSAGES, partitions=1)
    return name


def test_the_wheel_ships_its_types_and_consumes(dist, tmp_path, cluster, topic, unique_name):
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        assert "zkconsumer/py.typed" in wheel.namelist()
    bin_dir = _fresh_venv(tmp_path / "venv")
    env = _environment()
    _run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(dist["wheel"])],
         cwd=tmp_path, env=env)

    probe = _probe(bin_dir, env)
    assert Path(probe["file"]).is_relative_to(tmp_path / "venv"), probe
    # Built where a C compiler is at hand (scripts/test builds the extensions in the tree too).
    assert probe["compiled_decoder"] and probe["compiled_cursor"], probe
    help_text = _run([str(bin_dir / "zkconsumer"), "--help"], cwd=tmp_path, env=env).stdout
    assert "consume" in help_text
    assert _consume(bin_dir, env, cluster, topic, unique_name("wheel")) == MESSAGES


def test_the_sdist_installs_without_a_compiler_and_consumes_in_python(dist, tmp_path, cluster,
                                                                        topic, unique_name):
    with tarfile.open(dist["sdist"]) as sdist:
        names = sdist.getnames()
    for source in ("zkconsumer/records/_columns.c", "zkconsumer/member/_cursor.c",
                   "zkconsumer/py.typed"):
        assert any(name.endswith(source) for name in names), source
    bin_dir = _fresh_venv(tmp_path / "venv")
    # Nothing on PATH but the venv, and every compiler variable setuptools reads set to fail.
    no_compiler = _environment(PATH=str(bin_dir), CC="/bin/false", CXX="/bin/false",
                               LDSHARED="/bin/false")
    assert shutil.which("gcc", path=no_compiler["PATH"]) is None
    _run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(dist["sdist"])],
         cwd=tmp_path, env=no_compiler)

    probe = _probe(bin_dir, no_compiler)
    assert Path(probe["file"]).is_relative_to(tmp_path / "venv"), probe
    assert not probe["compiled_decoder"] and not probe["compiled_cursor"], probe
    assert _consume(bin_dir, no_compiler, cluster, topic, unique_name("sdist")) == MESSAGES

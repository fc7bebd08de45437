"""A ZooKeeper ensemble for one test, from Debian's zookeeper package; skipped where it is missing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.java import require_java
from zkconsumer.localcluster.ensemble import ZookeeperEnsemble, package_available


@contextlib.contextmanager
def running_ensemble(work_dir: Path, size: int = 3) -> Iterator[ZookeeperEnsemble]:
    require_java()
    if not package_available():
        pytest.skip("Debian's zookeeper package is not installed (scripts/test installs it)")
    ensemble = ZookeeperEnsemble.start(work_dir, size)
    try:
        yield ensemble
    finally:
        ensemble.stop(remove_data=True)

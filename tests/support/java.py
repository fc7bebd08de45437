"""Skipping tests that need the JVM (the local cluster, the reference tools, Spark) when there
is none, with the reason zkconsumer gives users."""

from __future__ import annotations

import pytest

from zkconsumer.localcluster import JavaNotFoundError, find_java


def require_java() -> None:
    try:
        find_java()
    except JavaNotFoundError as exc:
        pytest.skip(str(exc))

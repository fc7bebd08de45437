"""Waiting on conditions instead of sleeping."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(probe: Callable[[], T | None], *, timeout: float, interval: float = 0.2,
               message: str = "condition") -> T:
    """Poll `probe` until it returns something truthy; return it, or fail after `timeout`."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {message}")
        time.sleep(interval)

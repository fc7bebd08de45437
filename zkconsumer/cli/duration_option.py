"""Durations on the command line, written as people write them."""

from __future__ import annotations

import re

import click

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


class Duration(click.ParamType):
    """500ms, 30s, 5m, 1h, or a plain number of seconds."""

    name = "duration"

    def convert(self, value, param, ctx) -> float:
        if isinstance(value, (int, float)):
            seconds = float(value)
        else:
            found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h)?\s*", str(value))
            seconds = float(found.group(1)) * _UNITS[found.group(2) or "s"] if found else 0.0
        if not 0 < seconds < float("inf"):
            self.fail(f"{value!r} is not a duration like 500ms, 30s, 5m or 1h", param, ctx)
        return seconds

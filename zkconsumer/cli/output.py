"""Printing results: aligned tables for people, JSON for scripts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import click


def emit_json(value: object) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=True))


def emit_table(headers: Sequence[str], rows: Iterable[Iterable[object]],
               err: bool = False) -> None:
    cells = [[str(h).upper() for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        padded = (cell.ljust(width) for cell, width in zip(row, widths, strict=False))
        click.echo("  ".join(padded).rstrip(), err=err)

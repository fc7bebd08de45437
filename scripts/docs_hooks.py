"""MkDocs hooks of the manual: the reference tables written from the code they describe.

A page asks for a table with a marker line, `<!-- generated: NAME -->`; the build replaces it
with the table made from the code at build time, so the manual cannot fall behind:

- `configuration-keys`: every key of `zkconsumer.config.keys.KEYS`, its default and its meaning
  (`zkconsumer.config.key_meanings.MEANINGS`); a key without a meaning fails the build.
- `layers`: the packages' layers, from `LAYERS` in tests/unit/test_layering.py (read with ast).
- `member-states`: the ZooKeeper member's transition table, from `zkconsumer.member.state`.

An unknown marker fails the build too (`mkdocs build --strict` or not).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def configuration_keys() -> str:
    from zkconsumer.config.key_meanings import MEANINGS
    from zkconsumer.config.keys import KEYS

    missing = [key.name for key in KEYS if key.name not in MEANINGS]
    unknown = sorted(set(MEANINGS) - {key.name for key in KEYS})
    if missing or unknown:
        raise ValueError(f"key meanings out of step with the key table: no meaning for "
                         f"{missing}, a meaning for unknown {unknown}")
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for key in KEYS:
        if key.required:
            default = "required"
        elif key.derive is not None:
            default = "derived (see meaning)"
        elif key.default is None:
            default = "unset"
        else:
            shown = key.render(key.default)
            default = f"`{_cell(shown)}`" if shown else "empty"
        meaning = MEANINGS[key.name]
        if key.no_effect:
            meaning += f" Accepted, no effect: {key.no_effect}."
        rows.append(f"| `{key.name}` | {default} | {_cell(meaning)} |")
    return "\n".join(rows)


def layer_order() -> list[tuple[str, ...]]:
    """`LAYERS` of tests/unit/test_layering.py, read without importing the test."""
    tree = ast.parse((ROOT / "tests" / "unit" / "test_layering.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.target.id == "LAYERS" and node.value is not None:
            return [tuple(layer) for layer in ast.literal_eval(node.value)]
    raise ValueError("tests/unit/test_layering.py has no LAYERS list")


def layers() -> str:
    rows = ["| layer | units | may import from |", "|---|---|---|"]
    order = layer_order()
    for number in range(len(order), 0, -1):
        units = ", ".join(f"`{unit}`" for unit in order[number - 1])
        allowed = f"layers 1 to {number}" if number > 1 else "layer 1 only"
        rows.append(f"| {number} | {units} | {allowed} |")
    return "\n".join(rows)


def member_states() -> str:
    from zkconsumer.member import state

    transitions: dict[tuple[Any, Any], Any] = state._TRANSITIONS
    ignored: frozenset[tuple[Any, Any]] = state._IGNORED
    states = list(state.State)
    rows = ["| event \\ state | " + " | ".join(f"`{s.value}`" for s in states) + " |",
            "|---|" + "---|" * len(states)]
    for event in state.Event:
        cells = []
        for current in states:
            if (current, event) in transitions:
                after = transitions[(current, event)]
                cells.append("stays" if after is current else f"→ `{after.value}`")
            elif (current, event) in ignored:
                cells.append("ignored")
            else:
                cells.append("defect")
        rows.append(f"| `{event.value}` | " + " | ".join(cells) + " |")
    return "\n".join(rows)


TABLES = {
    "configuration-keys": configuration_keys,
    "layers": layers,
    "member-states": member_states,
}


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    def table(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in TABLES:
            raise ValueError(f"unknown generated table {name!r} (known: {sorted(TABLES)})")
        return TABLES[name]()

    return MARKER.sub(table, markdown)


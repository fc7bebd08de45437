"""zkconsumer's packages form layers: a module imports only from its own layer or those below.

Every import counts, wherever it is written (top of the module, inside a function, under
`if TYPE_CHECKING`): the modules are read with `ast`, never imported. A unit is a subpackage of
zkconsumer (`zkconsumer/zk/`) or a top-level module (`zkconsumer/logs.py`); `zkconsumer` itself
is the package's `__init__`, the public API.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

PACKAGE = Path(__file__).resolve().parents[2] / "zkconsumer"

# Bottom first. A unit may import from its own layer and from any layer below it, never above.
LAYERS: list[tuple[str, ...]] = [
    ("errors", "model", "logs", "properties", "throttled_log", "arrow_records"),
    ("znodes", "assignment", "metrics", "records"),
    ("config", "lag", "kafka"),
    ("zk", "fetch"),
    ("topology", "offsets"),
    ("member",),
    ("admin", "exporter", "spark"),
    ("worker", "aio", "zkconsumer"),
    ("localcluster",),
    ("cli", "__main__"),
    # Test-only helpers sit on top, so nothing that ships can come to depend on them.
    ("testing",),
]

# Cycles between units known and not yet undone; each must still exist (see the test), so the
# entry goes once the cycle does.
KNOWN_CYCLES: set[frozenset[str]] = set()


class Import(NamedTuple):
    path: Path
    line: int
    source: str  # the importing module
    target: str  # the imported module (or the package whose name was imported from it)

    def __str__(self) -> str:
        where = self.path.relative_to(PACKAGE.parent).as_posix()
        return f"{where}:{self.line}: {self.source} imports {self.target}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _imports(module: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, module, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = module.split(".")
                if not is_package:
                    anchor.pop()
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                # `from zkconsumer.records import columns` imports the module records.columns;
                # `from zkconsumer.fetch import FetchError` imports the package fetch.
                name = f"{base}.{alias.name}"
                yield Import(path, node.lineno, module, name if name in modules else base)


def own_imports() -> list[Import]:
    """Every import of one zkconsumer module by another."""
    modules = _modules()
    found = []
    for module, path in modules.items():
        for item in _imports(module, path, modules):
            if item.target == "zkconsumer" or item.target.startswith("zkconsumer."):
                found.append(item)
    return list(dict.fromkeys(found))  # one per name imported: once per module and line


def _layer_of() -> dict[str, int]:
    return {unit: level for level, units in enumerate(LAYERS) for unit in units}


def test_every_unit_has_a_layer_and_every_layer_name_is_a_unit():
    units = {unit_of(module) for module in _modules()}
    placed = set(_layer_of())
    assert not units - placed, f"place these in LAYERS: {sorted(units - placed)}"
    assert not placed - units, f"LAYERS names what zkconsumer does not have: {sorted(placed - units)}"
    assert sum(len(units) for units in LAYERS) == len(placed), "a unit is in two layers"


def test_no_import_runs_up_a_layer():
    layer = _layer_of()
    upward = []
    for item in own_imports():
        source, target = unit_of(item.source), unit_of(item.target)
        if layer.get(target, -1) > layer.get(source, -1):
            upward.append(f"{item} ({source}, layer {layer[source]}, imports {target}, "
                          f"layer {layer[target]})")
    assert not upward, "imports running up the layers:\n" + "\n".join(upward)


def _cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one unit (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for after in sorted(edges.get(node, ())):
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in on_stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_between_units():
    edges: dict[str, set[str]] = {}
    by_edge: dict[tuple[str, str], Import] = {}
    for item in own_imports():
        source, target = unit_of(item.source), unit_of(item.target)
        if source != target:
            edges.setdefault(source, set()).add(target)
            by_edge.setdefault((source, target), item)
    cycles = _cycles(edges)
    new = [cycle for cycle in cycles if cycle not in KNOWN_CYCLES]
    lines = [f"{sorted(cycle)}: " + "; ".join(str(item) for (a, b), item in sorted(by_edge.items())
                                             if a in cycle and b in cycle)
             for cycle in new]
    assert not new, "import cycles between units:\n" + "\n".join(lines)
    gone = KNOWN_CYCLES - set(cycles)
    assert not gone, f"no longer cycles, remove them from KNOWN_CYCLES: {sorted(map(sorted, gone))}"


# The Kafka protocol is sans-I/O: it is told the time and handed bytes, so it never reaches for a
# socket, a selector, TLS, the clock or the connections above it.
SANS_IO = "zkconsumer.kafka.protocol"
IO_MODULES = ("socket", "selectors", "ssl", "time", "zkconsumer.kafka.io")


def test_the_kafka_protocol_does_no_io():
    modules = _modules()
    found = []
    for module, path in modules.items():
        if module != SANS_IO and not module.startswith(SANS_IO + "."):
            continue
        for item in _imports(module, path, modules):
            if any(item.target == name or item.target.startswith(name + ".")
                   for name in IO_MODULES):
                found.append(str(item))
    assert not found, "I/O in the sans-I/O protocol:\n" + "\n".join(found)


def test_the_checks_see_lazy_and_relative_imports(tmp_path):
    """The reader finds an import inside a function and resolves a relative one."""
    package = tmp_path / "zkconsumer" / "zk"
    package.mkdir(parents=True)
    source = package / "group_state.py"
    source.write_text("def read():\n    from ..exporter import report\n"
                      "    import zkconsumer.cli.signals\n")
    modules = {"zkconsumer.exporter.report": source}
    found = [(item.line, item.target) for item in
             _imports("zkconsumer.zk.group_state", source, modules)]
    assert found == [(2, "zkconsumer.exporter.report"), (3, "zkconsumer.cli.signals")]


def test_no_two_modules_import_each_other_directly_or_round_a_loop():
    """Within a unit too: a module never imports one that (through others) imports it back,
    wherever the import is written (inside a function or under `if TYPE_CHECKING` as well)."""
    modules = _modules()
    edges: dict[str, set[str]] = {}
    by_edge: dict[tuple[str, str], Import] = {}
    for item in own_imports():
        target = item.target
        while target not in modules and "." in target:  # a name imported from a module
            target = target.rsplit(".", 1)[0]
        # A package's __init__ is imported with each of its modules: only its own imports
        # count, so a module importing its package's public names is no loop.
        if target != item.source and not item.source.startswith(target + "."):
            edges.setdefault(item.source, set()).add(target)
            by_edge.setdefault((item.source, target), item)
    cycles = _cycles(edges)
    lines = [f"{sorted(cycle)}: " + "; ".join(str(item) for (a, b), item in sorted(by_edge.items())
                                             if a in cycle and b in cycle)
             for cycle in cycles]
    assert not cycles, "modules importing each other:\n" + "\n".join(lines)

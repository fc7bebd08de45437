"""The fuzzing harness: inputs of one target, mutated from its seeds, tried in a worker process
that a parent watches, so that an input which kills the worker (a signal), holds it past a
time limit (a hang) or lets out an exception other than the target's named errors is saved,
and the run goes on with a fresh worker.

A target (`Target`) is the untrusted bytes of one family of parsers: its valid seeds, its
mutations and the entry points an input goes through (`exercise`), which returns a line per
outcome and raises on a finding. The targets are listed in `TARGET_MODULES`; each module gives
its own by name from `targets()`. The worker writes each input, before trying it, to a file mapped in
memory, where the parent finds the one that killed or held it.

    python tests/fuzz/harness.py replay TARGET FILE    # one saved input, in this process

`scripts/fuzz.py` runs targets from the command line; the suite runs each briefly
(`test_input_fuzzing.py`, `test_record_fuzzing.py`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import json
import mmap
import os
import random
import resource
import signal
import struct
import subprocess
import sys
import time
import traceback
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

MAX_INPUT = 1 << 20
SLOT_SIZE = 16 + MAX_INPUT + 1024  # counter, length, then the input
STARTUP_LIMIT = 120.0  # seconds a worker may take to import and make its seeds
TARGET_MODULES = {"records": "record_fuzzing", "sasl": "input_fuzzing",
                  "sasl-tokens": "input_fuzzing",
                  "responses": "input_fuzzing", "znodes": "input_fuzzing",
                  "offset-files": "input_fuzzing", "group-metadata": "input_fuzzing"}


class Target(NamedTuple):
    """One family of parsers of untrusted bytes, as the fuzzer drives it."""

    name: str
    seeds: Callable[[], list[bytes]]
    mutated: Callable[[random.Random, list[bytes]], bytes]
    exercise: Callable[[bytes], list[str]]  # a line per outcome; raises on a finding
    hang_after: float = 1.0  # seconds on one input that count as a hang
    # Address space a worker may take on top of what it holds once started (MemoryError past
    # it, a finding); None for the record decoders, whose sanitizer builds reserve terabytes.
    memory_bound: int | None = 256 << 20


def target(name: str) -> Target:
    if name not in TARGET_MODULES:
        raise ValueError(f"no fuzzing target {name!r}: {', '.join(TARGET_MODULES)}")
    return importlib.import_module(TARGET_MODULES[name]).targets()[name]


class _Slot:
    """The input being tried, in a file mapped in memory: a counter, a length, the bytes."""

    def __init__(self, path: Path, create: bool) -> None:
        if create:
            path.write_bytes(b"\0" * SLOT_SIZE)
        self._file = path.open("r+b")
        self._memory = mmap.mmap(self._file.fileno(), SLOT_SIZE)

    def put(self, number: int, raw: bytes) -> None:
        self._memory[16:16 + len(raw)] = raw
        struct.pack_into(">QQ", self._memory, 0, number, len(raw))

    def current(self) -> tuple[int, bytes]:
        number, length = struct.unpack_from(">QQ", self._memory, 0)
        return number, bytes(self._memory[16:16 + min(length, SLOT_SIZE - 16)])

    def close(self) -> None:
        self._memory.close()
        self._file.close()


class _ExtensionsFrom(importlib.abc.MetaPathFinder):
    """Loads the two C extensions from another build (a sanitizer's) instead of the tree's."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory

    def find_spec(self, name, path=None, target=None):
        if name not in ("zkconsumer.records._columns", "zkconsumer.member._cursor"):
            return None
        built = sorted(self._directory.glob(name.rsplit(".", 1)[1] + ".*.so"))
        if not built:
            raise ImportError(f"no {name} built in {self._directory}")
        return importlib.util.spec_from_file_location(name, built[0])


def _bound_memory(extra: int) -> None:
    """No more address space than the worker holds now plus `extra`."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    limit = pages * os.sysconf("SC_PAGE_SIZE") + extra
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY
                                            else min(limit, hard), hard))


def _work(name: str, seed: int, seconds: float, slot_path: Path, findings: Path,
          extensions: Path | None) -> None:
    if extensions is not None:
        sys.meta_path.insert(0, _ExtensionsFrom(extensions))
    fuzzed = target(name)
    corpus = fuzzed.seeds()
    fuzzed.exercise(corpus[0])  # whatever the entry points import is loaded before the bound
    if fuzzed.memory_bound is not None:
        _bound_memory(fuzzed.memory_bound)
    slot = _Slot(slot_path, create=False)
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    tried = errors = 0
    pending = iter(corpus)
    while time.monotonic() < deadline:
        raw = next(pending, None) or fuzzed.mutated(rng, corpus)[:MAX_INPUT]
        tried += 1
        slot.put(tried, raw)
        try:
            fuzzed.exercise(raw)
        except Exception:  # a finding: saved, and the run goes on
            errors += 1
            _save(findings, "error", raw, traceback.format_exc())
    slot.close()
    print(json.dumps({"inputs": tried, "errors": errors}), flush=True)


def _save(findings: Path, kind: str, raw: bytes, note: str) -> Path:
    findings.mkdir(parents=True, exist_ok=True)
    path = findings / f"{kind}-{zlib.crc32(raw):08x}.bin"
    path.write_bytes(raw)
    path.with_suffix(".txt").write_text(note)
    return path


class Report(NamedTuple):
    inputs: int
    crashes: int  # worker deaths by a signal
    hangs: int  # inputs a worker spent over the hang limit on
    errors: int  # exceptions other than the target's named errors
    findings: list[Path]


def run(name: str, seconds: float, seed: int, findings: Path, *,
        extensions: Path | None = None, env: dict[str, str] | None = None,
        hang_after: float | None = None,
        log: Callable[[str], None] = lambda line: None) -> Report:
    """Fuzz target `name` for `seconds` in worker processes; what kills or holds one is saved
    in `findings` (the input's bytes, with a note) and the run goes on with a fresh worker."""
    hang_after = hang_after if hang_after is not None else target(name).hang_after
    findings.mkdir(parents=True, exist_ok=True)
    earlier = set(findings.glob("error-*.bin"))  # an earlier run's, not this one's
    slot_path = findings / f".slot-{os.getpid()}"
    output_path = findings / f".out-{os.getpid()}"
    errors_path = findings / f".err-{os.getpid()}"
    inputs = crashes = hangs = errors = 0
    saved: list[Path] = []
    deadline = time.monotonic() + seconds
    worker_seed = seed
    try:
        while (left := deadline - time.monotonic()) > 1:
            slot = _Slot(slot_path, create=True)
            with output_path.open("w+") as output, errors_path.open("w+") as error_output:
                worker = subprocess.Popen(
                    [sys.executable, __file__, "work", name, str(worker_seed), str(left),
                     str(slot_path), str(findings), str(extensions or "")],
                    stdout=output, stderr=error_output, env={**os.environ, **(env or {})})
                hung = _watch(worker, slot, hang_after)
                output.seek(0)
                error_output.seek(0)
                stdout, stderr = output.read(), error_output.read()
            if hung:
                hangs += 1
                number, raw = slot.current()
                inputs += number
                saved.append(_save(findings, "hang", raw, f"over {hang_after} s on this input"))
                log(f"hang: input saved as {saved[-1]}")
            elif worker.returncode < 0:
                crashes += 1
                number, raw = slot.current()
                inputs += number
                signal_name = signal.Signals(-worker.returncode).name
                saved.append(_save(findings, f"crash-{signal_name}", raw, stderr[-20000:]))
                log(f"crash ({signal_name}): input saved as {saved[-1]}")
            elif worker.returncode:
                raise RuntimeError(f"the fuzz worker failed:\n{stderr[-5000:]}")
            else:
                counts = json.loads(stdout.strip().splitlines()[-1])
                inputs += counts["inputs"]
                errors += counts["errors"]
            slot.close()
            worker_seed += 1_000_003
    finally:
        for path in (slot_path, output_path, errors_path):
            path.unlink(missing_ok=True)
    saved += sorted(set(findings.glob("error-*.bin")) - earlier)
    return Report(inputs, crashes, hangs, errors, saved)


def _watch(worker: subprocess.Popen, slot: _Slot, hang_after: float) -> bool:
    """Waits for the worker to end; kills it if it spends over `hang_after` seconds on one
    input (or over `STARTUP_LIMIT` before its first, importing and making seeds), and says
    whether it did."""
    seen, since = 0, time.monotonic()
    while True:
        try:
            worker.wait(timeout=min(1.0, hang_after / 4))
            return False
        except subprocess.TimeoutExpired:
            number, _ = slot.current()
            if number != seen:
                seen, since = number, time.monotonic()
            elif time.monotonic() - since > (hang_after if seen else STARTUP_LIMIT):
                worker.kill()
                worker.wait()
                return True


def replay(name: str, raw: bytes) -> list[str]:
    """One input through target `name`, in this process."""
    return target(name).exercise(raw)


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    if command == "work":
        name, seed_text, seconds_text, slot_text, findings_text, extensions_text = arguments
        _work(name, int(seed_text), float(seconds_text), Path(slot_text), Path(findings_text),
              Path(extensions_text) if extensions_text else None)
    elif command == "replay":
        for line in replay(arguments[0], Path(arguments[1]).read_bytes()):
            print(line)

"""Hostile fetch data (issue 24): inputs that once killed the process with a signal, each now a
`CorruptMessageError` in a process that survives it, and a short fuzzing run that must find
nothing (`scripts/fuzz.py` runs it for longer, and under the sanitizers)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import harness
import pytest
import record_fuzzing
from record_fuzzing import Case, hostile_control_batch

from zkconsumer.records import columns

HERE = Path(__file__).parent
REGRESSIONS = sorted((HERE / "regressions").glob("*.bin"))
IN_SUITE_SECONDS = 5


def replayed(case: Case, tmp_path: Path) -> subprocess.CompletedProcess:
    """The case through every decoding path, in a process of its own: a crash there is a
    signal, not the end of the test run."""
    saved = tmp_path / "case.bin"
    saved.write_bytes(case.encoded())
    return subprocess.run([sys.executable, str(HERE / "harness.py"), "replay", "records",
                           str(saved)], capture_output=True, text=True, timeout=120, check=False)


def outcomes_of(result: subprocess.CompletedProcess) -> list[str]:
    assert result.returncode == 0, (
        f"the replay ended with {result.returncode} (a negative code is a signal):\n"
        f"{result.stderr[-3000:]}")
    return result.stdout.splitlines()


def test_a_control_batch_whose_header_key_runs_far_past_it_is_corrupt_and_named(tmp_path):
    """The batch of issue 24, read committed with its producer's transaction aborted: the
    control-marker read went past the buffer (SIGSEGV) before."""
    case = Case(hostile_control_batch(producer_id=7, base_offset=40), 40, ((7, 40),))
    outcomes = outcomes_of(replayed(case, tmp_path))
    assert len(outcomes) == (2 if columns.compiled() else 1)
    for outcome in outcomes:
        assert ": CorruptMessageError: cannot decode the record batch at offset 40 of fuzzed-3: " \
            in outcome


@pytest.mark.parametrize("found", REGRESSIONS, ids=[path.stem for path in REGRESSIONS])
def test_inputs_that_fuzzing_found_are_corrupt_in_a_process_that_survives(found, tmp_path):
    """Each killed a process with SIGSEGV before (the messages inside a v1 wrapper, read by
    aiokafka's compiled reader without a bounds check)."""
    outcomes = outcomes_of(replayed(Case.decoded(found.read_bytes()), tmp_path))
    assert outcomes
    for outcome in outcomes:
        assert ": CorruptMessageError: " in outcome and "of fuzzed-3" in outcome


def test_a_short_fuzzing_run_finds_no_crash_hang_or_stray_exception(tmp_path):
    seed = int(os.environ.get("ZKCONSUMER_FUZZ_SEED", time.time_ns() % 1_000_000))
    report = harness.run("records", IN_SUITE_SECONDS, seed, tmp_path / "findings")
    found = "\n".join(f"{path}:\n{path.with_suffix('.txt').read_text()[-2000:]}"
                      for path in report.findings)
    assert (report.crashes, report.hangs, report.errors) == (0, 0, 0), (
        f"seed {seed} (ZKCONSUMER_FUZZ_SEED={seed} repeats it):\n{found}")
    assert report.inputs > len(record_fuzzing.seeds())  # the mutations were reached

"""Untrusted bytes beyond records (issue 33): a short fuzzing run of each target of
`input_fuzzing.py` (the SASL exchange, PLAIN and SCRAM and OAUTHBEARER and GSSAPI, the protocol codec's responses, znodes decoded then
written out, offset files and offsets JSON, a group's subscriptions and assignments) must find
nothing: no exception but the entry
point's named error on one short line, no input held over a second, no memory past the
harness's bound. `scripts/fuzz.py --target NAME` runs one for longer."""

from __future__ import annotations

import os
import time

import harness
import pytest

IN_SUITE_SECONDS = 2
TARGETS = ["sasl", "sasl-tokens", "responses", "znodes", "offset-files", "group-metadata"]


@pytest.mark.parametrize("name", TARGETS)
def test_a_short_fuzzing_run_finds_no_stray_exception_hang_or_memory_blowup(name, tmp_path):
    seed = int(os.environ.get("ZKCONSUMER_FUZZ_SEED", time.time_ns() % 1_000_000))
    report = harness.run(name, IN_SUITE_SECONDS, seed, tmp_path / "findings")
    found = "\n".join(f"{path}:\n{path.with_suffix('.txt').read_text()[-2000:]}"
                      for path in report.findings)
    assert (report.crashes, report.hangs, report.errors) == (0, 0, 0), (
        f"seed {seed} (ZKCONSUMER_FUZZ_SEED={seed} repeats it):\n{found}")
    assert report.inputs > len(harness.target(name).seeds())  # the mutations were reached


@pytest.mark.parametrize("name", sorted(set(TARGETS) - {"sasl"}))
def test_every_seed_is_read_whole(name):
    """The seeds are valid input: a target whose seeds its own entry points refuse would fuzz
    nothing but the first check."""
    fuzzed = harness.target(name)
    for seed in fuzzed.seeds():
        outcomes = fuzzed.exercise(seed)
        assert outcomes and not any("Error" in outcome for outcome in outcomes), outcomes


def test_the_sasl_seeds_log_in_with_every_mechanism_in_every_framing_and_two_are_refused():
    outcomes = [harness.target("sasl").exercise(seed) for seed in harness.target("sasl").seeds()]
    assert outcomes.count(["logged in: True"]) == 9
    assert sum(outcome[0].startswith("SaslLoginError: ") for outcome in outcomes) == 2

"""Fuzz the parsers of untrusted bytes, one target after another (tests/fuzz/harness.py runs
them; the targets' seeds, mutations and entry points are in tests/fuzz/*_fuzzing.py):

    records       fetched record data of every format, through both decoders, the cursor,
                  Arrow batches and Spark's conversion (CorruptMessageError allowed)
    sasl          a broker's answers to a SASL login: SaslHandshake, SaslAuthenticate, bare
                  tokens, SCRAM's server-first and server-final messages (SaslLoginError)
    sasl-tokens   the same for OAUTHBEARER (the broker's JSON errors) and GSSAPI (the wrapped
                  security-layer offer, through a stand-in context) (SaslLoginError)
    responses     the protocol codec's ApiVersions, Metadata, ListOffsets, Fetch, FindCoordinator,
                  OffsetFetch, OffsetCommit, ListGroups and DescribeGroups answers, in
                  every version (ProtocolError)
    znodes        registrations, owners, offsets, broker and topic znodes, decoded and then
                  written out as the renderers write them (ZnodeDataError)
    offset-files  `offsets import` files and Spark's offsets JSON (OffsetFileError, ConfigError)
    group-metadata  the consumer protocol's subscriptions and assignments other clients in a
                  group write, decoded and encoded again (GroupMetadataError)

Every error let out must be one short line. Findings are saved, one input per file, with what
happened to it:

    crash-SIG*.bin  the worker process died of a signal on this input (a read out of bounds...)
    hang-*.bin      a worker spent over the target's limit on it (records 30 s, the others 1 s)
    error-*.bin     another exception escaped, or a MemoryError past the bound (the .txt has it)

Replay one with `python tests/fuzz/harness.py replay TARGET FILE`; copy record inputs worth
keeping into tests/fuzz/regressions/, where the suite replays each in a process of its own.

    .venv/bin/python scripts/fuzz.py --seconds 600 --seed 1 --findings .cache/fuzz-findings
    .venv/bin/python scripts/fuzz.py --target sasl --target znodes --seconds 600

Under AddressSanitizer and UndefinedBehaviorSanitizer (`--sanitized DIR`): both C extensions
(records/_columns.c, member/_cursor.c) are compiled with `-fsanitize=address,undefined
-fno-omit-frame-pointer` into DIR, never over the tree's own builds, and the workers load them
from there, with the ASan runtime preloaded (`gcc -print-file-name=libasan.so`),
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 (CPython's allocations are no leaks of ours) and
UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1, so any finding kills the worker with SIGABRT and
its input is saved, the sanitizer's report in the .txt beside it. Expect a fifth of the speed.

    .venv/bin/python scripts/fuzz.py --seconds 900 --seed 7 --sanitized .cache/fuzz-asan

`--sanitize-note` prints the figures of a run as the closing note of issue 24 gives them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))

import harness  # noqa: E402  # found through the path set just above

EXTENSIONS = {"_columns": ROOT / "zkconsumer" / "records" / "_columns.c",
              "_cursor": ROOT / "zkconsumer" / "member" / "_cursor.c"}
SANITIZERS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g", "-O1"]


def build_sanitized(directory: Path) -> None:
    """Both extensions, compiled with the sanitizers, into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for name, source in EXTENSIONS.items():
        subprocess.run(["gcc", "-shared", "-fPIC", *SANITIZERS,
                        f"-I{sysconfig.get_paths()['include']}", str(source), "-o",
                        str(directory / f"{name}{suffix}")], check=True)


def sanitizer_environment() -> dict[str, str]:
    runtime = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                             text=True, check=True).stdout.strip()
    return {"LD_PRELOAD": runtime,
            "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
            "UBSAN_OPTIONS": "halt_on_error=1:abort_on_error=1:print_stacktrace=1"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", action="append", choices=sorted(harness.TARGET_MODULES),
                        help="what to fuzz (repeatable; default: records)")
    parser.add_argument("--seconds", type=float, default=60.0, help="per target")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--findings", type=Path,
                        default=Path(tempfile.gettempdir()) / "zkconsumer-fuzz-findings",
                        help="where inputs that crash, hang or raise are saved")
    parser.add_argument("--hang-after", type=float,
                        help="seconds on one input that count as a hang (default: the target's)")
    parser.add_argument("--sanitized", type=Path, metavar="DIR",
                        help="build the extensions with ASan and UBSan into DIR and use those")
    parser.add_argument("--sanitize-note", action="store_true",
                        help="end with the run's figures as the closing note gives them")
    options = parser.parse_args()
    env = None
    if options.sanitized:
        build_sanitized(options.sanitized)
        env = sanitizer_environment()
    failed = False
    for name in options.target or ["records"]:
        started = time.monotonic()
        report = harness.run(name, options.seconds, options.seed, options.findings / name,
                             extensions=options.sanitized if name == "records" else None,
                             env=env if name == "records" else None,
                             hang_after=options.hang_after, log=print)
        took = time.monotonic() - started
        print(f"{name}: {report.inputs} inputs in {took:.0f} s, seed {options.seed}: "
              f"{report.crashes} crashes, {report.hangs} hangs, {report.errors} other exceptions")
        for finding in report.findings:
            print(f"  {finding}")
        if options.sanitize_note:
            build = ("extensions built with -fsanitize=address,undefined, ASan runtime preloaded; "
                     if options.sanitized and name == "records" else
                     "extensions as built in the tree, no sanitizer; " if name == "records"
                     else "")
            print(f"fuzz run of {name} ({build}{os.cpu_count()} CPUs): {report.inputs} inputs "
                  f"tried in {took / 60:.1f} min from seed {options.seed}; crashes "
                  f"{report.crashes}, hangs {report.hangs}, other exceptions {report.errors}")
        failed = failed or bool(report.crashes or report.hangs or report.errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

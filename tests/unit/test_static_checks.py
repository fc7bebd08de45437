"""mypy and ruff as steps of the suite, with the settings of pyproject.toml: users type-check
their code against ours (the wheel ships `py.typed`), so a type error of ours is theirs too,
and a lint finding (a closure binding a loop variable late, say) is a bug waiting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHECKS = {
    "mypy": ["mypy"],  # the package named in [tool.mypy]
    "ruff": ["ruff", "check", "--output-format", "concise", "zkconsumer", "tests", "scripts"],
}


@pytest.mark.parametrize("name", CHECKS)
def test_the_tree_passes(name):
    result = subprocess.run([sys.executable, "-m", *CHECKS[name]], cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
    if result.returncode != 0:
        pytest.fail(f"{name} found problems:\n{result.stdout}{result.stderr}", pytrace=False)

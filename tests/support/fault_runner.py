"""scripts/fault_run.py, loaded as a module so a test runs it in-process and reads its report."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fault_run.py"


def load_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fault_run", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def report_rows(report: str) -> dict[str, str]:
    """The printed report's rows, name -> value."""
    return dict(re.findall(r"^(.+?)\s{2,}(.+)$", report, re.MULTILINE))

"""A start that stays fast: `import zkconsumer`, `import zkconsumer.cli` and `zkconsumer --help`
load none of the heavy libraries and none of the modules behind the commands, judged by the
modules a fresh interpreter holds afterwards (not by a time, which a busy machine decides)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import zkconsumer

# The libraries a command imports when it runs, never at start.
HEAVY_LIBRARIES = ("kafka", "aiokafka", "pyarrow", "pyspark", "pandas", "prometheus_client",
                   "kazoo.client", "http.server", "structlog", "asyncio")
# What the commands are made of: a start that loads one of these loads a command's work.
COMMAND_MODULES = ("zkconsumer.member", "zkconsumer.worker", "zkconsumer.aio", "zkconsumer.fetch",
                   "zkconsumer.offsets", "zkconsumer.admin.context", "zkconsumer.exporter",
                   "zkconsumer.localcluster", "zkconsumer.zk", "zkconsumer.metrics",
                   "zkconsumer.records", "zkconsumer.topology", "zkconsumer.spark")

_LOADED = """
import contextlib, io, json, sys
{code}
print(json.dumps(sorted(sys.modules)))
"""
_HELP = """
import zkconsumer.cli
sys.argv = ["zkconsumer", "--help"]
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    zkconsumer.cli.main()
"""


def loaded_after(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running `code`."""
    done = subprocess.run([sys.executable, "-c", _LOADED.format(code=code)], capture_output=True,
                          text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def among(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == name or m.startswith(name + ".") for name in names)]


def test_import_zkconsumer_loads_nothing_but_itself():
    loaded = loaded_after("import zkconsumer")
    assert among(loaded, (*HEAVY_LIBRARIES, "click", "kazoo")) == []
    assert [m for m in loaded if m.startswith("zkconsumer")] == ["zkconsumer"]


@pytest.mark.parametrize("code", ["import zkconsumer.cli", _HELP], ids=["import-cli", "help"])
def test_the_command_line_starts_without_the_commands_work(code):
    loaded = loaded_after(code)
    assert among(loaded, HEAVY_LIBRARIES) == []
    assert among(loaded, COMMAND_MODULES) == []
    # the probe saw the commands defined where they are listed, and not before
    assert ("zkconsumer.cli.consume_command" in loaded) == (code == _HELP)


def test_a_command_loads_no_other_commands_module():
    loaded = loaded_after("import zkconsumer.cli\n"
                          "zkconsumer.cli.cli.get_command(None, 'consume')")
    assert [m for m in loaded if m.startswith("zkconsumer.cli.") and m.endswith(
        ("_command", "_commands"))] == ["zkconsumer.cli.consume_command"]


def test_the_public_names_come_when_asked_for():
    for name in zkconsumer.__all__:
        assert getattr(zkconsumer, name) is not None
    assert set(zkconsumer.__all__) <= set(dir(zkconsumer))
    with pytest.raises(AttributeError):
        zkconsumer.NoSuchName  # noqa: B018 - the attribute access is the test


def test_a_member_starts_without_what_it_may_never_use():
    """The member's record reader (aiokafka's) is imported with the first answer that carries
    records, kafka-python only for the fallback fetcher, prometheus_client with the registry (a
    scrape, `snapshot()`), structlog with the first line shown, asyncio with the first `async
    for`: none is part of a worker's start (a fleet's members each pay theirs before the group
    can settle)."""
    loaded = loaded_after("import zkconsumer.worker, zkconsumer.member.connector, "
                          "zkconsumer.cli.consume_command")
    assert among(loaded, ("kafka", "aiokafka", "pyarrow", "pyspark", "pandas",
                          "prometheus_client", "http.server", "structlog", "asyncio")) == []
    assert "zkconsumer.member.connector" in loaded  # the probe loaded the member

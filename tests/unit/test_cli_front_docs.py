"""The manual's and the README's promises about the command line, checked against the command
line itself: environment variables (docs/reference/cli.md) against what `--help` shows, the
`consume` options table (docs/workers/cli.md) against `consume --help`, exit statuses against
`zkconsumer --help` and the code, and what `scripts/run` does with its arguments (the README's
"Two commands") against the script. A page or README that drifts from the CLI fails here."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from test_cli_front_options import FIRST, LAST, commands, option_entries

from zkconsumer.admin.offset_reads import OffsetsDifferError
from zkconsumer.cli import cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
COMMANDS_PAGE = (ROOT / "docs" / "reference" / "cli.md").read_text()
WORKERS_PAGE = (ROOT / "docs" / "workers" / "cli.md").read_text()
VARIABLE = re.compile(r"ZKCONSUMER_[A-Z0-9]+(?:_[A-Z0-9]+)*")
ENV_VAR_SHOWN = re.compile(r"env\s+var:\s+(ZKCONSUMER_\w+)")


def section(title: str) -> str:
    """A `##` section of the README."""
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def paragraph_with(text: str, marker: str) -> str:
    (found,) = [p for p in text.split("\n\n") if marker in p]
    return found


def help_page(*path: str) -> str:
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    return result.output


def shown_variables() -> dict[str, set[tuple[tuple[str, ...], str]]]:
    """Every variable some `--help` shows, with the (command, option) pairs it is shown for."""
    shown: dict[str, set] = {}
    for path, _ in commands():
        for flag, entry in option_entries(help_page(*path)).items():
            for name in ENV_VAR_SHOWN.findall(entry):
                shown.setdefault(name, set()).add((path, flag))
    return shown


def own_variables() -> set[str]:
    """Variables an option names itself, rather than the rule's ZKCONSUMER_<COMMAND>_<OPTION>;
    these the manual must name, since no pattern predicts them."""
    own = set()
    for path, command in commands():
        for option in command.params:
            if isinstance(option, click.Option) and option.envvar:
                flag = next(f for f in option.opts if f.startswith("--"))
                if option.envvar != "_".join(["ZKCONSUMER", *path, flag[2:]]).upper() \
                        .replace("-", "_"):
                    own.add(option.envvar)
    return own


def environment_paragraph() -> str:
    """Where the manual explains the options' environment variables."""
    return paragraph_with(COMMANDS_PAGE, "[env var: ...]")


def test_every_variable_the_manual_gives_for_options_is_shown_by_help():
    shown = shown_variables()
    named = set(VARIABLE.findall(environment_paragraph()))
    assert named and named <= set(shown), named - set(shown)


def test_the_manual_names_every_variable_an_option_sets_for_itself():
    assert own_variables() <= set(VARIABLE.findall(environment_paragraph()))


def test_each_option_the_manual_pairs_with_a_variable_is_where_help_shows_it():
    shown = shown_variables()
    pairs = re.findall(r"`(--[a-z-]+)` is `(ZKCONSUMER_\w+)`", environment_paragraph())
    assert pairs
    for flag, name in pairs:
        assert {shown_flag for _, shown_flag in shown[name]} == {flag}, (flag, shown[name])


def test_the_manual_states_the_option_order_the_commands_follow():
    rule = " ".join(paragraph_with(COMMANDS_PAGE, "lists its options in one order").split())
    first, own, last = rule.partition("the command's own options next")
    assert own
    assert re.findall(r"`(--[a-z-]+)`", first) == FIRST
    assert re.findall(r"`(--[a-z-]+)`", last) == LAST


def consume_table() -> list[tuple[list[str], str]]:
    """The `zkconsumer consume` options table: each row's flags and its whole text."""
    table = WORKERS_PAGE.split("| option | meaning |", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    return [(re.findall(r"`(--[a-z-]+)", row.split(" | ")[0]), row) for row in rows]


def test_the_consume_table_lists_exactly_the_options_of_consume_help():
    in_manual = {flag for flags, _ in consume_table() for flag in flags}
    in_help = set(option_entries(help_page("consume"))) - {"-h"}
    assert in_manual == in_help


def test_the_consume_table_gives_each_option_the_variable_help_shows():
    entries = option_entries(help_page("consume"))
    for flags, row in consume_table():
        for name in VARIABLE.findall(row):
            assert any(f"env var: {name}" in entries[flag] for flag in flags), (name, flags)


def documented_exit_statuses() -> dict[int, str]:
    """Status -> the label before the colon, from the manual's exit status table."""
    return {int(status): label for status, label in
            re.findall(r"^\| (\d+) \| ([^:|]+):", COMMANDS_PAGE, re.MULTILINE)}


def test_the_manual_and_help_give_the_same_exit_statuses():
    epilog = help_page().partition("Exit status:")[2]
    in_help = {int(status): label.strip() for status, label in
               re.findall(r"^\s+(\d+)\s+([^:\n]+):", epilog, re.MULTILINE)}
    assert in_help and documented_exit_statuses() == in_help


def test_the_documented_exit_statuses_are_the_ones_the_cli_returns(monkeypatch):
    labels = {label: status for status, label in documented_exit_statuses().items()}
    no_topic = CliRunner().invoke(cli, ["consume", "--zookeeper", "127.0.0.1:1", "--group", "g"])
    assert no_topic.exit_code == labels["usage error"] == click.UsageError.exit_code
    bad_setting = CliRunner().invoke(cli, ["consume", "--zookeeper", "zk:notaport", "--group",
                                           "g", "--topic", "t"])
    assert bad_setting.exit_code == labels["error"]
    assert bad_setting.stderr.startswith("error: ")
    assert OffsetsDifferError.exit_code == labels["differ"]

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("zkconsumer.cli.inspect_command.session_for", interrupted)
    assert CliRunner().invoke(cli, ["inspect", "--zookeeper", "z"]).exit_code \
        == labels["interrupted"]
    assert CliRunner().invoke(cli, ["--help"]).exit_code == labels["done"]


def run_script_dispatch() -> tuple[str, str, str]:
    """What scripts/run does: (the variable it looks at, the command when it is set, the
    command otherwise)."""
    script = (ROOT / "scripts" / "run").read_text()
    variable, configured = re.search(
        r'if \[ -n "\$\{(\w+):-\}" \]; then\s+exec "\$ZKC_VENV/bin/zkconsumer" (\w+) "\$@"',
        script).groups()
    otherwise = re.findall(r'^exec "\$ZKC_VENV/bin/zkconsumer" (\w+) "\$@"', script,
                           re.MULTILINE)[-1]
    return variable, configured, otherwise


def test_the_readme_says_which_command_scripts_run_passes_its_arguments_to():
    variable, configured, otherwise = run_script_dispatch()
    two_commands = section("Two commands")
    assert f"`{variable}`" in two_commands
    assert f"`zkconsumer {configured} ARGS`" in two_commands
    assert f"`zkconsumer {otherwise} ARGS`" in two_commands


RUN_EXAMPLES = re.findall(r"`((?:\w+=\S+ )*)scripts/run (-[^`]+)`", section("Two commands"))


@pytest.mark.parametrize("example", RUN_EXAMPLES,
                         ids=[f"{variables}scripts/run {args}" for variables, args in RUN_EXAMPLES])
def test_each_scripts_run_example_is_accepted_by_the_command_it_reaches(example):
    variables, arguments = example
    variable, configured, otherwise = run_script_dispatch()
    command = cli.commands[configured if f"{variable}=" in variables else otherwise]
    command.make_context(command.name, arguments.split())

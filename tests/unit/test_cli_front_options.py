"""What a new user sees first from `zkconsumer consume`: option mistakes are reported before
anything connects (as usage errors, exit 2), a bad setting names the option or variable it came
from, and `--help` shows every option's environment variable."""

from __future__ import annotations

import os
import re

import click
import pytest
from click.testing import CliRunner

from zkconsumer.cli import cli, consume_command

UNREACHABLE = "127.0.0.1:1"
EXACTLY_ONE = "exactly one of --topic, --whitelist or --blacklist"


@pytest.fixture(autouse=True)
def no_zkconsumer_environment(monkeypatch):
    """The developer's own ZKCONSUMER_* variables must not decide these tests."""
    for name in [name for name in os.environ if name.startswith("ZKCONSUMER_")]:
        monkeypatch.delenv(name)


@pytest.fixture
def no_connection(monkeypatch):
    """Fails the command if it connects: every check that can be made must come first."""
    def refused(*_args, **_kwargs):
        raise AssertionError("connected to ZooKeeper before the options were checked")

    monkeypatch.setattr(consume_command, "open_member", refused)


def consume(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["consume", *args], env=env, prog_name="zkconsumer")


@pytest.mark.parametrize(("args", "expected"), [
    (["--group", "g", "--topic", "t", "--whitelist", "t.*"], EXACTLY_ONE),
    (["--group", "g"], EXACTLY_ONE),
    (["--group", "g", "--topic", "t", "--property", "whitelist=t.*"], EXACTLY_ONE),
    (["--group", "g", "--whitelist", "events(("], "Invalid value for '--whitelist'"),
    (["--group", "g", "--blacklist", "events(("], "'events(('"),
    (["--group", "g", "--topic", "bad/name"], "Invalid value for '--topic'"),
    (["--topic", "t"], "Missing option '--group'"),
], ids=["topic-and-whitelist", "no-topic", "topic-and-configured-whitelist", "bad-whitelist",
        "bad-blacklist", "illegal-topic", "no-group"])
def test_option_mistakes_are_usage_errors_before_connecting(no_connection, args, expected):
    result = consume("--zookeeper", UNREACHABLE, *args)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.stderr.startswith("Usage: zkconsumer consume"), result.stderr
    assert expected in result.stderr
    assert "ZooKeeper" not in result.stderr


def test_a_missing_group_names_the_option_and_its_variable(no_connection):
    result = consume("--zookeeper", UNREACHABLE, "--topic", "t")
    assert "group.id=None" not in result.stderr
    assert "--group" in result.stderr and "ZKCONSUMER_GROUP_ID" in result.stderr


def test_a_missing_zookeeper_names_the_option_and_its_variable(no_connection):
    result = consume("--group", "g", "--topic", "t")
    assert result.exit_code == 2
    assert "--zookeeper" in result.stderr and "ZKCONSUMER_ZOOKEEPER_CONNECT" in result.stderr


def test_a_kafka_client_option_is_checked_before_connecting(no_connection):
    result = consume("--zookeeper", UNREACHABLE, "--group", "g", "--topic", "t",
                     "--property", "kafka.no.such.option=1")
    assert result.exit_code == 1, result.output
    assert result.stderr.strip().splitlines()[-1].startswith("error: invalid config "
                                                             "kafka.no.such.option")


@pytest.mark.parametrize(("args", "env", "source"), [
    (["--zookeeper", "zk1:notaport", "--group", "g"], {}, "(from --zookeeper)"),
    (["--group", "g"], {"ZKCONSUMER_ZOOKEEPER_CONNECT": "zk1:notaport"},
     "(from environment ZKCONSUMER_ZOOKEEPER_CONNECT)"),
    (["--zookeeper", UNREACHABLE, "--group", "bad/name"], {}, "(from --group)"),
    (["--zookeeper", UNREACHABLE], {"ZKCONSUMER_GROUP_ID": "bad/name"},
     "(from environment ZKCONSUMER_GROUP_ID)"),
], ids=["zookeeper-option", "zookeeper-variable", "group-option", "group-variable"])
def test_a_bad_setting_names_the_option_or_variable_it_came_from(no_connection, args, env,
                                                                   source):
    result = consume(*args, "--topic", "t", env=env)
    assert result.exit_code == 1, result.output
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("error: invalid config ") and source in line, line


def test_a_misspelt_property_is_warned_about_once_naming_the_closest_key(no_connection):
    result = consume("--zookeeper", UNREACHABLE, "--group", "g",
                     "--property", "auto.offset.rest=smallest",
                     "--property", "kafka.security.protocol=SSL")
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, result.stderr
    assert "auto.offset.rest" in warnings[0] and "auto.offset.reset" in warnings[0]


def commands(command: click.Command = cli, path: tuple[str, ...] = ()):
    """Every command and group, with the words that invoke it."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from commands(sub, (*path, name))


def option_entries(help_text: str) -> dict[str, str]:
    """Each option's entry in a `--help` page (wrapped lines joined), by its first flag."""
    entries: dict[str, str] = {}
    current = None
    for line in help_text.partition("\nOptions:\n")[2].splitlines():
        flag = re.match(r"  (-[^\s,]+)", line)
        if flag:
            current = flag.group(1)
            entries[current] = line.strip()
        elif current and line.startswith("   "):
            entries[current] += " " + line.strip()
    return entries


COMMANDS = [(path, command) for path, command in commands()
            if any(isinstance(param, click.Option) for param in command.params)]


@pytest.mark.parametrize(("path", "command"), COMMANDS,
                         ids=[" ".join(path) or "zkconsumer" for path, _ in COMMANDS])
def test_help_shows_the_environment_variable_of_every_option(path, command):
    entries = option_entries(CliRunner().invoke(cli, [*path, "--help"]).output)
    for option in command.params:
        if isinstance(option, click.Option) and (option.envvar or option.allow_from_autoenv):
            assert "env var: ZKCONSUMER_" in entries[option.opts[0]], entries[option.opts[0]]


def test_a_variable_named_like_the_version_flag_does_not_replace_a_command():
    result = CliRunner().invoke(cli, ["consume", "--help"], env={"ZKCONSUMER_VERSION": "1"},
                                prog_name="zkconsumer")
    assert result.exit_code == 0
    assert result.output.startswith("Usage: zkconsumer consume"), result.output


# The rule, as the manual states it (docs/reference/cli.md): these options share a setting's variable in every command;
# any other option's variable is ZKCONSUMER_, the command's words and the option's long name.
SHARED = {"--zookeeper": "ZKCONSUMER_ZOOKEEPER_CONNECT",
          "--bootstrap-server": "ZKCONSUMER_BOOTSTRAP_SERVER",
          "--group": "ZKCONSUMER_GROUP_ID",
          "--metrics-port": "ZKCONSUMER_METRICS_PORT",
          "--metrics-host": "ZKCONSUMER_METRICS_HOST",
          "--work-dir": "ZKCONSUMER_CLUSTER_DIR"}
FIRST = ["--zookeeper", "--bootstrap-server", "--group"]
LAST = ["--property", "--zk-tls-config-file", "--json"]


def shown_variable(entry: str) -> str | None:
    found = re.search(r"env var: ([A-Z0-9_ ]+)[];]", entry)  # a long name may be wrapped
    return found.group(1).replace(" ", "") if found else None


def expected_variable(path: tuple[str, ...], flag: str, repeatable: bool) -> str:
    if not path and flag in ("--log-format", "--log-level"):
        return "ZKCONSUMER_" + flag[2:].upper().replace("-", "_")
    if flag in SHARED and not (flag == "--group" and repeatable):
        return SHARED[flag]
    return "_".join(["ZKCONSUMER", *path, flag[2:]]).upper().replace("-", "_")


def help_page(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(cli, [*path, "--help"], prog_name="zkconsumer")
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(("path", "command"), COMMANDS,
                         ids=[" ".join(path) or "zkconsumer" for path, _ in COMMANDS])
def test_every_option_is_described_and_named_by_the_one_rule(path, command):
    entries = option_entries(help_page(path))
    for option in command.params:
        if not isinstance(option, click.Option) or option.hidden:
            continue
        flag = next(f for f in option.opts if f.startswith("--"))
        entry = entries[option.opts[0]]
        assert option.help, f"{' '.join(path)} {flag} has no help"
        if flag in ("--version", "--help") or not option.allow_from_autoenv:
            continue
        assert shown_variable(entry) == expected_variable(path, flag, option.multiple), entry


@pytest.mark.parametrize(("path", "command"), COMMANDS,
                         ids=[" ".join(path) or "zkconsumer" for path, _ in COMMANDS])
def test_every_command_orders_its_options_by_the_one_rule(path, command):
    """The connection and the group first, the command's own next, --property,
    --zk-tls-config-file and --json last, in --help as everywhere."""
    shown = list(option_entries(help_page(path)))
    first = [flag for flag in shown if flag in FIRST]
    last = [flag for flag in shown if flag in LAST]
    own = [flag for flag in shown if flag not in FIRST + LAST and flag not in ("-h", "--help")]
    assert first == [flag for flag in FIRST if flag in first]
    assert last == [flag for flag in LAST if flag in last]
    assert shown[:len(first)] == first, shown
    assert shown[len(first):len(first) + len(own)] == own, shown


@pytest.mark.parametrize(("variable", "words"), [
    ("ZKCONSUMER_GROUP_CUTOVER_TIMEOUT", []),
    ("ZKCONSUMER_GROUP_CUTOVER_TIMEOUT_S", ["deprecated environment variable",
                                            "ZKCONSUMER_GROUP_CUTOVER_TIMEOUT"]),
], ids=["the-rule's-name", "the-old-name"])
def test_a_renamed_variable_still_works_under_its_old_name_with_a_warning(no_connection,
                                                                          variable, words):
    result = CliRunner().invoke(cli, ["group", "cutover", "--zookeeper", UNREACHABLE, "--group",
                                      "g", "--to", "kafka"], env={variable: "soon"},
                                prog_name="zkconsumer")
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--timeout'" in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr

"""The `zkconsumer` command line.

Every command shares one error policy: anything zkconsumer raises on purpose becomes a single
`error: ...` line on stderr and exit status 1, never a traceback; a mistake in the options is
click's usage error, status 2. `zkconsumer --help` lists every status (`EXIT_STATUSES`).

Each command's module is imported when the command is looked up, and imports what its command
needs when the command runs: `zkconsumer consume` loads the consume command's module and none of
the others', and `zkconsumer --help` loads only the options' definitions.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator, MutableMapping

import click
from kazoo.exceptions import KazooException, NoAuthError

from zkconsumer import __version__
from zkconsumer.cli.option_rules import apply_rules, deprecated_variables
from zkconsumer.errors import OffsetsDifferError, ZkConsumerError
from zkconsumer.logs import LOG_FORMATS, configure_logging, get_logger, redact

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130
EXIT_STATUSES = {
    0: "done: finished, or consume/demo stopped by a signal or --max-messages",
    EXIT_ERROR: "error: one line 'error: ...' on stderr",
    click.UsageError.exit_code: "usage error: an unknown, missing, malformed or conflicting option",
    OffsetsDifferError.exit_code: "differ: offsets diff found ZooKeeper and Kafka disagreeing",
    EXIT_INTERRUPTED: "interrupted: Ctrl-C before the command finished",
}


class _OneLineErrors(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ZkConsumerError as exc:
            click.echo(f"error: {redact(str(exc))}", err=True)
            ctx.exit(getattr(exc, "exit_code", EXIT_ERROR))
        except NoAuthError:
            from zkconsumer.zk.session import ZookeeperAccessDeniedError

            click.echo(f"error: {ZookeeperAccessDeniedError.because('the change')}", err=True)
            ctx.exit(EXIT_ERROR)
        except KazooException as exc:
            click.echo(redact(f"error: ZooKeeper request failed: {type(exc).__name__} {exc}")
                       .rstrip(), err=True)
            ctx.exit(EXIT_ERROR)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)


# "\b" keeps click from rewrapping the lines into one paragraph.
_EPILOG = "\b\nExit status:\n" + "\n".join(f"  {status:<4} {meaning}"
                                          for status, meaning in EXIT_STATUSES.items())


@click.group(cls=_OneLineErrors, epilog=_EPILOG,
             context_settings={"help_option_names": ["-h", "--help"],
                               "auto_envvar_prefix": "ZKCONSUMER"})
# Not from the environment: a ZKCONSUMER_VERSION set for some other purpose would turn every
# command into printing the version.
@click.version_option(__version__, prog_name="zkconsumer", allow_from_autoenv=False)
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default="console", show_default=True,
              envvar="ZKCONSUMER_LOG_FORMAT", help="Human console lines, or one JSON object per line.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
              default="info", show_default=True, envvar="ZKCONSUMER_LOG_LEVEL",
              help="The least severe log lines shown.")
def cli(log_format: str, log_level: str) -> None:
    """Kafka's ZooKeeper-coordinated consumer groups, in Python."""
    configure_logging(log_format, log_level)
    for old, new in deprecated_variables(os.environ):
        get_logger(__name__).warning("deprecated environment variable", variable=old,
                                     use=new)


# Each command: the module that defines it, and its name there.
COMMANDS = {
    "consume": ("zkconsumer.cli.consume_command", "consume"),
    "cluster": ("zkconsumer.cli.cluster_commands", "cluster"),
    "inspect": ("zkconsumer.cli.inspect_command", "inspect_cluster"),
    "demo": ("zkconsumer.cli.demo_command", "demo"),
    "group": ("zkconsumer.cli.group_commands", "group"),
    "exporter": ("zkconsumer.cli.exporter_command", "exporter"),
    "offsets": ("zkconsumer.cli.offsets_commands", "offsets"),
}


class CommandsOnDemand(MutableMapping[str, click.Command]):
    """The group's commands, each imported the first time it is looked up and given the option
    rule then (see option_rules), so that one command loads no other command's module. Listing
    them (`--help`, the manual's reference) looks every one up."""

    def __init__(self, where: dict[str, tuple[str, str]]) -> None:
        self._where = dict(where)
        self._commands: dict[str, click.Command | None] = dict.fromkeys(where)  # None: not yet

    def __getitem__(self, name: str) -> click.Command:
        command = self._commands[name]  # KeyError: no such command
        if command is None:
            module, attribute = self._where[name]
            command = getattr(importlib.import_module(module), attribute)
            apply_rules(command, (name,))
            self._commands[name] = command
        return command

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        del self._commands[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._commands)

    def __len__(self) -> int:
        return len(self._commands)


# One rule for every command's option order and variable names (see option_rules): the group's
# own options now, each command's as it is looked up.
apply_rules(cli)
cli.commands = CommandsOnDemand(COMMANDS)


def main() -> None:
    sys.exit(cli.main(prog_name="zkconsumer", standalone_mode=True))

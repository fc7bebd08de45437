"""The `zkconsumer` command line.

Every command shares one error policy: anything zkconsumer raises on purpose becomes a single
`error: ...` line on stderr and exit status 1, never a traceback; a mistake in the options is
click's usage error, status 2. `zkconsumer --help` lists every status (`EXIT_STATUSES`).

Each command module imports what its command needs when the command runs, not when it is
imported: `zkconsumer --help`, and every command, load only the options' definitions and the
command in hand.
"""

from __future__ import annotations

import os
import sys

import click
from kazoo.exceptions import KazooException, NoAuthError

from zkconsumer import __version__
from zkconsumer.cli.cluster_commands import cluster
from zkconsumer.cli.consume_command import consume
from zkconsumer.cli.demo_command import demo
from zkconsumer.cli.exporter_command import exporter
from zkconsumer.cli.group_commands import group
from zkconsumer.cli.inspect_command import inspect_cluster
from zkconsumer.cli.offsets_commands import offsets
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


cli.add_command(consume)
cli.add_command(cluster)
cli.add_command(inspect_cluster)
cli.add_command(demo)
cli.add_command(group)
cli.add_command(exporter)
cli.add_command(offsets)


# One rule for every command's option order and variable names (see option_rules).
apply_rules(cli)


def main() -> None:
    sys.exit(cli.main(prog_name="zkconsumer", standalone_mode=True))

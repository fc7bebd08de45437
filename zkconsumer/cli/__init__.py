"""The `zkconsumer` command line.

Every command shares one error policy: anything zkconsumer raises on purpose becomes a single
`error: ...` line on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import sys

import click
from kazoo.exceptions import KazooException, NoAuthError

from zkconsumer import __version__
from zkconsumer.cli.cluster_commands import cluster
from zkconsumer.cli.consume_command import consume
from zkconsumer.cli.demo_command import demo
from zkconsumer.cli.group_commands import group
from zkconsumer.cli.inspect_command import inspect_cluster
from zkconsumer.cli.offsets_commands import offsets
from zkconsumer.errors import ZkConsumerError
from zkconsumer.logs import LOG_FORMATS, configure_logging, redact
from zkconsumer.zk.session import ZookeeperAccessDeniedError


class _OneLineErrors(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ZkConsumerError as exc:
            click.echo(f"error: {redact(str(exc))}", err=True)
            ctx.exit(getattr(exc, "exit_code", 1))
        except NoAuthError:
            click.echo(f"error: {ZookeeperAccessDeniedError.because('the change')}", err=True)
            ctx.exit(1)
        except KazooException as exc:
            click.echo(redact(f"error: ZooKeeper request failed: {type(exc).__name__} {exc}")
                       .rstrip(), err=True)
            ctx.exit(1)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)


@click.group(cls=_OneLineErrors, context_settings={"help_option_names": ["-h", "--help"],
                                                   "auto_envvar_prefix": "ZKCONSUMER"})
@click.version_option(__version__, prog_name="zkconsumer")
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default="console", show_default=True,
              envvar="ZKCONSUMER_LOG_FORMAT", help="Human console lines, or one JSON object per line.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
              default="info", show_default=True, envvar="ZKCONSUMER_LOG_LEVEL")
def cli(log_format: str, log_level: str) -> None:
    """Kafka's ZooKeeper-coordinated consumer groups, in Python."""
    configure_logging(log_format, log_level)


cli.add_command(consume)
cli.add_command(cluster)
cli.add_command(inspect_cluster)
cli.add_command(demo)
cli.add_command(group)
cli.add_command(offsets)


def main() -> None:
    sys.exit(cli.main(prog_name="zkconsumer", standalone_mode=True))

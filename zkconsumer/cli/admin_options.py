"""What the `group` and `offsets` commands share on the command line: the connection options,
how the admin service's notes and progress are shown, and its rows as table cells."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from zkconsumer.admin.context import Step


GROUP_MUST_EXIST = ("The consumer group (group.id); one that exists nowhere (not under "
                    "/consumers, not on Kafka's group coordinator, no offsets in Kafka) is an "
                    "error.")


def one_group_option(callback: Callable | None = None, help: str = GROUP_MUST_EXIST
                     ) -> Callable:
    """`--group`, where a command acts on one group; every such command describes it alike."""
    return click.option("--group", "name", required=True, envvar="ZKCONSUMER_GROUP_ID",
                        callback=callback, help=help)


def admin_options(command: Callable) -> Callable:
    """The connection options shared by every administration command."""
    return _with_admin_options(command, zookeeper_required=True)


def group_view_options(command: Callable) -> Callable:
    """The connection options of the commands that look at groups, which may look at those on
    Kafka's group coordinator alone: `--zookeeper` is then left out."""
    return _with_admin_options(command, zookeeper_required=False)


def _with_admin_options(command: Callable, zookeeper_required: bool) -> Callable:
    options = [
        click.option("--zookeeper", "zookeeper_connect", required=zookeeper_required,
                     envvar="ZKCONSUMER_ZOOKEEPER_CONNECT",
                     help="host:port[,host:port...][/chroot]." + (
                         "" if zookeeper_required else " Without it (--bootstrap-server "
                         "then given), only the groups on Kafka's group coordinator.")),
        click.option("--bootstrap-server", envvar="ZKCONSUMER_BOOTSTRAP_SERVER",
                     help="host:port,... of brokers to use instead of those registered in "
                          "ZooKeeper (KRaft clusters, or another cluster's ZooKeeper); topics "
                          "and partitions then come from Kafka metadata."),
        click.option("--property", "properties", multiple=True, metavar="KEY=VALUE",
                     help="Kafka client setting: kafka.api.version=0.9, "
                          "kafka.security.protocol=SSL, ...; repeatable."),
        ZK_TLS_CONFIG_FILE,
        click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables."),
    ]
    return functools.reduce(lambda decorated, option: option(decorated), reversed(options),
                            with_zk_tls_config_file(command))


ZK_TLS_CONFIG_FILE = click.option(
    "--zk-tls-config-file", type=click.Path(exists=True, dir_okay=False),
    help="A properties file with ZooKeeper TLS keys (zookeeper.ssl.*), as Kafka's tools take "
         "it; its other keys are ignored, --property wins over it.")


def with_zk_tls_config_file(command: Callable) -> Callable:
    """The command gets the file's ZooKeeper TLS keys as `--property` values in front of the
    given ones, which win over them."""
    @functools.wraps(command)
    def run(*args, zk_tls_config_file: str | None = None, properties=(), **kwargs):
        if zk_tls_config_file:
            from zkconsumer.config.loading import zookeeper_tls_file_properties

            properties = zookeeper_tls_file_properties(zk_tls_config_file) + tuple(properties)
        return command(*args, properties=properties, **kwargs)
    return run


class Terminal:
    """The admin service's reporter on the command line: notes on stderr, where they stay out
    of the JSON and tables on stdout; a progress bar only where someone watches a long run."""

    def note(self, text: str) -> None:
        click.echo(f"note: {text}", err=True)

    @contextmanager
    def progress(self, total: int, label: str) -> Iterator[Step]:
        if total < 20 or not sys.stderr.isatty():
            yield lambda _steps: None
            return
        with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
            yield bar.update


TERMINAL = Terminal()


def table_cells(rows: list[dict]) -> list[tuple]:
    """A row's values in its order, "-" where JSON has null."""
    return [tuple("-" if v is None else v for v in row.values()) for row in rows]

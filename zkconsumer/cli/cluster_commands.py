"""`zkconsumer cluster ...`: the local ZooKeeper + Kafka 0.9.0.1 for development and demos."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from zkconsumer.cli.output import emit_json, emit_table

if TYPE_CHECKING:
    from zkconsumer.localcluster import LocalCluster

_work_dir_option = click.option(
    "--work-dir", type=click.Path(file_okay=False, path_type=Path),
    default=lambda: os.environ.get("ZKCONSUMER_CLUSTER_DIR", ".local-cluster"),
    show_default="$ZKCONSUMER_CLUSTER_DIR or .local-cluster",
    help="Folder holding the cluster's data, logs and state.")


@click.group()
def cluster() -> None:
    """Provision, start, stop and inspect a local ZooKeeper and Kafka cluster."""


@cluster.command()
def provision() -> None:
    """Download the Kafka 0.9.0.1 distribution into the cache (done once)."""
    from zkconsumer.localcluster import ensure_bundle

    click.echo(str(ensure_bundle()))


@cluster.command()
@_work_dir_option
@click.option("--brokers", type=click.IntRange(1, 5), default=1, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def start(work_dir: Path, brokers: int, as_json: bool) -> None:
    """Start ZooKeeper and BROKERS Kafka brokers on free loopback ports; they keep running."""
    from zkconsumer.localcluster import LocalCluster

    local = LocalCluster.start(work_dir, brokers=brokers)
    _report(local, as_json)


@cluster.command()
@_work_dir_option
@click.option("--keep-data", is_flag=True, help="Keep the data folder for a later start.")
def stop(work_dir: Path, keep_data: bool) -> None:
    """Stop every server of the cluster started in WORK_DIR (by process id)."""
    from zkconsumer.localcluster import LocalCluster

    LocalCluster.load(work_dir).stop(remove_data=not keep_data)
    click.echo("stopped")


@cluster.command()
@_work_dir_option
@click.option("--json", "as_json", is_flag=True)
def status(work_dir: Path, as_json: bool) -> None:
    """Show each server's port, pid and whether it is running."""
    from zkconsumer.localcluster import LocalCluster

    _report(LocalCluster.load(work_dir), as_json)


def _report(local: LocalCluster, as_json: bool) -> None:
    state = local.status()
    if as_json:
        emit_json(state)
        return
    rows = []
    if state["zookeeper"]:
        zk = state["zookeeper"]
        rows.append(("zookeeper", zk["connect"], zk["pid"], "running" if zk["running"] else "stopped"))
    for broker in state["brokers"]:
        rows.append((f"broker {broker['broker_id']}", broker["address"], broker["pid"],
                     "running" if broker["running"] else "stopped"))
    emit_table(("server", "address", "pid", "state"), rows)

"""`zkconsumer demo`: the main job with nothing configured, on a throw-away local cluster."""

from __future__ import annotations

import signal
import tempfile
import threading
from pathlib import Path

import click
import structlog

from zkconsumer.cli.inspect_command import describe_cluster, print_cluster
from zkconsumer.localcluster import LocalCluster, create_topic
from zkconsumer.zk.registry import read_topic
from zkconsumer.zk.session import zookeeper_session

DEMO_TOPIC = "zkconsumer-demo"
log = structlog.get_logger(__name__)


@click.command()
@click.option("--partitions", type=click.IntRange(1, 64), default=4, show_default=True)
@click.option("--keep-running", is_flag=True,
              help="Leave the cluster up until Ctrl-C instead of stopping it at once.")
def demo(partitions: int, keep_running: bool) -> None:
    """Start a local cluster, create a demo topic and show the brokers and topics."""
    with tempfile.TemporaryDirectory(prefix="zkconsumer-demo-") as work_dir:
        log.info("starting local cluster", work_dir=work_dir)
        local = LocalCluster.start(Path(work_dir), brokers=1)
        try:
            with zookeeper_session(local.zookeeper_connect) as zk:
                if read_topic(zk, DEMO_TOPIC) is None:
                    create_topic(zk, DEMO_TOPIC, partitions)
                print_cluster(describe_cluster(zk))
            click.echo(f"\nZooKeeper: {local.zookeeper_connect}   brokers: {local.bootstrap_servers}")
            if keep_running:
                _wait_for_stop_signal()
        finally:
            log.info("stopping local cluster")
            local.stop(remove_data=True)


def _wait_for_stop_signal() -> None:
    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    click.echo("running; press Ctrl-C to stop")
    stopped.wait()

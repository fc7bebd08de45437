"""`zkconsumer cluster ...`: the local ZooKeeper + Kafka 0.9.0.1 for development and demos, and
a playground on it (or on any cluster given): a topic created, test messages produced."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from zkconsumer.cli.output import emit_json, emit_table

if TYPE_CHECKING:
    from zkconsumer.fetch.brokers import KafkaAccess
    from zkconsumer.localcluster import LocalCluster

_work_dir_option = click.option(
    "--work-dir", type=click.Path(file_okay=False, path_type=Path),
    default=".local-cluster", show_default=True,
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
@click.option("--brokers", type=click.IntRange(1, 5), default=1, show_default=True,
              help="How many Kafka brokers to start.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
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
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def status(work_dir: Path, as_json: bool) -> None:
    """Show each server's port, pid and whether it is running."""
    from zkconsumer.localcluster import LocalCluster

    _report(LocalCluster.load(work_dir), as_json)


# The local cluster's Kafka speaks 0.9: told to the producer, which then need not probe.
LOCAL_KAFKA_API_VERSION = (0, 9)


@cluster.command("create-topic")
@click.option("--zookeeper", "zookeeper_connect", envvar="ZKCONSUMER_ZOOKEEPER_CONNECT",
              help="host:port[,host:port...][/chroot] of another cluster's ZooKeeper (default: "
                   "the local cluster's, from --work-dir).")
@click.option("--topic", required=True, help="The topic to create.")
@click.option("--partitions", type=click.IntRange(1, 1000), default=1, show_default=True,
              help="How many partitions it has (each with one replica).")
@_work_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a line.")
def create_topic_command(zookeeper_connect: str | None, topic: str, partitions: int,
                         work_dir: Path, as_json: bool) -> None:
    """Create the --topic with --partitions partitions, replication factor 1, and wait for
    their leaders (as `kafka-topics.sh --create --zookeeper` does)."""
    from zkconsumer.localcluster import create_topic
    from zkconsumer.zk.session import zookeeper_session
    from zkconsumer.znodes.paths import check_name

    try:
        check_name("topic", topic)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--topic") from None
    connect = zookeeper_connect or _local(work_dir).zookeeper_connect
    with zookeeper_session(connect) as zk:
        create_topic(zk, topic, partitions)
    if as_json:
        emit_json({"topic": topic, "partitions": partitions, "replication_factor": 1,
                   "zookeeper": connect})
    else:
        click.echo(f"created topic {topic}: {partitions} partition(s), replication factor 1")


@cluster.command("produce")
@click.option("--zookeeper", "zookeeper_connect", envvar="ZKCONSUMER_ZOOKEEPER_CONNECT",
              help="host:port[,host:port...][/chroot] of another cluster's ZooKeeper, whose "
                   "registered brokers are sent to (in the protocol their registrations "
                   "tell).")
@click.option("--bootstrap-server", envvar="ZKCONSUMER_BOOTSTRAP_SERVER",
              help="host:port,... of another cluster's brokers, 0.10 or newer (default: the "
                   "local cluster's, from --work-dir); with --zookeeper, those instead of the "
                   "registered ones.")
@click.option("--topic", required=True, help="The topic to send to.")
@click.option("--count", type=click.IntRange(0),
              help="Send this many generated messages ('message 0', 'message 1', ...) instead "
                   "of one per line of standard input.")
@click.option("--key", help="Every message's key (default: none; keyless messages go round "
                            "the partitions in turn).")
@click.option("--key-separator", metavar="SEP",
              help="Each line is KEY SEP VALUE (as the console producer's parse.key=true); a "
                   "line without SEP is an error.")
@_work_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a line.")
def produce_command(zookeeper_connect: str | None, bootstrap_server: str | None, topic: str,
                    count: int | None, key: str | None, key_separator: str | None,
                    work_dir: Path, as_json: bool) -> None:
    """Send test messages to the --topic: --count generated ones, or one per line of standard input
    (`printf 'a\\nb\\n' | zkconsumer cluster produce --topic t`); wait until each is
    acknowledged."""
    from zkconsumer.localcluster.playground import playground_messages, send_messages

    if key is not None and key_separator is not None:
        raise click.UsageError("give --key or --key-separator, not both")
    if key_separator == "":
        raise click.BadParameter("must not be empty", param_hint="--key-separator")
    if zookeeper_connect:
        servers, api_version = _kafka_access(zookeeper_connect, bootstrap_server)
    elif bootstrap_server:  # kafka-python asks the brokers their version (0.10 and newer)
        servers, api_version = bootstrap_server, None
    else:
        servers, api_version = _local(work_dir).bootstrap_servers, LOCAL_KAFKA_API_VERSION
    lines: Iterable[str] = () if count is not None else sys.stdin
    sent = send_messages(servers, topic, playground_messages(count, lines, key, key_separator),
                         api_version)
    total = sum(sent.values())
    if as_json:
        emit_json({"topic": topic, "messages": total,
                   "partitions": {str(p): n for p, n in sent.items()}})
    else:
        spread = ", ".join(f"{n} to partition {p}" for p, n in sent.items())
        click.echo(f"produced {total} message(s) to {topic}" + (f": {spread}" if spread else ""))


def _kafka_access(zookeeper_connect: str, bootstrap_server: str | None) -> KafkaAccess:
    """The brokers registered in that ZooKeeper (or those given), and the protocol their
    registrations tell (kafka-python cannot detect a 0.8 or 0.9 broker by itself)."""
    from zkconsumer.fetch.brokers import resolve_kafka_access
    from zkconsumer.zk.registry import read_brokers
    from zkconsumer.zk.session import zookeeper_session

    with zookeeper_session(zookeeper_connect) as zk:
        return resolve_kafka_access(lambda: read_brokers(zk).values(),
                                    bootstrap_override=bootstrap_server)


def _local(work_dir: Path) -> LocalCluster:
    """The local cluster started in `work_dir`; not running is an error saying how to start it
    or what to give instead."""
    from zkconsumer.localcluster import ClusterError, LocalCluster

    try:
        local = LocalCluster.load(work_dir)
    except ClusterError as exc:
        raise ClusterError(f"{exc}: start one (zkconsumer cluster start), or name another "
                           "cluster (--zookeeper, --bootstrap-server)") from None
    if not local.is_running():
        raise ClusterError(f"the local cluster in {Path(work_dir).resolve()} is not running: "
                           "start it (zkconsumer cluster start)")
    return local


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

"""`zkconsumer inspect`: what ZooKeeper says about the cluster's brokers and topics."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from zkconsumer.cli.admin_options import ZK_TLS_CONFIG_FILE, with_zk_tls_config_file
from zkconsumer.cli.output import emit_json, emit_table

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from zkconsumer.admin.context import admin_config
    from zkconsumer.zk.session import session_for
else:
    def admin_config(*args, **kwargs):
        """zkconsumer.admin.context's, imported when the command runs."""
        from zkconsumer.admin import context

        return context.admin_config(*args, **kwargs)

    def session_for(*args, **kwargs):
        """zkconsumer.zk.session's, imported when the command runs (a name of this module, so
        that tests can replace it)."""
        from zkconsumer.zk import session

        return session.session_for(*args, **kwargs)


def describe_cluster(zk: KazooClient) -> dict:
    """Brokers and topics (with each partition's replicas and leader) as plain data."""
    from zkconsumer.zk.registry import list_topics, read_brokers, read_partition_state, read_topic

    brokers = []
    for broker_id, registration in read_brokers(zk).items():
        address = registration.address_for()
        brokers.append({
            "id": broker_id,
            "address": f"{address[0]}:{address[1]}" if address else None,
            "endpoints": [f"{e.listener}://{e.host}:{e.port}" for e in registration.endpoints],
            "rack": registration.rack,
            "version": registration.version,
        })
    topics = []
    for topic in list_topics(zk):
        assignment = read_topic(zk, topic)
        if assignment is None:
            continue
        partitions = []
        for partition in assignment.partition_numbers():
            state = read_partition_state(zk, topic, partition)
            partitions.append({
                "partition": partition,
                "replicas": list(assignment.partitions[partition]),
                "leader": state.leader if state else None,
                "isr": list(state.isr) if state else [],
            })
        topics.append({"topic": topic, "partitions": partitions})
    return {"brokers": brokers, "topics": topics}


def print_cluster(description: dict, err: bool = False) -> None:
    """`err=True` prints to stderr, for commands whose stdout carries messages."""
    emit_table(("broker", "address", "rack", "version"),
               [(b["id"], b["address"], b["rack"] or "-", b["version"])
                for b in description["brokers"]], err=err)
    click.echo(err=err)
    emit_table(("topic", "partitions", "leaders"),
               [(t["topic"], len(t["partitions"]),
                 ",".join(str(p["leader"]) for p in t["partitions"]))
                for t in description["topics"]], err=err)


@click.command("inspect")
@click.option("--zookeeper", "zookeeper_connect", required=True, envvar="ZKCONSUMER_ZOOKEEPER_CONNECT",
              help="ZooKeeper connect string, host:port[,host:port...][/chroot].")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE",
              help="ZooKeeper credential or TLS setting (zookeeper.auth.digest, "
                   "zookeeper.ssl.*); repeatable.")
@ZK_TLS_CONFIG_FILE
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@with_zk_tls_config_file
def inspect_cluster(zookeeper_connect: str, properties: tuple[str, ...], as_json: bool) -> None:
    """Show the brokers and topics registered in ZooKeeper."""
    config = admin_config(zookeeper_connect, properties, connection_timeout_ms=6000)
    with session_for(config.zookeeper) as zk:
        description = describe_cluster(zk)
    if as_json:
        emit_json(description)
    else:
        print_cluster(description)

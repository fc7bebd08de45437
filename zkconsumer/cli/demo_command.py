"""`zkconsumer demo`: the main job with nothing configured.

It starts a throw-away local cluster, creates a demo topic with some data, keeps producing one
message a second, and consumes the topic as a member of a group, exactly as `zkconsumer consume`
would against a real cluster.
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import click

from zkconsumer.cli.inspect_command import describe_cluster, print_cluster
from zkconsumer.cli.message_output import FORMAT_HELP, FORMATS, formatter
from zkconsumer.logs import get_logger

if TYPE_CHECKING:
    from kafka import KafkaProducer

DEMO_TOPIC = "zkconsumer-demo"
DEMO_GROUP = "zkconsumer-demo"
# For the producer only: the consumer finds the broker generation in ZooKeeper by itself.
KAFKA_API_VERSION = (0, 9)


@click.command()
@click.option("--partitions", type=click.IntRange(1, 64), default=4, show_default=True,
              help="Partitions of the demo topic.")
@click.option("--messages", type=click.IntRange(0), default=100, show_default=True,
              help="Messages written before consuming starts.")
@click.option("--max-messages", type=click.IntRange(1),
              help="Stop after consuming this many (default: run until Ctrl-C).")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="jsonl",
              show_default=True, help=FORMAT_HELP)
def demo(partitions: int, messages: int, max_messages: int | None, output_format: str) -> None:
    """Run a consumer worker on a local cluster with a demo topic (what scripts/run does)."""
    log = get_logger(__name__)
    from kafka import KafkaProducer

    from zkconsumer.cli.signals import stop_on_signals
    from zkconsumer.config import load_config
    from zkconsumer.localcluster import LocalCluster, create_topic, wait_for_broker_metadata
    from zkconsumer.member.connector import ConsumerConnector
    from zkconsumer.worker import ConsumeRun
    from zkconsumer.zk.session import zookeeper_session

    with tempfile.TemporaryDirectory(prefix="zkconsumer-demo-") as work_dir:
        log.info("starting local cluster", work_dir=work_dir)
        local = LocalCluster.start(Path(work_dir), brokers=1)
        stop_producing = threading.Event()
        try:
            with zookeeper_session(local.zookeeper_connect) as zk:
                create_topic(zk, DEMO_TOPIC, partitions)
                print_cluster(describe_cluster(zk), err=True)
            click.echo(f"\nZooKeeper {local.zookeeper_connect}, broker {local.bootstrap_servers}; "
                       f"consuming {DEMO_TOPIC} as group {DEMO_GROUP} (Ctrl-C stops)\n", err=True)
            wait_for_broker_metadata(local.brokers[min(local.brokers)].port, DEMO_TOPIC,
                                     partitions)
            producer = KafkaProducer(bootstrap_servers=local.bootstrap_servers,
                                     api_version=KAFKA_API_VERSION)
            for n in range(messages):
                producer.send(DEMO_TOPIC, f"demo message {n}".encode(), partition=n % partitions)
            producer.flush()
            threading.Thread(target=_trickle, args=(producer, partitions, messages, stop_producing),
                             daemon=True).start()
            config = load_config(overrides=[
                f"zookeeper.connect={local.zookeeper_connect}", f"group.id={DEMO_GROUP}",
                "auto.offset.reset=smallest", "auto.commit.interval.ms=1000"])
            with stop_on_signals() as stop_requested:
                connector = ConsumerConnector(config)
                streams = connector.create_message_streams({DEMO_TOPIC: 1})[DEMO_TOPIC]
                run = ConsumeRun(connector, streams, formatter(output_format), None,
                                 max_messages, stop_requested)
                run.run()
            log.info("demo consumer stopped", messages=run.consumed)
        finally:
            stop_producing.set()
            log.info("stopping local cluster")
            local.stop(remove_data=True)


def _trickle(producer: KafkaProducer, partitions: int, start: int, stop: threading.Event) -> None:
    """One new message a second, so the worker visibly keeps consuming."""
    n = start
    while not stop.wait(1.0):
        producer.send(DEMO_TOPIC, f"demo message {n}".encode(), partition=n % partitions)
        n += 1
    producer.close(timeout=5)

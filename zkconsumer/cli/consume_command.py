"""`zkconsumer consume`: run a group member from the command line until stopped."""

from __future__ import annotations

import contextlib
import importlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import click
import structlog

from zkconsumer.assignment import Blacklist, Whitelist
from zkconsumer.cli.message_output import FORMATS, formatter
from zkconsumer.config import ConsumerConfig, load_config
from zkconsumer.errors import ZkConsumerError
from zkconsumer.logs import LOG_FORMATS, configure_logging
from zkconsumer.member.connector import ConsumerConnector
from zkconsumer.member.streams import ConsumerTimeout, KafkaStream
from zkconsumer.model import Message

log = structlog.get_logger(__name__)


class HandlerError(ZkConsumerError):
    """The user's --handler raised; the message it failed on is not committed."""


def load_handler(spec: str) -> Callable[[Message], object]:
    module_name, colon, function_name = spec.partition(":")
    if not colon or not module_name or not function_name:
        raise click.BadParameter("expected module:function", param_hint="--handler")
    try:
        function = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as exc:
        raise click.BadParameter(f"cannot load {spec}: {exc}", param_hint="--handler") from None
    if not callable(function):
        raise click.BadParameter(f"{spec} is not callable", param_hint="--handler")
    return function


class ConsumeRun:
    """Consumes every stream on its own thread until stopped, `max_messages`, or a failure."""

    def __init__(self, connector: ConsumerConnector, streams: list[KafkaStream],
                 write: Callable[[Message], bytes] | None,
                 handler: Callable[[Message], object] | None, max_messages: int | None,
                 stop_requested: threading.Event) -> None:
        self.connector = connector
        self.streams = streams
        self.consumed = 0
        self._write = write
        self._handler = handler
        self._max = max_messages
        self._lock = threading.Lock()
        self._done = stop_requested
        self._errors: list[BaseException] = []

    def stop(self) -> None:
        self._done.set()

    def run(self) -> None:
        threads = [threading.Thread(target=self._consume, args=(s,), daemon=True,
                                    name=f"zkconsumer-stream-{i}")
                   for i, s in enumerate(self.streams)]
        for thread in threads:
            thread.start()
        while not self._done.wait(0.2):
            if not any(t.is_alive() for t in threads):
                break
        # A message counts as delivered once a stream hands it out, so every message in hand
        # must be written before the final commit: stop the streams, let the threads finish
        # what they hold, and only then commit and leave.
        for stream in self.streams:
            stream.close()
        for thread in threads:
            thread.join(timeout=30)
        handler_failed = any(isinstance(e, HandlerError) for e in self._errors)
        self.connector.shutdown(commit=not handler_failed)
        if self._errors:
            raise self._errors[0]

    def _consume(self, stream: KafkaStream) -> None:
        out = sys.stdout.buffer
        try:
            for message in stream:
                if self._handler is not None:
                    try:
                        self._handler(message)
                    except Exception as exc:
                        raise HandlerError(
                            f"handler failed on {message.topic}-{message.partition} offset "
                            f"{message.offset}: {type(exc).__name__}: {exc}") from exc
                with self._lock:
                    if self._write is not None:
                        out.write(self._write(message))
                        out.flush()
                    self.consumed += 1
                    if self._max is not None and self.consumed >= self._max:
                        self._done.set()
                if self._done.is_set():
                    # Handled and written: commit it, though the loop asks for no next one.
                    stream.mark_consumed()
                    return
        except ConsumerTimeout:
            self._done.set()
        except ZkConsumerError as exc:
            self._errors.append(exc)
            self._done.set()


def build_config(zookeeper: str | None, group: str | None, consumer_config: Path | None,
                 properties: tuple[str, ...], from_beginning: bool) -> ConsumerConfig:
    overrides = list(properties)
    if zookeeper:
        overrides.append(f"zookeeper.connect={zookeeper}")
    if group:
        overrides.append(f"group.id={group}")
    if from_beginning:
        overrides.append("auto.offset.reset=smallest")
    return load_config(consumer_config, overrides)


def start_streams(connector: ConsumerConnector, config: ConsumerConfig, topics: tuple[str, ...],
                  whitelist: str | None, blacklist: str | None, streams: int) -> list[KafkaStream]:
    topics = topics or config.topics or ()
    whitelist = whitelist or config.whitelist
    blacklist = blacklist or config.blacklist
    chosen = [bool(topics), bool(whitelist), bool(blacklist)]
    if sum(chosen) != 1:
        raise click.UsageError("give exactly one of --topic, --whitelist or --blacklist")
    if topics:
        by_topic = connector.create_message_streams({t: streams for t in topics})
        return [s for topic in topics for s in by_topic[topic]]
    topic_filter = Whitelist(whitelist) if whitelist else Blacklist(blacklist)
    return connector.create_message_streams_by_filter(topic_filter, streams)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """SIGINT/SIGTERM set the event instead of killing the process, so a run ends cleanly
    (final commit, release, deregister) even when the signal arrives while it is starting."""
    requested = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: requested.set())
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield requested
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@click.command()
@click.option("--zookeeper", envvar="ZKCONSUMER_ZOOKEEPER_CONNECT",
              help="host:port[,host:port...][/chroot] (or zookeeper.connect in the config).")
@click.option("--group", envvar="ZKCONSUMER_GROUP_ID", help="The consumer group (group.id).")
@click.option("--topic", "topics", multiple=True, help="A topic to consume; repeatable.")
@click.option("--whitelist", help="Consume every topic whose whole name matches this regex.")
@click.option("--blacklist", help="Consume every topic whose name does not match this regex.")
@click.option("--streams", type=click.IntRange(1, 1024), default=1, show_default=True,
              help="Streams (consumer threads) per topic, or in all for a filter.")
@click.option("--consumer-config", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A legacy consumer.properties file.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE",
              help="A config override; repeatable; wins over the file and the environment.")
@click.option("--from-beginning", is_flag=True,
              help="Partitions with no committed offset start at the earliest offset.")
@click.option("--max-messages", type=click.IntRange(1),
              help="Stop after this many messages (with several streams, a message another "
                   "stream already holds is still printed, never dropped).")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="jsonl",
              show_default=True, help="jsonl: one JSON object per message; value: raw values.")
@click.option("--handler", metavar="MODULE:FUNCTION",
              help="Call this function with each message (before it is printed).")
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default=None,
              help="Overrides the global --log-format.")
def consume(zookeeper, group, topics, whitelist, blacklist, streams, consumer_config, properties,
            from_beginning, max_messages, output_format, handler, log_format) -> None:
    """Join GROUP as a member and consume until Ctrl-C, SIGTERM or --max-messages."""
    if log_format:
        configure_logging(log_format)
    handler_function = load_handler(handler) if handler else None
    with stop_on_signals() as stop_requested:
        config = build_config(zookeeper, group, consumer_config, properties, from_beginning)
        connector = ConsumerConnector(config)
        try:
            selected = start_streams(connector, config, topics, whitelist, blacklist, streams)
        except BaseException:
            connector.shutdown()
            raise
        run = ConsumeRun(connector, selected, formatter(output_format), handler_function,
                         max_messages, stop_requested)
        run.run()
    log.info("consumer stopped", messages=run.consumed)

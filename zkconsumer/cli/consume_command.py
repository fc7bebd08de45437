"""`zkconsumer consume`: run a group member from the command line until stopped.

Everything about the options and settings that can be known without a cluster is checked before
the member connects (a ConsumerConnector connects as it is built), so a mistake is reported
first, alone, and the group is never touched by a member that could not have run.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import click
from click.core import ParameterSource

from zkconsumer.assignment import Blacklist, Whitelist
from zkconsumer.assignment.topic_filter import TopicFilter
from zkconsumer.cli.message_output import FORMATS, formatter
from zkconsumer.config import (
    ConsumerConfig,
    MissingConfigError,
    Setting,
    load_config,
    parse_setting,
)
from zkconsumer.errors import ConfigError, ZkConsumerError
from zkconsumer.kafka_client import kafka_client_options
from zkconsumer.logs import LOG_FORMATS, configure_logging, get_logger
from zkconsumer.member.connector import SHUTDOWN_TIMEOUT_S, ConsumerConnector
from zkconsumer.member.streams import ConsumerTimeout, KafkaStream
from zkconsumer.model import Message

log = get_logger(__name__)
# A SIGINT or SIGTERM ends the process within this many seconds, whatever ZooKeeper and Kafka
# do: the streams' threads get `STREAMS_STOP_S` to finish the message in hand, the connector
# `SHUTDOWN_TIMEOUT_S` to commit and leave, and the last second is for exiting; a process still
# running after that (stuck while starting, say, in a connection attempt) says so in one line
# and exits with status 1.
STREAMS_STOP_S = 3.0
STOP_TIMEOUT_S = STREAMS_STOP_S + SHUTDOWN_TIMEOUT_S + 1.0
# Options that set a config key themselves, by parameter name.
SETTING_OPTIONS = {"zookeeper": "zookeeper.connect", "group": "group.id",
                   "bootstrap_server": "bootstrap.servers", "metrics_port": "metrics.port",
                   "metrics_host": "metrics.host"}


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
        streams_deadline = time.monotonic() + STREAMS_STOP_S
        for thread in threads:
            thread.join(timeout=max(0.0, streams_deadline - time.monotonic()))
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
                 properties: tuple[str, ...], from_beginning: bool, *,
                 bootstrap_server: str | None = None, metrics_port: int | None = None,
                 metrics_host: str | None = None,
                 sources: Mapping[str, str] = MappingProxyType({})) -> ConsumerConfig:
    """The options win over `--property`, and each is named as the source of its value, so an
    error points at it. `sources` names, by parameter, an option's value that did not come
    from the command line (`environment ZKCONSUMER_GROUP_ID`)."""
    given = {"zookeeper": zookeeper, "group": group, "bootstrap_server": bootstrap_server,
             "metrics_port": None if metrics_port is None else str(metrics_port),
             "metrics_host": metrics_host}
    options = {key: Setting(value, sources.get(name, "--" + name.replace("_", "-")))
               for name, key in SETTING_OPTIONS.items() if (value := given[name])}
    if from_beginning:
        options["auto.offset.reset"] = Setting("smallest", "--from-beginning")
    return load_config(consumer_config, properties, options=options)


def checked_config(ctx: click.Context, zookeeper: str | None, group: str | None,
                   consumer_config: Path | None, properties: tuple[str, ...],
                   from_beginning: bool, bootstrap_server: str | None = None, *,
                   metrics_port: int | None = None,
                   metrics_host: str | None = None) -> ConsumerConfig:
    """The settings, checked as far as they can be without a cluster. No ZooKeeper or group is
    a usage error naming the option and its variable; an invalid value, including a `kafka.*`
    client option, is a ConfigError naming where it came from."""
    sources = {name: f"environment {_option(ctx, name).envvar}" for name in SETTING_OPTIONS
               if ctx.get_parameter_source(name) is ParameterSource.ENVIRONMENT}
    try:
        config = build_config(zookeeper, group, consumer_config, properties, from_beginning,
                              bootstrap_server=bootstrap_server, metrics_port=metrics_port,
                              metrics_host=metrics_host, sources=sources)
    except MissingConfigError as exc:
        name = next(name for name, key in SETTING_OPTIONS.items() if key == exc.key)
        raise click.MissingParameter(
            f"Or set {exc.key} in the --consumer-config file or with --property.",
            ctx=ctx, param=_option(ctx, name)) from None
    kafka_client_options(config.kafka_client_properties)
    return config


def _option(ctx: click.Context, name: str) -> click.Parameter:
    return next(param for param in ctx.command.params if param.name == name)


def topic_selection(config: ConsumerConfig, topics: tuple[str, ...], whitelist: str | None,
                    blacklist: str | None) -> tuple[str, ...] | TopicFilter:
    """What to consume, from the options or else the config: exactly one kind."""
    topics = topics or config.topics or ()
    whitelist = whitelist or config.whitelist
    blacklist = blacklist or config.blacklist
    if [bool(topics), bool(whitelist), bool(blacklist)].count(True) != 1:
        raise click.UsageError("give exactly one of --topic, --whitelist or --blacklist (or "
                               "topics, whitelist or blacklist in the config)")
    if topics:
        return tuple(topics)
    if whitelist:
        return Whitelist(whitelist)
    assert blacklist  # exactly one kind was given, checked above
    return Blacklist(blacklist)


def start_streams(connector: ConsumerConnector, selection: tuple[str, ...] | TopicFilter,
                  streams: int) -> list[KafkaStream]:
    if isinstance(selection, TopicFilter):
        return connector.create_message_streams_by_filter(selection, streams)
    by_topic = connector.create_message_streams({topic: streams for topic in selection})
    return [stream for topic in selection for stream in by_topic[topic]]


def _checked(key: str, text: str) -> Any:
    """`text` by the config's rules for `key`; a bad one is a usage error of the option."""
    try:
        return parse_setting(key, text)
    except ConfigError as exc:
        raise click.BadParameter(exc.reason) from None


def _topics_option(ctx: click.Context, param: click.Parameter,
                   values: tuple[str, ...]) -> tuple[str, ...]:
    """`--topic a,b` is `--topic a --topic b`, as `topics=a,b` is in the config."""
    return tuple(dict.fromkeys(topic for text in values for topic in _checked("topics", text)))


def _filter_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`--whitelist` and `--blacklist` are named as their config keys."""
    if value is not None:
        _checked(param.name, value)
    return value


@contextlib.contextmanager
def stop_on_signals(timeout_s: float = STOP_TIMEOUT_S) -> Iterator[threading.Event]:
    """SIGINT/SIGTERM set the event instead of killing the process, so a run ends cleanly
    (final commit, release, deregister) even when the signal arrives while it is starting; and
    the first one arms a deadline, so the process ends within `timeout_s` even where a clean end
    cannot be had (a ZooKeeper without quorum, a broker that does not answer)."""
    requested = threading.Event()

    def on_signal(signum, _frame) -> None:
        if not requested.is_set():
            requested.set()
            _exit_after(timeout_s, signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield requested
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _exit_after(timeout_s: float, signal_name: str) -> None:
    """Not cancelled once armed: an exit held up after the run (by a thread that does not
    end) is bounded too."""
    def give_up() -> None:
        log.error(f"did not stop within {timeout_s:g}s of {signal_name}; exiting now without "
                  "a clean stop (the next owners resume from the last commit)")
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(1)

    timer = threading.Timer(timeout_s, give_up)
    timer.daemon = True
    timer.start()


@click.command()
@click.option("--zookeeper", envvar="ZKCONSUMER_ZOOKEEPER_CONNECT",
              help="host:port[,host:port...][/chroot] (or zookeeper.connect in the config).")
@click.option("--group", envvar="ZKCONSUMER_GROUP_ID", help="The consumer group (group.id).")
@click.option("--bootstrap-server", envvar="ZKCONSUMER_BOOTSTRAP_SERVER",
              help="host:port,... of brokers not registered in this ZooKeeper (KRaft clusters, "
                   "or another cluster's ZooKeeper); topics then come from Kafka metadata "
                   "(bootstrap.servers).")
@click.option("--topic", "topics", multiple=True, callback=_topics_option,
              help="A topic to consume; repeatable (or comma-separated).")
@click.option("--whitelist", callback=_filter_option,
              help="Consume every topic whose whole name matches this regex.")
@click.option("--blacklist", callback=_filter_option,
              help="Consume every topic whose name does not match this regex.")
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
@click.option("--metrics-port", type=click.IntRange(0, 65535), envvar="ZKCONSUMER_METRICS_PORT",
              help="Serve Prometheus metrics at /metrics and a health check at /healthz on "
                   "this port (metrics.port; 0: none, the default).")
@click.option("--metrics-host", envvar="ZKCONSUMER_METRICS_HOST",
              help="The address the metrics server listens on (metrics.host; default "
                   "127.0.0.1).")
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default=None,
              help="Overrides the global --log-format.")
@click.pass_context
def consume(ctx, zookeeper, group, bootstrap_server, topics, whitelist, blacklist, streams,
            consumer_config, properties, from_beginning, max_messages, output_format, handler,
            metrics_port, metrics_host, log_format) -> None:
    """Join GROUP as a member and consume until Ctrl-C, SIGTERM or --max-messages."""
    if log_format:
        configure_logging(log_format)
    handler_function = load_handler(handler) if handler else None
    config = checked_config(ctx, zookeeper, group, consumer_config, properties, from_beginning,
                            bootstrap_server, metrics_port=metrics_port,
                            metrics_host=metrics_host)
    selection = topic_selection(config, topics, whitelist, blacklist)
    with stop_on_signals() as stop_requested:
        connector = ConsumerConnector(config)
        try:
            selected = start_streams(connector, selection, streams)
        except BaseException:
            connector.shutdown()
            raise
        run = ConsumeRun(connector, selected, formatter(output_format), handler_function,
                         max_messages, stop_requested)
        run.run()
    log.info("consumer stopped", messages=run.consumed)

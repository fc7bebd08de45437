"""`zkconsumer consume`: run a group member from the command line until stopped.

The options and settings are parsed here and the run itself is `zkconsumer.worker`'s. Everything about the options and settings that can be known without a cluster is checked before
the member connects (a ConsumerConnector connects as it is built), so a mistake is reported
first, alone, and the group is never touched by a member that could not have run.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from zkconsumer.cli.message_output import FORMAT_HELP, FORMATS, formatter
from zkconsumer.errors import ConfigError
from zkconsumer.logs import LOG_FORMATS, configure_logging, get_logger

if TYPE_CHECKING:
    from zkconsumer.assignment.topic_filter import TopicFilter
    from zkconsumer.config import ConsumerConfig
    from zkconsumer.model import Message
    from zkconsumer.worker import open_member
else:
    def open_member(*args, **kwargs):
        """zkconsumer.worker's, imported when the member is opened (a name of this module, so
        that tests can replace it)."""
        from zkconsumer import worker

        return worker.open_member(*args, **kwargs)


# Options that set a config key themselves, by parameter name.
SETTING_OPTIONS = {"zookeeper": "zookeeper.connect", "group": "group.id",
                   "bootstrap_server": "bootstrap.servers", "metrics_port": "metrics.port",
                   "metrics_host": "metrics.host"}


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


def build_config(zookeeper: str | None, group: str | None, consumer_config: Path | None,
                 properties: tuple[str, ...], from_beginning: bool, *,
                 bootstrap_server: str | None = None, metrics_port: int | None = None,
                 metrics_host: str | None = None,
                 sources: Mapping[str, str] = MappingProxyType({})) -> ConsumerConfig:
    """The options win over `--property`, and each is named as the source of its value, so an
    error points at it. `sources` names, by parameter, an option's value that did not come
    from the command line (`environment ZKCONSUMER_GROUP_ID`)."""
    from zkconsumer.config import Setting, load_config

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
    from zkconsumer.config import MissingConfigError
    from zkconsumer.fetch.kafka_client import kafka_client_options

    sources = {name: f"environment {_option(ctx, name).envvar}" for name in SETTING_OPTIONS
               if ctx.get_parameter_source(name) is ParameterSource.ENVIRONMENT}
    try:
        config = build_config(zookeeper, group, consumer_config, properties, from_beginning,
                              bootstrap_server=bootstrap_server, metrics_port=metrics_port,
                              metrics_host=metrics_host, sources=sources)
    except MissingConfigError as exc:
        name = next(name for name, key in SETTING_OPTIONS.items() if key == exc.key)
        why = "" if exc.reason == "it is required" else f" ({exc.reason})"
        raise click.MissingParameter(
            f"Or set {exc.key} in the --consumer-config file or with --property{why}.",
            ctx=ctx, param=_option(ctx, name)) from None
    kafka_client_options(config.kafka_client_properties)
    return config


def _option(ctx: click.Context, name: str) -> click.Parameter:
    return next(param for param in ctx.command.params if param.name == name)


def topic_selection(config: ConsumerConfig, topics: tuple[str, ...], whitelist: str | None,
                    blacklist: str | None) -> tuple[str, ...] | TopicFilter:
    """What to consume, from the options or else the config: exactly one kind."""
    from zkconsumer.assignment import Blacklist, Whitelist

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


def _checked(key: str, text: str) -> Any:
    """`text` by the config's rules for `key`; a bad one is a usage error of the option."""
    from zkconsumer.config import parse_setting

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
              show_default=True, help=FORMAT_HELP)
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
    from zkconsumer.cli.signals import stop_on_signals
    from zkconsumer.member.fence_follow import FenceFollower
    from zkconsumer.worker import ConsumeRun

    if log_format:
        configure_logging(log_format)
    handler_function = load_handler(handler) if handler else None
    config = checked_config(ctx, zookeeper, group, consumer_config, properties, from_beginning,
                            bootstrap_server, metrics_port=metrics_port,
                            metrics_host=metrics_host)
    selection = topic_selection(config, topics, whitelist, blacklist)
    with stop_on_signals() as stop_requested:
        follower = FenceFollower(
            config, lambda settings, metrics: open_member(settings, selection, streams, metrics),
            stop_requested)
        started = follower.start()
        if started is None:  # stopped while waiting for the group's cutover
            return
        run = ConsumeRun(*started, formatter(output_format), handler_function, max_messages,
                         stop_requested, follower)
        run.run()
    get_logger(__name__).info("consumer stopped", messages=run.consumed)

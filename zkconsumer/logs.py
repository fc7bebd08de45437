"""structlog set-up: readable console lines by default, one JSON object per line with --log-format json."""

from __future__ import annotations

import logging
import sys

import structlog

LOG_FORMATS = ("console", "json")


def configure_logging(log_format: str = "console", level: str = "info") -> None:
    """Send zkconsumer's and its libraries' logs to stderr, keeping stdout for data output."""
    numeric_level = getattr(logging, level.upper())
    renderer = (structlog.processors.JSONRenderer() if log_format == "json"
                else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()))
    shared = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    ))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric_level)
    # kazoo and kafka-python warn on every reconnect attempt; zkconsumer logs connection state
    # itself, once per change, so their chatter is only shown when debugging.
    library_level = numeric_level if numeric_level <= logging.DEBUG else logging.ERROR
    for noisy in ("kazoo", "kafka"):
        logging.getLogger(noisy).setLevel(library_level)

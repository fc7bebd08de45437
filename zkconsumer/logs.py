"""structlog set-up: readable console lines by default, one JSON object per line with --log-format json."""

from __future__ import annotations

import logging
import sys

import structlog

LOG_FORMATS = ("console", "json")
REDACTED = "***"
# Values that must never be printed: registered by the config as it reads them, and scrubbed
# from every rendered line, since libraries log them in forms we do not control (kazoo logs its
# Auth packet, for one, when debugging).
_secrets: set[str] = set()


def register_secret(value: str) -> None:
    if value:
        _secrets.add(value)


def redact(text: str) -> str:
    for secret in sorted(_secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


class _RedactingFormatter(structlog.stdlib.ProcessorFormatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


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
    handler.setFormatter(_RedactingFormatter(
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

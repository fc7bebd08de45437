"""Logging: zkconsumer's lines go through the standard `logging` module, so the application decides
where they go; the CLI (the one application zkconsumer is itself) renders them with structlog, as
readable console lines by default or one JSON object per line with --log-format json.

A library that printed, or that configured structlog globally, would mix its lines into the host's
stdout or take over the host's own structlog set-up. So each module's logger is a structlog
logger wrapped around a stdlib one with processors of its own (`get_logger`): the call sites keep
structlog's `log.info("event", key=value)` style, and what reaches `logging` is a plain message
("event key=value ...") that any handler can show, with the event and its fields kept on the record
(`zkconsumer_event`, `zkconsumer_fields`) for handlers that want them structured, as the CLI's does.
With no handler configured nothing of ours is shown, but for warnings and errors, which Python's
last-resort handler writes to stderr.
"""

from __future__ import annotations

import functools
import logging
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from structlog.typing import EventDict, Processor

LOG_FORMATS = ("console", "json")
REDACTED = "***"
EVENT_ATTRIBUTE = "zkconsumer_event"
FIELDS_ATTRIBUTE = "zkconsumer_fields"
# Values that must never be shown: registered by the config as it reads them, and scrubbed from
# every line of ours before it reaches `logging` (whatever handler the application uses), from
# kazoo's (which logs its Auth packet, digest and all, when debugging), and from every line the
# CLI renders, since other libraries log them in forms we do not control.
_secrets: set[str] = set()
# kazoo logs requests through this logger (its default), the Auth packet among them.
_KAZOO_REQUESTS = "kazoo.client"


def register_secret(value: str) -> None:
    if value:
        _secrets.add(value)


def redact(text: str) -> str:
    for secret in sorted(_secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def url_shown(url: str) -> str:
    """A URL as logs and status pages may show it: scheme, host and port only. Webhook URLs
    carry their credentials in the user part, the path (`/services/T0/B0/XXXX`) or the query,
    and the rest is not needed to tell which receiver is meant."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<a URL that does not parse>"
    hidden = "/..." if parts.path.strip("/") or parts.query or parts.username else ""
    return f"{parts.scheme}://{host}{port}{hidden}"


def _redacted(value: Any) -> Any:
    """A field's value as handlers may see it: unchanged unless its text holds a secret."""
    if not _secrets or isinstance(value, (int, float, bool)) or value is None:
        return value
    text = value if isinstance(value, str) else str(value)
    cleaned = redact(text)
    return value if cleaned == text else cleaned


class _RedactingFilter(logging.Filter):
    """Secrets out of what our processors never see, before any handler does: kazoo's lines, and
    the text of an exception logged with one of ours. (A logger's filters see only the records
    made on that logger, so it sits on each of ours and on kazoo's.)"""

    def filter(self, record: logging.LogRecord) -> bool:
        if _secrets:
            message = record.getMessage()
            cleaned = redact(message)
            if cleaned != message:
                record.msg, record.args = cleaned, None
            if record.exc_info and not record.exc_text:
                record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


_REDACTING_FILTER = _RedactingFilter()
logging.getLogger(_KAZOO_REQUESTS).addFilter(_REDACTING_FILTER)


def _to_logging_call(_logger: Any, _method: str, event_dict: EventDict
                     ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The last processor: the arguments of the stdlib logger's call."""
    event = redact(str(event_dict.pop("event", "")))
    exc_info = event_dict.pop("exc_info", None)
    stack_info = event_dict.pop("stack_info", False)
    fields = {key: _redacted(value) for key, value in event_dict.items()}
    message = " ".join([event, *(f"{key}={value}" for key, value in fields.items())])
    return (message,), {"exc_info": exc_info, "stack_info": stack_info, "stacklevel": 4,
                        "extra": {EVENT_ATTRIBUTE: event, FIELDS_ATTRIBUTE: fields}}


@functools.cache
def _library_processors() -> list[Processor]:
    import structlog

    return [
        structlog.stdlib.filter_by_level,  # first: a line below the level costs next to nothing
        structlog.contextvars.merge_contextvars,
        _to_logging_call,
    ]


def get_logger(name: str) -> Any:
    """A module's logger: structlog's interface, stdlib `logging` underneath (named `name`).
    structlog (and the asyncio it imports) is imported with the first line the logger makes at
    a level `logging` lets through, not with this module nor with the modules that call this at
    import: `zkconsumer --help`, and a worker whose level shows nothing, start without it."""
    return _Logger(name)


# A level method called before the logger is made, at a level `logging` drops: nothing to do.
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR, "exception": logging.ERROR, "critical": logging.CRITICAL}


def _dropped(*_args: Any, **_fields: Any) -> None:
    return None


class _Logger:
    """What `get_logger` gives: the structlog logger, made on first use (with the fields bound
    before it was made)."""

    __slots__ = ("_name", "_fields", "_made")

    def __init__(self, name: str, fields: dict[str, Any] | None = None) -> None:
        self._name = name
        self._fields = fields or {}
        self._made: Any = None
        logging.getLogger(name).addFilter(_REDACTING_FILTER)

    def bind(self, **fields: Any) -> Any:
        if self._made is not None:
            return self._made.bind(**fields)
        return _Logger(self._name, {**self._fields, **fields})

    def __getattr__(self, attribute: str) -> Any:
        made = self._made
        if made is None:
            level = _LEVELS.get(attribute)
            if level is not None and not logging.getLogger(self._name).isEnabledFor(level):
                return _dropped
            made = _structlog_logger(self._name)
            self._made = made = made.bind(**self._fields) if self._fields else made
        return getattr(made, attribute)


def _structlog_logger(name: str) -> Any:
    import structlog

    return structlog.wrap_logger(logging.getLogger(name), processors=_library_processors(),
                                 wrapper_class=structlog.stdlib.BoundLogger,
                                 cache_logger_on_first_use=True)


def _lift_fields(_logger: Any, _method: str, event_dict: EventDict) -> EventDict:
    """For the CLI's renderer: a line of ours back into its event and fields; another library's
    line named by its logger."""
    record = event_dict["_record"]
    fields = getattr(record, FIELDS_ATTRIBUTE, None)
    if fields is None:
        event_dict["logger"] = record.name
    else:
        event_dict["event"] = getattr(record, EVENT_ATTRIBUTE)
        event_dict.update(fields)
    return event_dict


def _redacting_formatter(**settings: Any) -> logging.Formatter:
    import structlog

    class _RedactingFormatter(structlog.stdlib.ProcessorFormatter):
        def format(self, record: logging.LogRecord) -> str:
            return redact(super().format(record))

    return _RedactingFormatter(**settings)


def _cli_formatter(log_format: str) -> logging.Formatter:
    import structlog

    # JSON cannot hold a traceback object: the exception becomes text first.
    renderers: list[Processor] = (
        [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
        if log_format == "json" else [structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())])
    return _redacting_formatter(
        foreign_pre_chain=[_lift_fields, structlog.processors.add_log_level,
                           structlog.processors.TimeStamper(fmt="iso", utc=True)],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *renderers],
    )


class _FormatterOnFirstLine(logging.Formatter):
    """The CLI's formatter, made (structlog imported) when the first line is shown. The handler
    formats under its own lock, so the formatter is made once."""

    def __init__(self, log_format: str) -> None:
        super().__init__()
        self._log_format = log_format
        self._made: logging.Formatter | None = None

    def format(self, record: logging.LogRecord) -> str:
        if self._made is None:
            self._made = _cli_formatter(self._log_format)
        return self._made.format(record)


def configure_logging(log_format: str = "console", level: str = "info") -> None:
    """The CLI's set-up: every line, zkconsumer's and its libraries', to stderr, keeping stdout
    for data output."""
    numeric_level = getattr(logging, level.upper())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_FormatterOnFirstLine(log_format))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric_level)
    # kazoo and kafka-python warn on every reconnect attempt; zkconsumer logs connection state
    # itself, once per change, so their chatter is only shown when debugging. kafka-python
    # logs its own retries at error level too ("Bootstrap failed", a refused connection), each
    # of which zkconsumer reports in its own line when it matters, so only its critical lines
    # are left.
    debugging = numeric_level <= logging.DEBUG
    logging.getLogger("kazoo").setLevel(numeric_level if debugging else logging.ERROR)
    logging.getLogger("kafka").setLevel(numeric_level if debugging else logging.CRITICAL)

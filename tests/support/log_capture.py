"""zkconsumer's log lines as dicts, for tests that check what was logged."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from zkconsumer.logs import EVENT_ATTRIBUTE, FIELDS_ATTRIBUTE


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.entries: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        fields = getattr(record, FIELDS_ATTRIBUTE, None)
        if fields is not None:
            self.entries.append({"event": getattr(record, EVENT_ATTRIBUTE),
                                 "log_level": record.levelname.lower(), **fields})


@contextmanager
def captured_logs() -> Iterator[list[dict]]:
    """Every line zkconsumer logs meanwhile, debug included: `{"event", "log_level", fields}`."""
    logger = logging.getLogger("zkconsumer")
    collector = _Collector()
    level = logger.level
    logger.addHandler(collector)
    logger.setLevel(logging.DEBUG)
    try:
        yield collector.entries
    finally:
        logger.removeHandler(collector)
        logger.setLevel(level)

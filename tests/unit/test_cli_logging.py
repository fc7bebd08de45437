"""The CLI's log set-up: zkconsumer's lines on stderr, the libraries' retry chatter kept out."""

from __future__ import annotations

import logging

import pytest

from zkconsumer.logs import configure_logging, get_logger


@pytest.fixture
def restored_logging():
    root = logging.getLogger()
    saved = (root.handlers[:], root.level,
             {name: logging.getLogger(name).level for name in ("kazoo", "kafka")})
    yield
    root.handlers[:], root.level = saved[0], saved[1]
    for name, level in saved[2].items():
        logging.getLogger(name).setLevel(level)


def test_kafka_python_retry_errors_are_left_out_at_the_default_level(restored_logging, capsys):
    configure_logging("console", "info")
    logging.getLogger("kafka.conn").error("Connect attempt to <BrokerConnection> returned error")
    logging.getLogger("kafka.client").error("Bootstrap failed: Unable to bootstrap")
    get_logger("zkconsumer.member").error("cannot connect to Kafka", broker="k:9092")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "cannot connect to Kafka" in lines[0]


def test_when_debugging_every_library_line_is_shown(restored_logging, capsys):
    configure_logging("console", "debug")
    logging.getLogger("kafka.conn").error("Connect attempt returned error")
    logging.getLogger("kazoo.client").debug("Sending request")
    err = capsys.readouterr().err
    assert "Connect attempt returned error" in err and "Sending request" in err

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


def test_fields_bound_before_the_first_line_are_on_every_line(restored_logging, capsys):
    configure_logging("json", "info")
    log = get_logger("zkconsumer.test_bound").bind(group="g1")
    log.info("first", n=1)
    log.bind(member="m1").warning("second")
    lines = capsys.readouterr().err.splitlines()
    assert ['"group": "g1"' in line for line in lines] == [True, True]
    assert '"n": 1' in lines[0] and '"member": "m1"' in lines[1]


def test_a_worker_whose_level_shows_nothing_never_imports_structlog():
    """The loggers and the CLI's handler make structlog's parts with the first line shown."""
    import subprocess
    import sys

    code = ("import logging, sys\n"
            "from zkconsumer.logs import configure_logging, get_logger\n"
            "configure_logging('console', 'warning')\n"
            "log = get_logger('zkconsumer.quiet').bind(group='g')\n"
            "log.info('not shown'); log.debug('nor this')\n"
            "print('structlog' in sys.modules)\n"
            "log.warning('shown')\n"
            "print('structlog' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.split() == ["False", "True"]
    assert "shown" in done.stderr and "not shown" not in done.stderr and "group=g" in done.stderr

"""zkconsumer embedded in an application: its lines go where the application's `logging` set-up
sends them, never to stdout, and never with a credential in them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.kafka import produce

pytestmark = pytest.mark.integration

PASSWORD = "s3cret-Pa55"

_APPLICATION = """
import json, logging, sys
from zkconsumer import ConsumerConnector, ConsumerTimeout
from zkconsumer.logs import get_logger

zookeeper, group, topic, handler = sys.argv[1:]
if handler == "json":
    class JsonLines(logging.Formatter):
        def format(self, record):
            return json.dumps({"logger": record.name, "level": record.levelname,
                               "message": record.getMessage(),
                               "fields": getattr(record, "zkconsumer_fields", {})}, default=str)
    to_stderr = logging.StreamHandler(sys.stderr)
    to_stderr.setFormatter(JsonLines())
    logging.basicConfig(level=logging.INFO, handlers=[to_stderr])
    logging.getLogger("kazoo.client").setLevel(logging.DEBUG)  # its requests, Auth included
config = {"zookeeper.connect": zookeeper, "group.id": group, "auto.offset.reset": "smallest",
          "consumer.timeout.ms": "2000", "zookeeper.auth.digest": "app:%s"}
with ConsumerConnector(config) as connector:
    get_logger("zkconsumer.application").info("joined", digest=config["zookeeper.auth.digest"])
    (stream,) = connector.create_message_streams({topic: 1})[topic]
    try:
        for message in stream:
            print(message.value.decode())
    except ConsumerTimeout:
        pass
""" % PASSWORD


def _run_application(cluster, group: str, topic: str, handler: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _APPLICATION, cluster.zookeeper_connect, group, topic, handler],
        capture_output=True, text=True, timeout=120, check=True)


def test_with_no_logging_configured_stdout_holds_only_the_applications_output(
        cluster, zk, topic_factory, unique_name):
    topic = topic_factory(partitions=2)
    values = [f"v{i}" for i in range(10)]
    produce(cluster, topic, [v.encode() for v in values], partitions=2)
    run = _run_application(cluster, unique_name("quiet"), topic, "none")
    assert sorted(run.stdout.split()) == sorted(values)
    assert "registered" not in run.stderr  # info lines are the application's to enable


def test_the_applications_json_handler_gets_the_members_lines_with_credentials_redacted(
        cluster, zk, topic_factory, unique_name):
    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"one", b"two"], partitions=1)
    run = _run_application(cluster, unique_name("json"), topic, "json")
    assert run.stdout.split() == ["one", "two"]
    lines = [json.loads(line) for line in run.stderr.splitlines() if line.startswith("{")]
    registered = [line for line in lines if line["message"].startswith("registered")]
    assert registered and registered[0]["logger"] == "zkconsumer.member.zk_membership"
    assert registered[0]["fields"]["consumer_id"] in registered[0]["message"]
    (joined,) = [line for line in lines if line["message"].startswith("joined")]
    assert joined["fields"]["digest"] == "***"  # the whole "user:password" is a secret
    auths = [line["message"] for line in lines
             if line["logger"] == "kazoo.client" and "Auth(" in line["message"]]
    assert auths and all("auth='***'" in auth for auth in auths)  # kazoo's, not ours
    assert PASSWORD not in run.stderr

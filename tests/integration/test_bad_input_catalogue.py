"""The bad-input catalogue: every entry is one bad input a user or a foreign tool can produce.

Each case runs the real CLI (in-process) inside a private ZooKeeper chroot holding a copy of the
cluster's broker and topic registrations and a group with committed offsets, and checks three
things: a non-zero exit with one clear line naming the bad value and where it came from, no
traceback, and not one znode changed.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field

import pytest
from click.testing import CliRunner

from zkconsumer.cli import cli
from zkconsumer.errors import ConfigError
from zkconsumer.localcluster.processes import free_port
from zkconsumer.spark.options import SourceOptions
from zkconsumer.znodes.paths import GroupPaths

pytestmark = pytest.mark.integration

GROUP = "catalogue"
TOPIC_ALIAS = "events"


@dataclass
class Sandbox:
    zk: object
    zk_connect: str
    root: str
    topic: str
    api_version: str | None
    files: dict = field(default_factory=dict)

    @property
    def connect(self) -> str:
        return self.zk_connect + self.root

    def put(self, path: str, data: bytes) -> None:
        self.zk.ensure_path(self.root + path.rsplit("/", 1)[0])
        if self.zk.exists(self.root + path):
            self.zk.set(self.root + path, data)
        else:
            self.zk.create(self.root + path, data)

    def snapshot(self) -> dict[str, bytes]:
        found = {}

        def walk(path: str) -> None:
            data, stat = self.zk.get(path)
            if not stat.ephemeralOwner:
                found[path] = data
            for child in self.zk.get_children(path):
                walk(f"{path.rstrip('/')}/{child}")

        walk(self.root)
        return found


@pytest.fixture
def sandbox(cluster, zk, topic_factory, tmp_path):
    """A chroot with the real brokers and one real topic (so fetching works) and a group."""
    topic = topic_factory(partitions=2)
    root = f"/catalogue-{uuid.uuid4().hex[:8]}"
    box = Sandbox(zk, cluster.zookeeper_connect, root, topic,
                  ".".join(map(str, cluster.kafka_api_version))
                  if cluster.kafka_api_version else None)
    for broker in zk.get_children("/brokers/ids"):
        box.put(f"/brokers/ids/{broker}", zk.get(f"/brokers/ids/{broker}")[0])
    box.put(f"/brokers/topics/{topic}", zk.get(f"/brokers/topics/{topic}")[0])
    paths = GroupPaths(GROUP)
    box.put(paths.offset(topic, 0), b"3")
    box.put(paths.offset(topic, 1), b"4")
    zk.ensure_path(root + paths.ids)
    zk.ensure_path(root + paths.owners_topic(topic))
    box.files["dir"] = tmp_path
    yield box
    zk.delete(root, recursive=True)


def _file(box: Sandbox, name: str, text: str) -> str:
    path = box.files["dir"] / name
    path.write_text(text)
    return str(path)


def _consume(box: Sandbox, *extra: str) -> list[str]:
    args = ["consume", "--zookeeper", box.connect, "--group", GROUP, "--max-messages", "1",
            "--property", "zookeeper.connection.timeout.ms=3000"]
    if box.api_version:
        args += ["--property", f"kafka.api.version={box.api_version}"]
    if not any(a in extra for a in ("--topic", "--whitelist", "--blacklist")):
        args += ["--topic", box.topic]
    return args + list(extra)


def _admin(box: Sandbox, *args: str) -> list[str]:
    return [*args, "--zookeeper", box.connect]


# (case id, how to build the command from the sandbox, what the one error line must contain)
CASES = [
    # config files and --property values
    ("config-file-bad-number", lambda b: _consume(b, "--consumer-config", _file(
        b, "c.properties", "# ours\nrebalance.max.retries=zero\n")),
     ["rebalance.max.retries", "'zero'", "c.properties line 2"]),
    ("config-file-bad-choice", lambda b: _consume(b, "--consumer-config", _file(
        b, "d.properties", "auto.offset.reset=sometimes\n")),
     ["auto.offset.reset", "'sometimes'", "d.properties line 1"]),
    ("fetch-wait-above-socket-timeout", lambda b: _consume(
        b, "--property", "fetch.wait.max.ms=50000"), ["fetch.wait.max.ms", "socket.timeout.ms"]),
    ("unknown-strategy", lambda b: _consume(b, "--property", "partition.assignment.strategy=sticky"),
     ["partition.assignment.strategy", "'sticky'"]),
    ("illegal-group-name", lambda b: ["consume", "--zookeeper", b.connect, "--group", "bad/name",
                                      "--topic", b.topic], ["group.id", "'bad/name'"]),
    ("unknown-kafka-option", lambda b: _consume(b, "--property", "kafka.no.such.option=1"),
     ["kafka.no.such.option", "not a kafka-python consumer option"]),
    ("kafka-option-taking-over-the-group", lambda b: _consume(b, "--property", "kafka.group_id=x"),
     ["kafka.group_id", "set by zkconsumer itself"]),
    ("kafka-option-wrong-type", lambda b: _consume(b, "--property", "kafka.reconnect.backoff.ms=soon"),
     ["kafka.reconnect.backoff.ms", "'soon'", "must be a number"]),
    ("zookeeper-digest-without-password", lambda b: _consume(
        b, "--property", "zookeeper.auth.digest=justauser"),
     ["zookeeper.auth.digest", "<hidden>", "user:password"]),
    ("property-without-equals", lambda b: _consume(b, "--property", "group.id"),
     ["--property", "key=value"]),
    ("bad-connect-string", lambda b: ["consume", "--zookeeper", "zk1:notaport", "--group", GROUP,
                                      "--topic", b.topic], ["zookeeper.connect", "zk1:notaport"]),
    ("bad-whitelist-regex", lambda b: _consume(b, "--whitelist", "events(("), ["events(("]),
    ("handler-not-found", lambda b: _consume(b, "--handler", "no_such_module:handle"),
     ["--handler", "no_such_module:handle"]),
    ("unreachable-zookeeper", lambda b: ["consume", "--zookeeper", f"127.0.0.1:{free_port()}",
                                         "--group", GROUP, "--topic", b.topic, "--property",
                                         "zookeeper.connection.timeout.ms=1500"],
     ["cannot reach ZooKeeper", "1.5s"]),
    # znode contents written by others
    ("foreign-registration-not-json", lambda b: (
        b.put(GroupPaths(GROUP).member(f"{GROUP}_other-1"), b"{not json"), _consume(b))[1],
     [f"/consumers/{GROUP}/ids/{GROUP}_other-1"]),
    ("foreign-registration-unknown-pattern", lambda b: (
        b.put(GroupPaths(GROUP).member(f"{GROUP}_other-2"),
              b'{"version":1,"subscription":{"x":1},"pattern":"sideways"}'), _consume(b))[1],
     [f"{GROUP}_other-2", "pattern", "sideways"]),
    ("non-numeric-offset", lambda b: (
        b.put(GroupPaths(GROUP).offset(b.topic, 1), b"twelve"), _consume(b))[1],
     [f"/consumers/{GROUP}/offsets/", "/1", "'twelve'"]),
    ("broker-registration-not-json", lambda b: (
        b.put("/brokers/ids/77", b"]["), _admin(b, "inspect"))[1], ["/brokers/ids/77"]),
    ("topic-registration-bad-partitions", lambda b: (
        b.put("/brokers/topics/broken", b'{"version":1,"partitions":{"zero":[0]}}'),
        _admin(b, "inspect"))[1], ["/brokers/topics/broken"]),
    # offset files
    ("import-garbage-line", lambda b: _admin(b, "offsets", "import", "--input", _file(
        b, "o.txt", f"/consumers/{GROUP}/offsets/{b.topic}/0:9\nhello\n")), ["o.txt line 2"]),
    ("import-negative-partition", lambda b: _admin(b, "offsets", "import", "--input", _file(
        b, "n.txt", f"/consumers/{GROUP}/offsets/{b.topic}/-1:9\n")), ["n.txt line 1"]),
    ("import-duplicate-partition", lambda b: _admin(b, "offsets", "import", "--input", _file(
        b, "p.txt", f"/consumers/{GROUP}/offsets/{b.topic}/0:9\n"
                    f"/consumers/{GROUP}/offsets/{b.topic}/0:10\n")), ["appears twice"]),
    ("import-json-wrong-version", lambda b: _admin(b, "offsets", "import", "--input", _file(
        b, "v.json", json.dumps({"version": 7, "offsets": []}))), ["v.json", "version 7"]),
    ("import-json-offset-as-text", lambda b: _admin(b, "offsets", "import", "--input", _file(
        b, "t.json", json.dumps({"version": 1, "offsets": [
            {"group": GROUP, "topic": b.topic, "partition": 0, "offset": "9"}]}))),
     ["t.json", "wrong type"]),
    # administration arguments
    ("reset-two-modes", lambda b: _admin(b, "offsets", "reset", "--group", GROUP, "--to-earliest",
                                         "--to-offset", "3"), ["exactly one of"]),
    ("reset-bad-datetime", lambda b: _admin(b, "offsets", "reset", "--group", GROUP,
                                            "--to-datetime", "yesterday"), ["'yesterday'"]),
    ("migrate-without-groups", lambda b: _admin(b, "offsets", "migrate", "--to", "kafka"),
     ["--group", "--all"]),
    ("describe-unknown-group", lambda b: _admin(b, "group", "describe", "--group", "nobody"),
     ["no group nobody"]),
    ("property-for-admin-not-kafka", lambda b: _admin(b, "group", "list", "--property",
                                                      "group.id=x"), ["--property", "kafka."]),
    ("status-window-not-a-duration", lambda b: _admin(b, "group", "list", "--status-window",
                                                      "a while"), ["'a while'", "duration"]),
    # the lag exporter
    ("exporter-interval-not-a-duration", lambda b: _admin(b, "exporter", "--interval", "soon"),
     ["'soon' is not a duration"]),
    ("exporter-bad-group-regex", lambda b: _admin(b, "exporter", "--group-regex", "orders(("),
     ["'orders(('", "not a regular expression"]),
    ("exporter-property-not-kafka", lambda b: _admin(b, "exporter", "--property", "group.id=x"),
     ["--property", "kafka."]),
]


@pytest.mark.parametrize(("command", "expected"), [(c[1], c[2]) for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_line_and_writes_nothing(sandbox, command, expected):
    args = command(sandbox)
    before = sandbox.snapshot()
    result = CliRunner().invoke(cli, args)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code != 0, result.stdout
    assert isinstance(result.exception, SystemExit), f"unhandled: {result.exception!r}"
    message = lines[-1] if lines else ""
    assert message.lower().startswith(("error:", "usage:", "try ")) or "Error:" in message, message
    for fragment in expected:
        assert fragment in result.stderr, f"{fragment!r} missing from {result.stderr!r}"
    assert sandbox.snapshot() == before, "a failed command changed ZooKeeper"


@pytest.mark.parametrize(("options", "named"), [
    ({"group.id": "g", "topics": "t"}, "zookeeper.connect"),
    ({"zookeeper.connect": "z:1", "group.id": "g", "topics": "t", "startingOffsets": "{\"t\": 5}"},
     "startingOffsets"),
    ({"zookeeper.connect": "z:1", "group.id": "g", "topics": "t", "maxOffsetsPerTrigger": "lots"},
     "maxOffsetsPerTrigger"),
], ids=["spark-missing-zookeeper", "spark-malformed-offsets-json", "spark-bad-trigger-limit"])
def test_bad_spark_options_name_the_option(options, named):
    with pytest.raises(ConfigError, match=named) as raised:
        SourceOptions.parse(options)
    assert "Spark option" in str(raised.value) or named == "zookeeper.connect"


def test_the_catalogue_has_at_least_25_distinct_inputs():
    assert len({c[0] for c in CASES}) + 3 >= 25

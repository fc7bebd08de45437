"""Hostile znode data met by the commands that read a group: a member joining it, `group
describe` (text and JSON) and `group list`. Each registration below is one no member writes
(JSON nested 100,000 deep, a topic name that is a path, a stream count of 2^31-1 that every
member would turn into thread ids, bytes that are not UTF-8, a JSON escape of a lone UTF-16
surrogate that no encoder can write back); each must end in one clear line naming the znode,
never a traceback, a hang or a member exhausting its memory."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from support.chroots import private_chroot

from zkconsumer.cli import cli
from zkconsumer.znodes.paths import GroupPaths, broker_path, topic_path

pytestmark = pytest.mark.integration

GROUP = "hostile"
MEMBER = f"{GROUP}_elsewhere-1700000000000-0badf00d"
REGISTRATIONS = {
    "nested-100000-deep": b'{"version":1,"pattern":"static","subscription":'
                          + b'{"t":' * 100_000 + b"1" + b"}" * 100_001,
    "topic-name-a-path": b'{"version":1,"pattern":"static","subscription":{"../../x":1}}',
    "streams-2^31-1": b'{"version":1,"pattern":"static","subscription":{"t":2147483647}}',
    "not-utf8": b'{"version":1,"pattern":"static","subscription":{"\xff\xfe":1}}',
    "lone-surrogate": b'{"version":1,"pattern":"white_list","subscription":{"t.*\\udc80":1}}',
}


@pytest.fixture
def sandbox(cluster, zk, topic_factory):
    """A chroot with the real brokers and one real topic, whose group holds committed offsets;
    the test adds a member registration."""
    topic = topic_factory(partitions=2)
    with private_chroot(cluster, zk, "hostile-znodes") as chroot:
        for broker in zk.get_children("/brokers/ids"):
            chroot.zk.create(broker_path(int(broker)), zk.get(broker_path(int(broker)))[0],
                             makepath=True)
        chroot.zk.create(topic_path(topic), zk.get(topic_path(topic))[0], makepath=True)
        for partition in range(2):
            chroot.zk.create(GroupPaths(GROUP).offset(topic, partition), b"0", makepath=True)
        yield chroot, topic


def run(*args: str):
    result = CliRunner().invoke(cli, list(args))
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert isinstance(result.exception, (SystemExit, type(None))), \
        f"unhandled: {result.exception!r}"
    return result.exit_code, lines


@pytest.mark.parametrize("registration", REGISTRATIONS.values(), ids=REGISTRATIONS.keys())
def test_a_hostile_registration_is_one_line_naming_it(cluster, sandbox, registration):
    chroot, topic = sandbox
    path = GroupPaths(GROUP).member(MEMBER)
    chroot.zk.create(path, registration, makepath=True)
    api_version = (["--property", "kafka.api.version="
                    + ".".join(map(str, cluster.kafka_api_version))]
                   if cluster.kafka_api_version else [])

    code, lines = run("consume", "--zookeeper", chroot.connect_string, "--group", GROUP,
                      "--topic", topic, "--max-messages", "1", *api_version)
    assert code == 1, lines
    assert lines[-1].startswith("error: ") and path in lines[-1], lines

    for output in ([], ["--json"]):
        code, lines = run("group", "describe", "--zookeeper", chroot.connect_string,
                          "--group", GROUP, *output)
        assert code == 1, lines
        assert len(lines) == 1 and lines[0].startswith("error: ") and path in lines[0], lines

    code, lines = run("group", "list", "--zookeeper", chroot.connect_string)
    assert code == 0, lines
    assert any(line.startswith(f"note: group {GROUP} is listed without figures")
               and path in line for line in lines), lines

    assert chroot.zk.get_children(GroupPaths(GROUP).ids) == [MEMBER], \
        "the failed member left its registration behind"

"""A member whose broker sends a corrupt record batch, with another member beside it.

Two `zkconsumer consume` processes share a group in a ZooKeeper chroot. The healthy one
reaches the real broker through `--bootstrap-server`; the other finds, in the chroot's broker
registry, only a fake broker (`support.hostile_broker`) whose every fetch answer is a corrupt
batch. Issue 24's rule: the member that reads one fails loudly (exit status 1, one `error:`
line naming topic, partition and offset, no death by a signal), commits what it consumed,
releases its partitions and deregisters; the healthy member takes everything over and goes on
consuming, from where the group had committed.
"""

from __future__ import annotations

import re

import pytest
from support.chroots import private_chroot
from support.hostile_broker import (
    HostileBroker,
    batch_with_huge_record_length,
    control_batch_with_huge_header_key,
)
from support.kafka import produce
from support.ownership import settled_ownership
from support.waiting import wait_until

from zkconsumer.assignment import consumer_of_thread
from zkconsumer.testing.consume_process import ConsumeProcess
from zkconsumer.zk.group_state import read_members, read_owners
from zkconsumer.znodes.brokers import BrokerRegistration, Endpoint
from zkconsumer.znodes.paths import GroupPaths, broker_path, topic_path

pytestmark = pytest.mark.integration

PARTITIONS = 4
COMMITTED = 1  # the group's offset in every partition: past the first message


@pytest.fixture
def chroot(cluster, zk):
    with private_chroot(cluster, zk, "hostile-fetch") as inside:
        yield inside


@pytest.fixture
def processes():
    started: list[ConsumeProcess] = []
    yield started
    for process in started:
        process.stop()


def _api_version(cluster) -> list[str]:
    if not cluster.kafka_api_version:
        return []
    return ["--property", "kafka.api.version=" + ".".join(map(str, cluster.kafka_api_version))]


def _delivered(process: ConsumeProcess) -> set[tuple[int, int]]:
    return {(record["partition"], record["offset"]) for record in process.records()}


@pytest.mark.parametrize("corrupt", [control_batch_with_huge_header_key,
                                     batch_with_huge_record_length],
                         ids=["control-batch-header-key-2^34", "record-length-2^31-1"])
def test_a_member_fed_a_corrupt_batch_fails_alone_and_its_partitions_move_on(
        cluster, zk, chroot, processes, topic_factory, unique_name, tmp_path, corrupt):
    connect_string, inside = chroot.connect_string, chroot.zk
    topic = topic_factory(partitions=PARTITIONS)
    produce(cluster, topic, [b"before-%d" % i for i in range(2 * PARTITIONS)], PARTITIONS)
    group = unique_name("g")
    with HostileBroker(topic, PARTITIONS, corrupt) as broker:
        inside.create(broker_path(0), BrokerRegistration(
            4, "127.0.0.1", broker.port, (Endpoint("PLAINTEXT", "PLAINTEXT", "127.0.0.1",
                                                   broker.port),),
            {"PLAINTEXT": "PLAINTEXT"}).encode(), makepath=True)
        inside.create(topic_path(topic), zk.get(topic_path(topic))[0], makepath=True)
        for partition in range(PARTITIONS):
            inside.create(GroupPaths(group).offset(topic, partition), str(COMMITTED).encode(),
                          makepath=True)

        healthy = ConsumeProcess(connect_string, group, topic, tmp_path, "healthy",
                                 "--bootstrap-server", cluster.bootstrap_servers,
                                 *_api_version(cluster), from_beginning=False)
        processes.append(healthy)

        def healthy_alive() -> None:
            assert healthy.process.poll() is None, healthy.log_tail()

        settled_ownership(inside, group, [topic], 1, alive=healthy_alive)
        hostile = ConsumeProcess(connect_string, group, topic, tmp_path, "hostile",
                                 "--property", "isolation.level=read_committed",
                                 from_beginning=False)
        processes.append(hostile)

        status = hostile.process.wait(timeout=120)
        stderr = hostile.log.read_text(errors="replace")
        assert status == 1, f"exit status {status} (negative: killed by a signal)\n{stderr}"
        assert "Traceback" not in stderr
        errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1, stderr
        assert broker.served, "the member never fetched from the hostile broker"
        assert any(f"{topic}-{partition}" in errors[0]
                   and re.search(rf"\boffset {offset}\b", errors[0])
                   for partition, offset in broker.served), (errors[0], broker.served)
        logged = [line for line in hostile.log_lines() if line.get("level") == "error"]
        assert len(logged) == 1 and logged[0]["error"] in errors[0], logged
        left = hostile.log_events("left the group after the failure")
        assert left, "the member did not release its partitions and deregister"
        gone = hostile.consumer_id()
        assert gone not in read_members(inside, group)
        assert gone not in {consumer_of_thread(t) for t in read_owners(inside, group).values()}

    members, owners = settled_ownership(inside, group, [topic], 1, alive=healthy_alive)
    assert set(members) == {healthy.consumer_id()}
    assert {consumer_of_thread(thread) for thread in owners.values()} == set(members)

    produce(cluster, topic, [b"after-%d" % i for i in range(PARTITIONS)], PARTITIONS)
    wanted = {(p, offset) for p in range(PARTITIONS) for offset in (COMMITTED, 2)}
    wait_until(lambda: _delivered(healthy) >= wanted, timeout=60,
               message="the healthy member to consume every partition from the commit on")
    healthy_alive()
    assert healthy.terminate() == 0

"""The group member's protocol state against the fixture's broker (Kafka 0.9.0.1 locally), over
real sockets with a tiny blocking loop written here, and a kafka-python consumer in the same
group: the coordinator makes one of them the leader, and the two split the topic's partitions
as RangeAssignor does, whichever leads (the member computing the split, or kafka-python). The member then commits and reads back an offset in its
generation, and leaves, after which the other member is given every partition."""

from __future__ import annotations

import time

import pytest
from support.coordinator_members import PollingMember
from support.waiting import wait_until

from zkconsumer.kafka.io.channel import BrokerChannel
from zkconsumer.kafka.protocol import codec
from zkconsumer.kafka.protocol.group_codec import (
    GROUP_IMPLEMENTED,
    LEGACY_GROUP_VERSIONS,
    GroupVersions,
    group_versions,
)
from zkconsumer.kafka.protocol.group_member import (
    Assigned,
    Committed,
    GroupMember,
    OffsetsFetched,
    State,
)
from zkconsumer.model import TopicPartition

pytestmark = pytest.mark.integration

PARTITIONS = 4
# Member ids begin with the client id, so these order the two members: kafka-python first.
THEIR_CLIENT_ID, OUR_CLIENT_ID = "a-kafka-python", "zk-group-member"


class _Driver:
    """The tiny I/O loop: one request at a time, on a connection to the coordinator or, to
    look it up, to the bootstrap broker; versions from ApiVersions, or 0.9's."""

    def __init__(self, cluster, member: GroupMember, topic: str) -> None:
        host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
        self._bootstrap = (host, int(port))
        self._legacy = (cluster.kafka_api_version is not None
                        and cluster.kafka_api_version < (0, 10))
        self._member = member
        self._topic = topic
        self._channels: dict[tuple[str, int], tuple[BrokerChannel, GroupVersions]] = {}
        self.led = False  # whether the coordinator made the member the group's leader

    def run_until(self, done, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            now = time.monotonic()
            assert now < deadline, f"the member is still {self._member.state.value}"
            self.step(now)

    def step(self, now: float) -> None:
        member = self._member
        member.expire(now)
        if member.topics_to_count():
            self.led = True
            member.assign({self._topic: PARTITIONS}, now)
        coordinator = member.coordinator
        address = (coordinator.host, coordinator.port) if coordinator else self._bootstrap
        channel, versions = self._channel(address)
        request = member.next_request(versions, now)
        if request is None:  # a timer runs (a heartbeat, a backoff): wait for it
            time.sleep(min(0.05, max(0.0, member.wait_until(now) - now)))
            return
        try:
            channel.send(request.api_key, request.version, request.body)
            payload = channel.receive(max(0.1, request.deadline - now))
        except Exception as exc:
            self._channels.pop(address, None)
            member.failed(request, str(exc), time.monotonic())
            return
        member.receive(request, payload, time.monotonic())

    def versions_spoken(self) -> list[GroupVersions]:
        return [versions for _, versions in self._channels.values()]

    def close(self) -> None:
        for channel, _ in self._channels.values():
            channel.close()

    def _channel(self, address: tuple[str, int]) -> tuple[BrokerChannel, GroupVersions]:
        if address not in self._channels:
            channel = BrokerChannel(*address, client_id=OUR_CLIENT_ID, timeout_s=10.0)
            versions = LEGACY_GROUP_VERSIONS
            if not self._legacy:
                offered = codec.decode_api_versions(channel.request(
                    codec.API_VERSIONS, 0, codec.API_VERSIONS_REQUEST))
                versions = group_versions(channel.address, offered)
            self._channels[address] = (channel, versions)
        return self._channels[address]


@pytest.mark.parametrize("we_lead", [pytest.param(True, id="our-member-leads"),
                                     pytest.param(False, id="kafka-python-leads")])
def test_a_member_and_a_kafka_python_consumer_split_the_partitions_by_range(
        cluster, topic_factory, unique_name, we_lead):
    """The first member in the group stays its leader through the next rebalance."""
    topic = topic_factory(partitions=PARTITIONS)
    group = unique_name("group-core")
    member = GroupMember(group, [topic], ("range",), session_timeout_ms=6000,
                         rebalance_timeout_ms=6000, heartbeat_interval_ms=300)
    driver = _Driver(cluster, member, topic)
    everything = {TopicPartition(topic, p) for p in range(PARTITIONS)}
    ours = {TopicPartition(topic, 2), TopicPartition(topic, 3)}
    theirs = None
    events: list = []
    try:
        if we_lead:
            member.start(time.monotonic())
            driver.run_until(lambda: member.assignment == everything, timeout=30)
            theirs = PollingMember(cluster, group, topic, THEIR_CLIENT_ID,
                                   enable_auto_commit=False)
        else:
            theirs = PollingMember(cluster, group, topic, THEIR_CLIENT_ID,
                                   enable_auto_commit=False)
            wait_until(lambda: theirs.owns({0, 1, 2, 3}), timeout=30,
                       message="kafka-python to own every partition")
            member.start(time.monotonic())
        driver.run_until(lambda: member.assignment == ours and theirs.owns({0, 1}), timeout=30)
        assert driver.led is we_lead
        events += member.next_events()
        assert [e.partitions for e in events if isinstance(e, Assigned)][-1] == ours
        assert all(member.may_deliver(tp, time.monotonic()) for tp in ours)

        partition = TopicPartition(topic, 2)
        assert member.commit({partition: 5}, time.monotonic()) == []
        driver.run_until(lambda: any(isinstance(e, Committed) for e in events)
                         or events.extend(member.next_events()), timeout=10)
        member.fetch_offsets([partition, TopicPartition(topic, 3)], time.monotonic())
        driver.run_until(lambda: any(isinstance(e, OffsetsFetched) for e in events)
                         or events.extend(member.next_events()), timeout=10)
        [fetched] = [e for e in events if isinstance(e, OffsetsFetched)]
        assert fetched.offsets == {partition: 5, TopicPartition(topic, 3): None}

        member.close(time.monotonic())
        driver.run_until(lambda: member.state is State.CLOSED, timeout=10)
        wait_until(lambda: theirs.owns({0, 1, 2, 3}), timeout=30,
                   message="kafka-python to own every partition again")
    finally:
        driver.close()
        if theirs is not None:
            theirs.close()


def test_the_member_negotiates_its_versions_with_a_modern_broker(modern_broker,
                                                                 modern_topic_factory,
                                                                 unique_name):
    """Tansu 0.6 (no ZooKeeper) answers ApiVersions: the newest versions implemented, flexible
    ones among them, are spoken, and the member leads a group of its own."""
    topic = modern_topic_factory(partitions=PARTITIONS)
    member = GroupMember(unique_name("group-core"), [topic], ("roundrobin", "range"),
                         session_timeout_ms=6000, rebalance_timeout_ms=6000,
                         heartbeat_interval_ms=300)
    driver = _Driver(_Modern(modern_broker.bootstrap_servers), member, topic)
    everything = {TopicPartition(topic, p) for p in range(PARTITIONS)}
    try:
        member.start(time.monotonic())
        driver.run_until(lambda: member.assignment == everything, timeout=30)
        assert driver.led
        events = member.next_events()
        assert member.commit({TopicPartition(topic, 1): 3}, time.monotonic()) == []
        driver.run_until(lambda: any(isinstance(e, Committed) for e in events)
                         or events.extend(member.next_events()), timeout=10)
        member.fetch_offsets([TopicPartition(topic, 1)], time.monotonic())
        driver.run_until(lambda: any(isinstance(e, OffsetsFetched) for e in events)
                         or events.extend(member.next_events()), timeout=10)
        assert [e.offsets for e in events if isinstance(e, OffsetsFetched)] == [
            {TopicPartition(topic, 1): 3}]
        newest = GroupVersions(*(high for _, high in GROUP_IMPLEMENTED.values()))
        assert driver.versions_spoken() == [newest]  # every one a flexible version
        member.close(time.monotonic())
        driver.run_until(lambda: member.state is State.CLOSED, timeout=10)
    finally:
        driver.close()


class _Modern:
    """The modern broker as the driver sees a cluster: answers ApiVersions."""

    kafka_api_version = None

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers

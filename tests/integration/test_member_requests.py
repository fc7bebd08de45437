"""What a member asks ZooKeeper, on a real server: the owner folder of a topic is made (or found)
once, not before every claim, and one removed by hand is made again; the cluster's topics are
listed only by a group with a filter member, and a topic's znode is read once per member."""

from __future__ import annotations

import traceback

import pytest
from kazoo.exceptions import NoNodeError
from support.waiting import wait_until

from zkconsumer.member.zk_membership import ZookeeperMembership
from zkconsumer.model import TopicPartition
from zkconsumer.zk.group_state import read_owners
from zkconsumer.zk.session import zookeeper_session
from zkconsumer.znodes.consumers import ConsumerRegistration
from zkconsumer.znodes.paths import GroupPaths

REGISTRATION = ConsumerRegistration.static({"t": 1}, 0)


def _owners(zk, group: str, topic: str) -> dict[TopicPartition, str]:
    """The topic's owners, read as the tools read them: an owner released between listing the
    folder and reading it is not an error."""
    return {tp: thread for tp, thread in read_owners(zk, group).items() if tp.topic == topic}


def _member(cluster, group: str, name: str):
    """A member of `group` with a fixed consumer id, reading from the start, its turn 0."""
    from zkconsumer import ConsumerConnector

    return ConsumerConnector({"zookeeper.connect": cluster.zookeeper_connect, "group.id": group,
                              "consumer.id": name, "auto.offset.reset": "smallest",
                              "rebalance.turn.ms": "0"})


def test_claims_make_a_topics_owner_folder_once_and_again_after_it_was_removed(
        cluster, zk, unique_name):
    group = unique_name("claims")
    paths = GroupPaths(group)
    thread = f"{group}_a-0"
    with zookeeper_session(cluster.zookeeper_connect) as client:
        ensured = []
        ensure = client.ensure_path
        client.ensure_path = lambda path, *args, **kwargs: (ensured.append(path),
                                                           ensure(path, *args, **kwargs))[1]
        member = ZookeeperMembership(client, group, f"{group}_a", REGISTRATION)
        member.register()

        for rounds in range(3):
            claims = {TopicPartition("t", rounds): thread}
            assert member.claim(claims) == []
            member.release(claims)
        assert ensured.count(paths.owners_topic("t")) == 1, ensured

        zk.delete(paths.owners_topic("t"))  # empty: every claim was released
        claims = {TopicPartition("t", 7): thread}
        with pytest.raises(NoNodeError):
            member.claim(claims)
        assert member.claim(claims) == []
        assert zk.get(paths.owner("t", 7))[0].decode() == thread
        assert ensured.count(paths.owners_topic("t")) == 2


def test_a_member_joining_a_group_asks_for_no_folder_it_just_made(
        cluster, zk, topic_factory, unique_name, monkeypatch):
    """Two members joining a group that exists, and the rebalances they cause: no request asks
    whether the registry of members exists, and a topic's owner folder is asked for once per
    member (the two that join; the first one's claims since ask for none), not once per
    claim; the topic's znode is read by its watch only."""
    from kazoo.client import KazooClient

    topic = topic_factory(partitions=4)
    group = unique_name("requests")
    paths = GroupPaths(group)
    asked: list[tuple[str, str]] = []
    by_watch: list[bool] = []  # each read of the topic's znode: whether a watch of it asked
    sent = KazooClient._call

    def counted(client, request, async_object):
        if client is not zk:  # the members' requests, not the test's own
            path = getattr(request, "path", "")
            asked.append((type(request).__name__, client.unchroot(path) if path else path))
            if path.startswith("/brokers/topics/"):
                by_watch.append(any(frame.filename.endswith("kazoo/recipe/watchers.py")
                                    for frame in traceback.extract_stack()))
        return sent(client, request, async_object)

    monkeypatch.setattr(KazooClient, "_call", counted)
    members = []
    try:
        for name in ("a", "b", "c"):
            member = _member(cluster, group, name)
            member.create_message_streams({topic: 1})
            members.append(member)
            if name == "a":
                wait_until(lambda: len(_owners(zk, group, topic)) == 4, timeout=60,
                           message="the first member owning every partition")
                asked.clear()  # the group is made: from here on, members join it
                by_watch.clear()
        wait_until(lambda: len(set(_owners(zk, group, topic).values())) == 3,
                   timeout=60, message="the partitions owned by all three members")
    finally:
        for member in members:
            member.shutdown()
    kinds = {(kind, path) for kind, path in asked}
    assert ("Exists", paths.ids) not in kinds
    # every member names its topic: none lists the cluster's topics
    assert not [kind for kind, path in asked if path == "/brokers/topics"], asked
    # the topic's znode is read by its watches only (once per joining member, and again after
    # a reconnection); the rebalances take it from there
    assert by_watch.count(True) >= 2 and not by_watch.count(False), by_watch
    owner_folder_asks = [1 for kind, path in asked
                         if kind == "Exists" and path == paths.owners_topic(topic)]
    assert len(owner_folder_asks) == 2, len(owner_folder_asks)


def test_a_member_that_names_its_topic_lists_the_topics_for_a_filter_member_of_its_group(
        cluster, zk, topic_factory, unique_name):
    """A static member computes its filter peer's subscription from every topic's name: it
    lists them once the peer is in the group, and the two split the topic as range deals it."""
    from zkconsumer.assignment.topic_filter import Whitelist

    topic = topic_factory(partitions=2)
    group = unique_name("mixed")
    named, filtered = _member(cluster, group, "a"), _member(cluster, group, "b")
    try:
        named.create_message_streams({topic: 1})
        filtered.create_message_streams_by_filter(Whitelist(topic), 1)
        wait_until(lambda: _owners(zk, group, topic) == {
            TopicPartition(topic, 0): f"{group}_a-0", TopicPartition(topic, 1): f"{group}_b-0"},
            timeout=60, message="each member owning its half of the topic")
    finally:
        named.shutdown()
        filtered.shutdown()


def test_members_settle_on_a_grown_topic_as_its_watch_read_it(cluster, zk, topic_factory,
                                                               unique_name):
    """A topic's watch reads the grown topic, and the members' next views take that read (the
    view reads it no more, see the test above): they settle on the new partition too, as range
    deals it."""
    from zkconsumer.localcluster import add_partition

    if cluster.local is None:
        pytest.skip("adding a partition needs the local cluster's controller")
    topic = topic_factory(partitions=2)
    group = unique_name("grown")
    members = [_member(cluster, group, name) for name in ("a", "b")]
    try:
        for member in members:
            member.create_message_streams({topic: 1})
        wait_until(lambda: set(_owners(zk, group, topic).values()) == {
            f"{group}_a-0", f"{group}_b-0"}, timeout=60, message="both members owning")
        new = add_partition(zk, topic)
        wait_until(lambda: _owners(zk, group, topic) == {
            TopicPartition(topic, 0): f"{group}_a-0", TopicPartition(topic, 1): f"{group}_a-0",
            TopicPartition(topic, new): f"{group}_b-0"},
            timeout=60, message="the grown topic dealt as range deals it")
    finally:
        for member in members:
            member.shutdown()

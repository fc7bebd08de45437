"""Reading a group's members and partition owners, decoded with the znode codecs.

Members and owners come and go while a group rebalances; a znode listed and then gone is simply
not part of the snapshot.
"""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from zkconsumer.model import TopicPartition
from zkconsumer.znodes.consumers import ConsumerRegistration, decode_owner
from zkconsumer.znodes.paths import GroupPaths, parse_partition_number


def _children(zk: KazooClient, path: str) -> list[str]:
    try:
        return zk.get_children(path)
    except NoNodeError:
        return []


def read_members(zk: KazooClient, group: str) -> dict[str, ConsumerRegistration]:
    """Registered consumer ids and their registrations, sorted by id."""
    paths = GroupPaths(group)
    members = {}
    for consumer_id in sorted(_children(zk, paths.ids)):
        path = paths.member(consumer_id)
        try:
            data, _ = zk.get(path)
        except NoNodeError:
            continue
        members[consumer_id] = ConsumerRegistration.decode(path, data)
    return members


def read_owners(zk: KazooClient, group: str) -> dict[TopicPartition, str]:
    """Every claimed partition of the group and the thread id that owns it."""
    paths = GroupPaths(group)
    owners = {}
    for topic in _children(zk, paths.owners):
        for name in _children(zk, paths.owners_topic(topic)):
            partition = parse_partition_number(name, f"{paths.owners_topic(topic)}/{name}")
            path = paths.owner(topic, partition)
            try:
                data, _ = zk.get(path)
            except NoNodeError:
                continue
            owners[TopicPartition(topic, partition)] = decode_owner(path, data)
    return dict(sorted(owners.items()))


def list_groups(zk: KazooClient) -> list[str]:
    return sorted(_children(zk, "/consumers"))


def committed_partitions(zk: KazooClient, group: str) -> list[TopicPartition]:
    """Partitions with an offset znode, whatever it holds (read it with the offset store)."""
    paths = GroupPaths(group)
    topics = sorted(_children(zk, paths.offsets))
    requests = [(topic, zk.get_children_async(paths.offsets_topic(topic))) for topic in topics]
    found = []
    for topic, request in requests:
        try:
            names = request.get()
        except NoNodeError:
            continue
        found.extend(TopicPartition(topic, parse_partition_number(
            name, f"{paths.offsets_topic(topic)}/{name}")) for name in names)
    return sorted(found)


def group_topics(zk: KazooClient, group: str) -> set[str]:
    """Topics the group has anything for: offsets, owners, or members subscribed by name."""
    paths = GroupPaths(group)
    topics = set(_children(zk, paths.offsets)) | set(_children(zk, paths.owners))
    for registration in read_members(zk, group).values():
        if not registration.is_wildcard:
            topics.update(registration.subscription)
    return topics

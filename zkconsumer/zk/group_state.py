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

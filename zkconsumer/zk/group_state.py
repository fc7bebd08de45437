"""Reading a group's members and partition owners, decoded with the znode codecs.

Members and owners come and go while a group rebalances; a znode listed and then gone is simply
not part of the snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat

from zkconsumer.lag.report import GroupState, ZookeeperOffset
from zkconsumer.model import TopicPartition
from zkconsumer.znodes.consumers import NO_OFFSET, ConsumerRegistration, decode_offset, decode_owner
from zkconsumer.znodes.paths import GroupPaths, parse_partition_number


def _children(zk: KazooClient, path: str) -> list[str]:
    try:
        return zk.get_children(path)
    except NoNodeError:
        return []


def _read_all(zk: KazooClient, paths: list[str]) -> dict[str, tuple[bytes, ZnodeStat]]:
    """The data and stat of every znode that still exists, all reads in flight at once: one
    round trip instead of one per znode, which is what makes a rebalance of many members fast."""
    requests = [(path, zk.get_async(path)) for path in paths]
    found = {}
    for path, request in requests:
        try:
            found[path] = request.get()
        except NoNodeError:
            continue
    return found


def read_members(zk: KazooClient, group: str,
                 known: Mapping[str, ConsumerRegistration] | None = None
                 ) -> dict[str, ConsumerRegistration]:
    """Registered consumer ids and their registrations, sorted by id. The registrations of
    ids in `known` are taken from there instead of read again (a member's registration does
    not change while its id stays registered)."""
    paths = GroupPaths(group)
    known = known or {}
    registered = sorted(_children(zk, paths.ids))
    ids = {paths.member(consumer_id): consumer_id for consumer_id in registered
           if consumer_id not in known}
    fresh = {ids[path]: ConsumerRegistration.decode(path, data)
             for path, (data, _stat) in _read_all(zk, list(ids)).items()}
    return {consumer_id: known.get(consumer_id) or fresh[consumer_id]
            for consumer_id in registered if consumer_id in known or consumer_id in fresh}


def read_owners(zk: KazooClient, group: str) -> dict[TopicPartition, str]:
    """Every claimed partition of the group and the thread id that owns it."""
    paths = GroupPaths(group)
    partitions = {}
    for topic in _children(zk, paths.owners):
        for name in _children(zk, paths.owners_topic(topic)):
            partition = parse_partition_number(name, f"{paths.owners_topic(topic)}/{name}")
            partitions[paths.owner(topic, partition)] = TopicPartition(topic, partition)
    owners = {partitions[path]: decode_owner(path, data)
              for path, (data, _stat) in _read_all(zk, list(partitions)).items()}
    return dict(sorted(owners.items()))


def list_groups(zk: KazooClient) -> list[str]:
    return sorted(_children(zk, "/consumers"))


def committed_partitions(zk: KazooClient, group: str) -> list[TopicPartition]:
    """Partitions with an offset znode, whatever it holds (read it with the offset store)."""
    paths = GroupPaths(group)
    topics = sorted(_children(zk, paths.offsets))
    requests = [(topic, zk.get_children_async(paths.offsets_topic(topic))) for topic in topics]
    found: list[TopicPartition] = []
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


def read_group_state(zk: KazooClient, group: str) -> GroupState:
    """Members, owners, and the committed offsets with the time each was last written."""
    paths = GroupPaths(group)
    offset_paths = {paths.offset(tp.topic, tp.partition): tp
                    for tp in committed_partitions(zk, group)}
    offsets = {}
    for path, (data, stat) in _read_all(zk, list(offset_paths)).items():
        offset = decode_offset(path, data)
        if offset != NO_OFFSET:
            offsets[offset_paths[path]] = ZookeeperOffset(offset, stat.mtime / 1000)
    return GroupState(group, read_members(zk, group), read_owners(zk, group), offsets)

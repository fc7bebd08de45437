"""A group's members, partition owners and committed offsets, read with a live client.

The walk itself (`group_walk`) is shared with the exporter's cache; here it reads through a
`KazooReader`, which keeps every level's reads in flight together, and raises ZnodeDataError
naming a znode that does not parse.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kazoo.exceptions import NoNodeError

from zkconsumer.errors import ZnodeDataError
from zkconsumer.lag.report import GroupState
from zkconsumer.logs import get_logger
from zkconsumer.model import TopicPartition
from zkconsumer.zk.group_walk import GroupWalk, Registered
from zkconsumer.zk.znode_reader import KazooReader
from zkconsumer.znodes.consumers import ConsumerRegistration
from zkconsumer.znodes.fence import Fence
from zkconsumer.znodes.paths import CONSUMERS, GroupPaths

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = get_logger(__name__)


def read_fence(zk: KazooClient, group: str) -> tuple[Fence | None, int | None]:
    """The group's cutover fence (None: none) and its znode's version, for a conditional write
    of the next one; ZnodeDataError if it does not parse."""
    path = GroupPaths(group).fence
    try:
        data, stat = zk.get(path)
    except NoNodeError:
        return None, None
    return Fence.decode(path, data), stat.version


def read_fences(zk: KazooClient, groups: Iterable[str]
                ) -> dict[str, Fence | ZnodeDataError | None]:
    """Each group's cutover fence (None: none), all read at once; a fence that does not parse
    is that group's ZnodeDataError, the others are read."""
    paths = {GroupPaths(group).fence: group for group in groups}
    nodes = KazooReader(zk).data(paths)
    fences: dict[str, Fence | ZnodeDataError | None] = {}
    for path, group in paths.items():
        try:
            fences[group] = Fence.decode(path, nodes[path].data) if path in nodes else None
        except ZnodeDataError as exc:
            fences[group] = exc
    return fences


def read_members(zk: KazooClient, group: str) -> dict[str, ConsumerRegistration]:
    """Registered consumer ids and their registrations, sorted by id."""
    return GroupWalk(KazooReader(zk)).members(GroupPaths(group))


def read_registered(zk: KazooClient, group: str, known: Mapping[str, Registered],
                    listed: Iterable[str] | None = None) -> dict[str, Registered]:
    """Registered consumer ids, each with its registration and session, sorted by id; those
    of ids in `known` are taken from there instead of read again. `listed`: the ids, when
    the caller read them (with a watch, say)."""
    return GroupWalk(KazooReader(zk)).registered(GroupPaths(group), known, listed)


def read_owners(zk: KazooClient, group: str) -> dict[TopicPartition, str]:
    """Every claimed partition of the group and the thread id that owns it."""
    return GroupWalk(KazooReader(zk)).owners(GroupPaths(group))


def list_groups(zk: KazooClient) -> list[str]:
    return sorted(KazooReader(zk).children([CONSUMERS]).get(CONSUMERS, []))


def committed_partitions(zk: KazooClient, group: str) -> list[TopicPartition]:
    """Partitions with an offset znode, whatever it holds (read it with the offset store)."""
    return GroupWalk(KazooReader(zk)).committed_partitions(GroupPaths(group))


def read_group_state(zk: KazooClient, group: str) -> GroupState:
    """Members, owners, and the committed offsets with the time each was last written."""
    return GroupWalk(KazooReader(zk)).state(GroupPaths(group))


def read_group_states(zk: KazooClient, groups: Iterable[str]
                      ) -> dict[str, GroupState | ZnodeDataError]:
    """`read_group_state` of every group, all read together (a few pipelined rounds for all of
    them, as the exporter's cache has them at hand): a group with a znode that does not parse
    gets the first such ZnodeDataError instead, the others are read."""
    groups = list(groups)
    malformed: dict[str, ZnodeDataError] = {}

    def note(error: ZnodeDataError) -> None:
        malformed.setdefault(error.path.removeprefix(f"{CONSUMERS}/").split("/")[0], error)

    states = GroupWalk(KazooReader(zk), note).states([GroupPaths(group) for group in groups])
    return {group: malformed.get(group, state) for group, state in zip(groups, states,
                                                                        strict=True)}


def group_topics(zk: KazooClient, group: str) -> set[str]:
    """What a command asks the brokers about when the group's topics are not named: every
    topic with a directory under offsets/ or owners/, whatever it holds, and those its members
    subscribe to by name. A stopped group that keeps its offsets in Kafka has nothing else in
    ZooKeeper: its owner znodes went with the members' sessions, their topic directories stay.
    A registration that does not parse is left out with a warning rather than raised, since it
    is no reason to withhold the group's other topics."""
    paths = GroupPaths(group)
    reader = KazooReader(zk)
    listed = reader.children([paths.offsets, paths.owners])
    topics = {topic for names in listed.values() for topic in names}
    for registration in GroupWalk(reader, _skipped).members(paths).values():
        if not registration.is_wildcard:
            topics.update(registration.subscription)
    return topics


def _skipped(error: ZnodeDataError) -> None:
    log.warning("skipping a znode that does not parse", path=error.path, error=error.reason)

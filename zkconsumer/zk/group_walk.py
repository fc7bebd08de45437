"""A group's znodes turned into its members, owners and offsets, over any `ZnodeReader`.

One walk serves the commands and members (a live client) and the exporter (its watch cache), so
that a group reads the same whichever way it is read. It asks for a level at a time (the group's
directories, their topics, then every znode's data), so that a live reader has one round trip
per level whatever the group's size.

A znode that does not parse is left out of the answer and handed to `on_malformed` with its
ZnodeDataError. The default raises it: a command or a member should stop and name the znode.
The exporter logs it instead, since a monitor has to go on reporting the rest of the cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import NamedTuple, TypeVar

from zkconsumer.errors import ZnodeDataError
from zkconsumer.lag.report import GroupState, ZookeeperOffset
from zkconsumer.model import TopicPartition
from zkconsumer.zk.znode_reader import Znode, ZnodeReader
from zkconsumer.znodes.consumers import NO_OFFSET, ConsumerRegistration, decode_offset, decode_owner
from zkconsumer.znodes.paths import GroupPaths, parse_partition_number

OnMalformed = Callable[[ZnodeDataError], None]
_T = TypeVar("_T")


def _raise_malformed(error: ZnodeDataError) -> None:
    raise error


class Registered(NamedTuple):
    """A member's registration and the session whose ephemeral znode holds it."""

    registration: ConsumerRegistration
    session: int


def registrations(registered: Mapping[str, Registered]) -> dict[str, ConsumerRegistration]:
    """The registrations alone, by consumer id."""
    return {consumer_id: found.registration for consumer_id, found in registered.items()}


class GroupWalk:
    def __init__(self, reader: ZnodeReader, on_malformed: OnMalformed = _raise_malformed) -> None:
        self._reader = reader
        self._on_malformed = on_malformed

    def state(self, paths: GroupPaths) -> GroupState:
        """Members, owners and committed offsets, read together level by level."""
        return self.states([paths])[0]

    def states(self, groups: Sequence[GroupPaths]) -> list[GroupState]:
        """`state` of every group, all read together level by level: a few round trips (or
        windows) for all of them, not a few per group."""
        listed = self._reader.children([path for paths in groups
                                        for path in (paths.ids, paths.owners, paths.offsets)])
        found = iter(self._partitions(listed, *(parent for paths in groups
                                                for parent in (paths.owners, paths.offsets))))
        walked = [(paths, listed.get(paths.ids, []), next(found), next(found))
                  for paths in groups]
        nodes = self._reader.data([path for paths, registered, owned, committed in walked
                                   for path in (*_member_paths(paths, registered, {}),
                                                *owned, *committed)])
        return [GroupState(paths.group, registrations(self._registered(paths, registered, nodes,
                                                                       {})),
                           self._owners(owned, nodes),
                           committed_offsets(nodes, committed, self._on_malformed))
                for paths, registered, owned, committed in walked]

    def members(self, paths: GroupPaths) -> dict[str, ConsumerRegistration]:
        return registrations(self.registered(paths, {}))

    def registered(self, paths: GroupPaths, known: Mapping[str, Registered],
                   listed: Iterable[str] | None = None) -> dict[str, Registered]:
        """Each registered id's registration and session, sorted by id. Those of ids in
        `known` are taken from there instead of read again (a member's registration does not
        change while its id stays registered in the same session). `listed`: the ids, when
        the caller read them already."""
        if listed is None:
            listed = self._reader.children([paths.ids]).get(paths.ids, [])
        return self._registered(paths, listed, self._reader.data(
            _member_paths(paths, listed, known)), known)

    def owners(self, paths: GroupPaths) -> dict[TopicPartition, str]:
        owned, = self._partitions(self._reader.children([paths.owners]), paths.owners)
        return self._owners(owned, self._reader.data(owned))

    def committed_partitions(self, paths: GroupPaths) -> list[TopicPartition]:
        committed, = self._partitions(self._reader.children([paths.offsets]), paths.offsets)
        return sorted(committed.values())

    def _partitions(self, listed: Mapping[str, list[str]], *parents: str
                    ) -> list[dict[str, TopicPartition]]:
        """The partition znodes under each parent (owners/, offsets/) by path, the topic
        directories of all parents listed at once."""
        directories = {f"{parent}/{topic}": (parent, topic)
                       for parent in parents for topic in listed.get(parent, [])}
        found: dict[str, dict[str, TopicPartition]] = {parent: {} for parent in parents}
        for directory, names in self._reader.children(directories).items():
            parent, topic = directories[directory]
            for name in names:
                path = f"{directory}/{name}"
                try:
                    found[parent][path] = TopicPartition(topic, parse_partition_number(name, path))
                except ZnodeDataError as error:
                    self._on_malformed(error)
        return [found[parent] for parent in parents]

    def _registered(self, paths: GroupPaths, listed: Iterable[str], nodes: Mapping[str, Znode],
                    known: Mapping[str, Registered]) -> dict[str, Registered]:
        registered = {}
        for consumer_id in sorted(listed):
            path = f"{paths.ids}/{consumer_id}"
            if consumer_id in known:
                registered[consumer_id] = known[consumer_id]
            elif path in nodes and (registration := _decoded(
                    path, ConsumerRegistration.decode, nodes[path].data,
                    self._on_malformed)) is not None:
                registered[consumer_id] = Registered(registration, nodes[path].session)
        return registered

    def _owners(self, owned: Mapping[str, TopicPartition], nodes: Mapping[str, Znode]
                ) -> dict[TopicPartition, str]:
        return dict(sorted((tp, owner) for path, tp in owned.items() if path in nodes
                           and (owner := _decoded(path, decode_owner, nodes[path].data,
                                                  self._on_malformed)) is not None))


def committed_offsets(nodes: Mapping[str, Znode], committed: Mapping[str, TopicPartition],
                      on_malformed: OnMalformed = _raise_malformed
                      ) -> dict[TopicPartition, ZookeeperOffset]:
    """The offsets in those `nodes` that are offset znodes (`committed` by path) and hold one:
    NO_OFFSET, which the reference's tools may write, says there is none."""
    offsets = {}
    for path, tp in committed.items():
        if path in nodes:
            offset = _decoded(path, decode_offset, nodes[path].data, on_malformed)
            if offset is not None and offset != NO_OFFSET:
                offsets[tp] = ZookeeperOffset(offset, nodes[path].mtime_s)
    return dict(sorted(offsets.items()))


def _member_paths(paths: GroupPaths, registered: Iterable[str],
                  known: Collection[str]) -> list[str]:
    return [f"{paths.ids}/{consumer_id}" for consumer_id in registered
            if consumer_id not in known]


def _decoded(path: str, decode: Callable[[str, bytes], _T], data: bytes,
             on_malformed: OnMalformed) -> _T | None:
    try:
        return decode(path, data)
    except ZnodeDataError as error:
        on_malformed(error)
        return None

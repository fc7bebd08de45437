"""A group's znodes walked into its state over a dict-backed reader: what is skipped, what is
raised, and that a whole group costs one read per level."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from zkconsumer.errors import ZnodeDataError
from zkconsumer.lag.report import ZookeeperOffset
from zkconsumer.model import TopicPartition
from zkconsumer.zk.group_walk import GroupWalk, Registered, committed_offsets
from zkconsumer.zk.znode_reader import Znode
from zkconsumer.znodes.consumers import ConsumerRegistration, encode_offset, encode_owner
from zkconsumer.znodes.paths import GroupPaths

PATHS = GroupPaths("g")
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
MEMBER = ConsumerRegistration.static({"t": 1}, 0)


class DictReader:
    """Znodes by path; `vanished` ones are still listed by their parent but gone when read,
    as when a member leaves between the walk's levels."""

    def __init__(self, znodes: dict[str, bytes], vanished: Iterable[str] = ()) -> None:
        self.znodes = {path: Znode(data, 100.0) for path, data in znodes.items()}
        self.vanished = set(vanished)
        self.calls: list[str] = []

    def children(self, parents: Iterable[str]) -> dict[str, list[str]]:
        self.calls.append("children")
        listed: dict[str, set[str]] = {}
        for path in [*self.znodes, *self.vanished]:
            while "/" in path.lstrip("/"):
                parent, name = path.rsplit("/", 1)
                listed.setdefault(parent, set()).add(name)
                path = parent
        return {parent: sorted(listed[parent]) for parent in parents if parent in listed}

    def data(self, paths: Iterable[str]) -> dict[str, Znode]:
        self.calls.append("data")
        return {path: self.znodes[path] for path in paths if path in self.znodes}


def group(**extra: bytes) -> dict[str, bytes]:
    return {PATHS.member("a"): MEMBER.encode(), PATHS.owner("t", 0): encode_owner("a-0"),
            PATHS.offset("t", 0): encode_offset(5), PATHS.offset("t", 1): encode_offset(7),
            **extra}


def test_a_group_is_read_in_one_request_per_level():
    reader = DictReader(group())
    state = GroupWalk(reader).state(PATHS)
    assert state.members == {"a": MEMBER}
    assert state.owners == {T0: "a-0"}
    assert state.zookeeper_offsets == {T0: ZookeeperOffset(5, 100.0),
                                       T1: ZookeeperOffset(7, 100.0)}
    assert reader.calls == ["children", "children", "data"]


def test_many_groups_are_read_together_in_one_request_per_level():
    """What `group list` reads: every group's state in the rounds one group costs, each
    group's malformed znode handed on with its path, the others read."""
    other = GroupPaths("h")
    reader = DictReader({**group(), other.offset("t", 0): encode_offset(9),
                         other.offset("t", 1): b"not an offset"})
    malformed: list[ZnodeDataError] = []
    first, second = GroupWalk(reader, malformed.append).states([PATHS, other])
    assert (first.name, second.name) == ("g", "h")
    assert first == GroupWalk(DictReader(group())).state(PATHS)
    assert second.zookeeper_offsets == {T0: ZookeeperOffset(9, 100.0)}
    assert [error.path for error in malformed] == [other.offset("t", 1)]
    assert reader.calls == ["children", "children", "data"]


def test_znodes_gone_between_listing_and_reading_are_not_part_of_the_state():
    reader = DictReader(group(), vanished=[PATHS.member("b"), PATHS.owner("t", 1),
                                           PATHS.offset("t", 2)])
    state = GroupWalk(reader).state(PATHS)
    assert list(state.members) == ["a"]
    assert list(state.owners) == [T0]
    assert list(state.zookeeper_offsets) == [T0, T1]


def test_a_group_with_nothing_under_it_is_empty():
    state = GroupWalk(DictReader({})).state(PATHS)
    assert (state.members, state.owners, state.zookeeper_offsets) == ({}, {}, {})


def test_an_offset_znode_saying_none_is_no_offset_but_its_partition_is_committed():
    reader = DictReader(group(**{PATHS.offset("t", 1): encode_offset(-1)}))
    assert list(GroupWalk(reader).state(PATHS).zookeeper_offsets) == [T0]
    assert GroupWalk(reader).committed_partitions(PATHS) == [T0, T1]


@pytest.mark.parametrize("path, data", [
    (PATHS.member("b"), b"{not json"),
    (PATHS.owner("t", 1), b""),
    (PATHS.offset("t", 2), b"seven"),
    (f"{PATHS.offsets}/t/01", encode_offset(1)),
], ids=["registration", "owner", "offset", "partition-name"])
def test_a_malformed_znode_is_raised_by_default_and_otherwise_skipped_and_told(path, data):
    reader = DictReader(group(**{path: data}))
    with pytest.raises(ZnodeDataError) as raised:
        GroupWalk(reader).state(PATHS)
    assert raised.value.path == path
    told: list[str] = []
    state = GroupWalk(reader, lambda error: told.append(error.path)).state(PATHS)
    assert told == [path]
    assert state == GroupWalk(DictReader(group())).state(PATHS)


def test_known_members_are_not_read_again():
    reader = DictReader(group(), vanished=[PATHS.member("b")])
    known = Registered(ConsumerRegistration.static({"other": 2}, 1), 7)
    assert GroupWalk(reader).registered(PATHS, {"b": known}) == {
        "a": Registered(MEMBER, 0), "b": known}


def test_each_registration_comes_with_the_session_that_holds_it():
    reader = DictReader(group())
    reader.znodes[PATHS.member("a")] = Znode(MEMBER.encode(), 100.0, 42)
    assert GroupWalk(reader).registered(PATHS, {}) == {"a": Registered(MEMBER, 42)}
    assert GroupWalk(reader).members(PATHS) == {"a": MEMBER}


def test_owners_alone():
    assert GroupWalk(DictReader(group())).owners(PATHS) == {T0: "a-0"}


def test_offsets_of_named_partitions_only():
    reader = DictReader(group())
    wanted = {PATHS.offset("t", 1): T1, PATHS.offset("t", 9): TopicPartition("t", 9)}
    assert committed_offsets(reader.data(wanted), wanted) == {T1: ZookeeperOffset(7, 100.0)}

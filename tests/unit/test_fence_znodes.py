"""The cutover fence and the fence-aware member znodes: round trips and hostile data."""

import pytest

from zkconsumer.errors import ZnodeDataError
from zkconsumer.znodes.fence import Fence, FenceAwareMember, FencePhase, OnFence
from zkconsumer.znodes.paths import GroupPaths


def test_a_fence_round_trips_and_moves_on_to_switched():
    fence = Fence("kafka", FencePhase.DRAINING, 1_800_000_000_000)
    assert Fence.decode("/f", fence.encode()) == fence
    assert not fence.switched
    assert fence.moved_on() == Fence("kafka", FencePhase.SWITCHED, 1_800_000_000_000)
    assert fence.moved_on().switched


def test_a_fence_aware_member_round_trips():
    member = FenceAwareMember("zookeeper", OnFence.EXIT)
    assert FenceAwareMember.decode("/m", member.encode()) == member


@pytest.mark.parametrize("data", [
    b"", b"\xff", b"[]", b'{"to":"kafka","phase":"draining","started":1}',
    b'{"version":2,"to":"kafka","phase":"draining","started":1}',
    b'{"version":1,"to":"etcd","phase":"draining","started":1}',
    b'{"version":1,"to":"kafka","phase":"done","started":1}',
    b'{"version":1,"to":"kafka","phase":"draining","started":-1}',
    b'{"version":1,"to":"kafka","phase":"draining","started":"1"}',
    b'{"version":1,"to":"kafka","phase":"draining","started":1e400}',
])
def test_a_malformed_fence_is_a_znode_data_error_naming_the_path(data):
    with pytest.raises(ZnodeDataError, match="/consumers/g/fence"):
        Fence.decode("/consumers/g/fence", data)


@pytest.mark.parametrize("data", [
    b'{"version":1,"coordination":"etcd","on_fence":"switch"}',
    b'{"version":1,"coordination":"kafka","on_fence":"stay"}',
    b'{"version":1,"coordination":"kafka"}',
])
def test_a_malformed_fence_aware_member_is_a_znode_data_error(data):
    with pytest.raises(ZnodeDataError, match="/m"):
        FenceAwareMember.decode("/m", data)


def test_the_fence_lives_beside_the_reference_znodes_of_the_group():
    paths = GroupPaths("g")
    assert paths.fence == "/consumers/g/fence"
    assert paths.fence_aware_member("g_h-1-abc") == "/consumers/g/fence-aware/g_h-1-abc"


def test_a_kafka_members_fence_marker_names_its_consumer_id_and_nothing_else_passes():
    from zkconsumer.znodes.fence import fence_marker, marked_consumer_id
    assert marked_consumer_id(fence_marker("g_h-1-abc")) == "g_h-1-abc"
    for other in (None, b"", b"zkconsumer-fence-aware:", b"zkconsumer-fence-aware:\xff", b"x"):
        assert marked_consumer_id(other) is None

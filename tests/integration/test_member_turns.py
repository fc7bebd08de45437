"""A member's turn after its group changed, on a real ZooKeeper: the registry of members tells
it once, it reads the registry again only in its turn (half the group's spread, then rank x
`rebalance.turn.ms`, its watch set by that read), so a burst of registrations is one read; a
member leaving does not wait."""

from __future__ import annotations

import threading
import time

from support.waiting import wait_until

from zkconsumer.member.zk_membership import ZookeeperMembership
from zkconsumer.testing.tcp_proxy import TcpProxy
from zkconsumer.zk.session import connect, zookeeper_session
from zkconsumer.znodes.consumers import ConsumerRegistration
from zkconsumer.znodes.paths import GroupPaths

REGISTRATION = ConsumerRegistration.static({"t": 1}, 0)


def _member(client, group: str, name: str, turn_ms: int) -> ZookeeperMembership:
    # The first read's place, drawn before the member is ranked, is the first one.
    member = ZookeeperMembership(client, group, f"{group}_{name}", REGISTRATION,
                                 turn_ms=turn_ms, draw=lambda: 0.0)
    member.register()
    return member


def _group_of_two(zk, unique_name) -> tuple[str, GroupPaths]:
    """A group whose members a and b are registered (persistent znodes, by the test)."""
    group = unique_name("turns")
    paths = GroupPaths(group)
    for name in ("a", "b"):
        zk.create(paths.member(f"{group}_{name}"), REGISTRATION.encode(), makepath=True)
    return group, paths


def _listings(client) -> list[str]:
    """The paths the client lists from now on, in order."""
    lists: list[str] = []
    listing = client.get_children

    def counted(path, *args, **kwargs):
        lists.append(path)
        return listing(path, *args, **kwargs)

    client.get_children = counted
    return lists


def test_a_burst_of_registrations_is_read_once_in_the_members_turn(cluster, zk, unique_name):
    group, paths = _group_of_two(zk, unique_name)
    with zookeeper_session(cluster.zookeeper_connect) as client:
        lists = _listings(client)
        member = _member(client, group, "c", turn_ms=400)
        told: list[float] = []
        member.watch(lambda: told.append(time.monotonic()), topics=(), wildcard=False)
        assert list(member.snapshot(True).members) == [f"{group}_{n}" for n in "abc"]  # rank 2

        zk.create(paths.member(f"{group}_d"), REGISTRATION.encode())
        wait_until(lambda: len(told) == 1, timeout=30, message="the member told of the change")
        for name in ("e", "f"):
            zk.create(paths.member(f"{group}_{name}"), REGISTRATION.encode())
        # An event of a watch comes before any answer the client reads after the change.
        client.exists(paths.ids)
        assert len(told) == 1, "the registry tells a member once until it reads it again"

        lists.clear()
        members = member.snapshot(True).members
        waited = time.monotonic() - told[0]
        assert list(members) == [f"{group}_{n}" for n in "abcdef"]
        assert waited >= (3 / 2 + 2) * 0.4 - 0.05, \
            f"rank 2 of 3 read after {waited:.2f}s, before its turn"
        assert lists == [paths.ids], "one read of the registry for the burst"

        zk.create(paths.member(f"{group}_g"), REGISTRATION.encode())
        wait_until(lambda: len(told) == 2, timeout=30,
                   message="the read in the member's turn watches the registry again")


def test_the_first_member_too_reads_a_leave_and_a_join_close_together_at_once(
        cluster, zk, unique_name):
    """A deploy stops a worker and starts one a moment later: the member ranked first does not
    read (and move partitions for) the group in between, but once, after half the group's
    spread."""
    group, paths = _group_of_two(zk, unique_name)
    with zookeeper_session(cluster.zookeeper_connect) as client:
        lists = _listings(client)
        member = _member(client, group, "0", turn_ms=1000)  # sorts before a and b: rank 0
        told: list[float] = []
        member.watch(lambda: told.append(time.monotonic()), topics=(), wildcard=False)
        assert list(member.snapshot(True).members)[0] == f"{group}_0"

        zk.delete(paths.member(f"{group}_b"))  # a worker stops
        wait_until(lambda: len(told) == 1, timeout=30, message="the member told of the leave")
        lists.clear()
        read: list = []
        reader = threading.Thread(target=lambda: read.append(member.snapshot(True).members))
        reader.start()  # the rebalance the leave starts
        zk.create(paths.member(f"{group}_c"), REGISTRATION.encode())  # and one starts
        reader.join(30)
        waited = time.monotonic() - told[0]
        members, = read
        assert list(members) == [f"{group}_{n}" for n in "0ac"], "both changes in one read"
        assert waited >= 3 / 2 * 1.0 - 0.05, f"rank 0 of 3 read after {waited:.2f}s"
        assert lists == [paths.ids]


def test_a_member_leaving_reads_without_waiting_its_turn(cluster, zk, unique_name):
    group, paths = _group_of_two(zk, unique_name)
    with zookeeper_session(cluster.zookeeper_connect) as client:
        member = _member(client, group, "c", turn_ms=1000)  # rank 2 of 3: 3.5 s
        told = threading.Event()
        member.watch(told.set, topics=(), wildcard=False)
        member.snapshot(True)
        zk.create(paths.member(f"{group}_d"), REGISTRATION.encode())
        assert told.wait(30)
        read = threading.Event()
        reader = threading.Thread(target=lambda: (member.snapshot(True), read.set()))
        reader.start()
        assert not read.wait(0.5), "the member waits its turn"
        member.stop_waiting()
        assert read.wait(1.0), "a member leaving does not wait its turn (3.5 s)"
        reader.join()


def test_a_change_made_while_the_connection_was_down_is_told_once_it_is_back(
        cluster, zk, unique_name):
    """kazoo drops a connection's watches with it: once connected again in the same session,
    the registry is watched again, and a registration made meanwhile is told."""
    group, paths = _group_of_two(zk, unique_name)
    server = cluster.zookeeper_connect.split("/")[0].split(",")[0]
    host, _, port = server.rpartition(":")
    with TcpProxy(int(port), host) as proxy:
        client = connect(proxy.address, session_timeout_s=30)  # outlives the cut
        member = _member(client, group, "c", turn_ms=0)
        told = threading.Event()
        member.watch(told.set, topics=(), wildcard=False)
        member.snapshot(True)  # sets the registry's watch
        proxy.cut()
        wait_until(lambda: not client.connected, timeout=30, message="the connection to drop")
        zk.create(paths.member(f"{group}_d"), REGISTRATION.encode())
        assert not told.is_set(), "a dropped connection is no change of the group"
        proxy.restore()
        try:
            assert told.wait(30), "the registration made while cut off was not told"
            assert f"{group}_d" in member.snapshot(True).members
        finally:
            client.stop()
            client.close()

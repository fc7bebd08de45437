"""When a member that cannot claim its partitions may give up: never while an owner session can
still turn out to be a dead member's, whatever the ZooKeeper leader does meanwhile."""

from __future__ import annotations

from zkconsumer.member.owner_wait import OwnersSeen, OwnerWait, leader_epoch
from zkconsumer.model import TopicPartition

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
DEAD, ALIVE = 0x100, 0x200
WINDOW_S = 12.0  # two session timeouts of 6 s


def test_an_owner_may_be_given_up_on_once_it_outlived_an_expiry_window():
    wait = OwnerWait(WINDOW_S)
    wait.observe(OwnersSeen({T0: ALIVE}, epoch=1), now=0.0)
    assert not wait.may_give_up(now=11.9)
    wait.observe(OwnersSeen({T0: ALIVE}, epoch=1), now=12.0)
    assert wait.may_give_up(now=12.0)


def test_a_leader_change_restarts_the_wait_as_it_restarts_every_session_timeout():
    """The issue's case: a member killed, the leader stopped 6.5 s later. The dead session
    expires a session timeout after the new leader took over, not after the kill."""
    wait = OwnerWait(WINDOW_S)
    wait.observe(OwnersSeen({T0: DEAD}, epoch=1), now=0.0)
    wait.observe(OwnersSeen({T0: DEAD}, epoch=2), now=8.0)  # the new leader answers
    for now in (12.0, 16.0, 19.9):
        wait.observe(OwnersSeen({T0: DEAD}, epoch=2), now=now)
        assert not wait.may_give_up(now)
        assert wait.can_still_expire(now) == [T0]
    wait.observe(OwnersSeen({}, epoch=2), now=21.0)  # expired: its znode is gone
    assert not wait.may_give_up(now=30.0)


def test_a_partition_that_changed_hands_is_waited_for_afresh():
    wait = OwnerWait(WINDOW_S)
    wait.observe(OwnersSeen({T0: DEAD, T1: ALIVE}, epoch=1), now=0.0)
    wait.observe(OwnersSeen({T0: ALIVE, T1: ALIVE}, epoch=1), now=10.0)
    assert wait.can_still_expire(now=13.0) == [T0]
    assert not wait.may_give_up(now=13.0)
    assert wait.may_give_up(now=22.0)


def test_nothing_left_to_wait_for_is_no_reason_to_give_up():
    wait = OwnerWait(0.0)
    wait.observe(OwnersSeen({}, epoch=1), now=100.0)
    assert not wait.may_give_up(now=100.0)


def test_the_epoch_is_the_high_half_of_a_zxid():
    assert leader_epoch(0x0000000300000007) == 3
    assert leader_epoch(0) == 0


def test_a_change_of_the_groups_members_restarts_every_wait():
    """A peer holds what moves away from it until its own rebalance, which the change began
    anew: at fleet size that outlasted the window, and members gave up on live peers."""
    wait = OwnerWait(WINDOW_S)
    wait.observe(OwnersSeen({T0: ALIVE}, epoch=1, peers=frozenset({DEAD}), members=1), now=0.0)
    wait.observe(OwnersSeen({T0: ALIVE}, epoch=1, peers=frozenset({DEAD, 0x300}), members=2),
                 now=10.0)  # a member joined
    assert not wait.may_give_up(now=21.9)
    assert wait.may_give_up(now=22.0)


def test_an_owner_that_is_a_registered_member_is_given_half_a_second_per_member():
    """At fleet size a peer's release waits on others' rebalances: 200 members, 100 s."""
    wait = OwnerWait(WINDOW_S)
    seen = OwnersSeen({T0: ALIVE, T1: DEAD}, epoch=1, peers=frozenset({ALIVE}), members=200)
    wait.observe(seen, now=0.0)
    assert wait.can_still_expire(now=12.0) == [T0], "a session outside the group: 12 s"
    assert not wait.may_give_up(now=99.9)
    assert wait.may_give_up(now=100.0)
    small = OwnerWait(WINDOW_S)
    small.observe(OwnersSeen({T0: ALIVE}, epoch=1, peers=frozenset({ALIVE}), members=3), now=0.0)
    assert small.may_give_up(now=12.0), "a small group keeps two session timeouts"

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

"""A member's state holding claims, as a rebalance leaves it, for tests of what reads it."""

from __future__ import annotations

from zkconsumer.member.state import Event, MemberState
from zkconsumer.model import TopicPartition

SESSION = 0x5E55


def holding(partitions: dict[TopicPartition, str], committed: dict[TopicPartition, int] | None
            = None, session: int = SESSION) -> MemberState:
    """A started member whose claims of `partitions` (partition -> thread id) are made, with
    the `committed` offsets read for them."""
    member = MemberState(session)
    member.handle(Event.STARTED)
    claim(member, partitions, committed)
    return member


def claim(member: MemberState, partitions: dict[TopicPartition, str],
          committed: dict[TopicPartition, int] | None = None) -> None:
    member.claims_made(member.begin_claims(partitions), list(partitions), committed)

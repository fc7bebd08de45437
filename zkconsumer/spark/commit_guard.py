"""Whether a Spark read may commit its offsets to the group (pure).

A read commits from outside the group: it is no member and claims nothing, so nothing stops a
live member (zkconsumer or Scala) from consuming the same partitions. Writing over a member's
partitions would rewind it, or be rewound by its next commit; writing an offset lower than the
group's would hand its consumers again what they already had. Either way the read refuses, and
writes nothing, so that the group never loses or rewinds records behind anyone's back.

A group on Kafka's group coordinator is live while the coordinator has members for it, whatever
partitions they hold: the coordinator takes a commit from outside a group (generation -1, no
member id) only while it has none, and refuses it whole otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping

from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.coordinator_groups import CoordinatorGroup

# How many of a live group's members a refusal names; the rest are counted.
NAMED_MEMBERS = 3


class CommitRefusedError(ZkConsumerError):
    """Committing the read back would race another consumer of the group."""


def check_commit(group: str, offsets: Mapping[TopicPartition, int],
                 owners: Mapping[TopicPartition, str], committed: Mapping[TopicPartition, int],
                 planned: Mapping[TopicPartition, int] | None = None) -> None:
    """Raise `CommitRefusedError`, naming one partition, unless `offsets` may be written.

    `owners` are the group's owner znodes, `committed` its offsets now; `planned`, for a read
    planned ahead, the offsets it had when the plan was made (any move since is a race)."""
    owned = sorted(tp for tp in offsets if tp in owners)
    if owned:
        raise CommitRefusedError(
            f"group {group} has live members owning {len(owned)} of these partitions "
            f"(e.g. {owned[0]} by {owners[owned[0]]}); nothing committed")
    if planned is not None:
        moved = sorted(tp for tp in offsets if committed.get(tp) != planned.get(tp))
        if moved:
            raise CommitRefusedError(
                f"the offsets of group {group} moved since this read was planned (e.g. "
                f"{moved[0]}: {planned.get(moved[0])} then, {committed.get(moved[0])} now); "
                "nothing committed")
    behind = sorted(tp for tp in offsets if offsets[tp] < committed.get(tp, offsets[tp]))
    if behind:
        raise CommitRefusedError(
            f"group {group} has committed {behind[0]} up to {committed[behind[0]]}, past this "
            f"read's {offsets[behind[0]]}: committing would move it back; nothing committed")


def check_coordinator_group_idle(group: str, described: CoordinatorGroup | None) -> None:
    """Raise `CommitRefusedError`, naming its members, while the group has members on Kafka's
    group coordinator, or while the coordinator could not say whether it has any. `described`
    is None when the coordinator does not know the group: nobody is in it."""
    if described is None:
        return
    if described.error is not None:
        raise CommitRefusedError(
            f"cannot tell whether group {group} has members on Kafka's group coordinator "
            f"({described.error}); nothing committed")
    if described.members:
        ids = sorted(member.member_id for member in described.members)
        named = ", ".join(ids[:NAMED_MEMBERS])
        if len(ids) > NAMED_MEMBERS:
            named += f" and {len(ids) - NAMED_MEMBERS} more"
        state = described.state or "state unknown"
        raise CommitRefusedError(
            f"group {group} is live on Kafka's group coordinator ({state}, {len(ids)} "
            f"member(s): {named}), which takes offsets from outside a group only while it has "
            "no members; nothing committed")

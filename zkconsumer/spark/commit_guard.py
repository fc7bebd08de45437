"""Whether a Spark read may commit its offsets to the group (pure).

A read commits from outside the group: it is no member and claims nothing, so nothing stops a
live member (zkconsumer or Scala) from consuming the same partitions. Writing over a member's
partitions would rewind it, or be rewound by its next commit; writing an offset lower than the
group's would hand its consumers again what they already had. Either way the read refuses, and
writes nothing, so that the group never loses or rewinds records behind anyone's back.
"""

from __future__ import annotations

from collections.abc import Mapping

from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import TopicPartition


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

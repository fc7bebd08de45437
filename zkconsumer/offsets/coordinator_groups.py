"""The groups Kafka's group coordinator knows, and who is in them: ListGroups on every broker,
then DescribeGroups at each group's coordinator, through the cluster client of a
`GroupOffsetsReader` (so reading groups costs no connection more than reading their offsets).

The codec keeps members' subscriptions and assignments as the bytes they came as (no
authorized operations are asked for: nobody here reads them); each assignment is decoded by
`consumer_protocol`, whose one GroupMetadataError costs only that group its members'
partitions, whatever bytes another client wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zkconsumer.kafka.errors import GroupMetadataError
from zkconsumer.kafka.protocol.consumer_protocol import (
    PROTOCOL_TYPE,
    decode_assignment,
    decode_subscription,
)
from zkconsumer.kafka.protocol.retry_policy import broker_error
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.kafka_reader import GroupOffsetsReader

# Groups of consumers: "consumer" for those the coordinator balances, "" for those that only
# keep offsets in Kafka (ZooKeeper-coordinated members with offsets.storage=kafka, tools).
# Others (Kafka Connect's workers, share groups) assign no partitions to consume.
CONSUMER_PROTOCOL_TYPES = frozenset({"consumer", ""})
# The state a coordinator describes a group in that it does not know.
DEAD = "Dead"


@dataclass(frozen=True)
class CoordinatorMember:
    """`user_data` is what the member put in its subscription (None when it put nothing, or
    its subscription is not the consumer protocol's or does not parse): `group cutover` reads
    there whether a member will honour its fence."""

    member_id: str
    assigned: tuple[TopicPartition, ...]
    client_id: str = ""
    client_host: str = ""
    user_data: bytes | None = None


@dataclass(frozen=True)
class CoordinatorGroup:
    """One group as its coordinator describes it. `malformed` says why its members'
    assignments are not shown (bytes that do not parse); `error` why it could not be described
    at all this time (a coordinator moving, say), its members then unknown. `state` is the
    coordinator's (Stable, PreparingRebalance, CompletingRebalance or AwaitingSync, Empty,
    Dead), `protocol` the assignor its members agreed on; DescribeGroups carries no generation
    in any version."""

    name: str
    members: tuple[CoordinatorMember, ...] = ()
    malformed: str | None = None
    error: str | None = None
    state: str = ""
    protocol_type: str = ""
    protocol: str = ""

    def owners(self) -> dict[TopicPartition, str]:
        """Partition -> the member it is assigned to (its member id, unique in the group as a
        ZooKeeper member's consumer id is)."""
        return {tp: member.member_id for member in self.members for tp in member.assigned}


def listed_groups(answer: Iterable[Mapping[str, Any]]) -> list[str]:
    """Consumer groups' names from the brokers' ListGroups answers (as mappings), each once
    (every broker lists the groups it coordinates)."""
    return sorted({group["group_id"] for group in answer
                   if group.get("protocol_type", "") in CONSUMER_PROTOCOL_TYPES})


def described_group(group: Any) -> CoordinatorGroup:
    """A DescribeGroups answer's group (`group_codec.DescribedGroupAnswer`, or anything with
    its fields: assignments as bytes)."""
    if group.error_code:
        return CoordinatorGroup(group.group_id, error=f"DescribeGroups error {group.error_code}")
    members = []
    malformed = None
    for member in group.members:
        try:
            assigned = () if not member.member_assignment else decode_assignment(
                member.member_assignment,
                f"the leader of group {group.group_id!r} for member {member.member_id!r}"
            ).partitions
        except GroupMetadataError as exc:
            malformed = str(exc)
            break
        members.append(CoordinatorMember(member.member_id, assigned, member.client_id,
                                         member.client_host,
                                         _user_data(group.protocol_type, member)))
    if malformed is not None:
        members = [CoordinatorMember(member.member_id, (), member.client_id, member.client_host,
                                     _user_data(group.protocol_type, member))
                   for member in group.members]
    return CoordinatorGroup(group.group_id, tuple(members), malformed, state=group.group_state,
                            protocol_type=group.protocol_type, protocol=group.protocol_data)


def _user_data(protocol_type: str, member: Any) -> bytes | None:
    """A member's subscription user data. One that does not parse costs nothing else: it is
    no more than a member that says nothing there, which is what its readers assume."""
    metadata = getattr(member, "member_metadata", None)
    if protocol_type != PROTOCOL_TYPE or not metadata:
        return None
    try:
        return decode_subscription(metadata, member.member_id).user_data
    except GroupMetadataError:
        return None



def read_coordinator_groups(reader: GroupOffsetsReader,
                            wanted: Callable[[str], bool] = lambda _name: True
                            ) -> dict[str, CoordinatorGroup]:
    """Every consumer group the brokers list that is `wanted`, described by its coordinator
    (those not wanted are not described at all: on a big cluster they would cost a request
    each, and one failing would fail the listing). KafkaReadError when Kafka cannot be asked;
    the cluster client's error (`offsets.KAFKA_ERRORS`) when a broker fails to list or a
    coordinator to describe."""
    names = [name for name in listed_groups(group._asdict() for group in reader.list_groups())
             if wanted(name)]
    if not names:
        return {}
    return _described(reader, names)


def read_coordinator_group(reader: GroupOffsetsReader, name: str) -> CoordinatorGroup | None:
    """One group, described by its coordinator whether or not it is listed; None when the
    coordinator does not know it (Dead: never joined, or, on a 0.9 broker, its last member
    gone). Errors as `read_coordinator_groups`'; an error in the group's own entry too (a
    coordinator moving, or loading the offsets topic of a new cluster), as the cluster
    client's error, for the caller's retries: one group asked about is either described or
    not known, never shown as unknown for want of an answer."""
    answer = reader.describe_groups([name]).get(name)
    if answer is not None and answer.error_code:
        raise broker_error(answer.error_code, f"describing group {name}")
    group = None if answer is None else described_group(answer)
    return None if group is None or group.state == DEAD else group


def _described(reader: GroupOffsetsReader, names: list[str]) -> dict[str, CoordinatorGroup]:
    """A group answered by a broker no longer its coordinator (a 0.9 broker answers so, in the
    group's entry, once the offsets partition's leader moved away while it stayed up) is
    described by its error; the cluster client forgot that coordinator
    (`cluster_calls.describe_groups`), so the next read finds the new one."""
    return {name: described_group(group)
            for name, group in reader.describe_groups(names).items()}

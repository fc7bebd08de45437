"""Groups as `group list` and `group describe` show them, from numbers read elsewhere (pure).

Both commands take one look, so their status is the exporter's rules over a window of one
observation: STOP and STALL from the age of a ZooKeeper offset (its znode's mtime), OK
otherwise; WARN and REWIND need the exporter's window of several scans, and only the window
tells a consumer stuck for good from one that met a burst on an idle topic a moment ago and
has not committed since.

A group may live under /consumers, on Kafka's group coordinator, or in both (`where`): one in
both is one group, as the exporter shows it (`merged_states`). The coordinator's state,
protocol and members are shown as it describes them; it gives no generation (DescribeGroups
has none in any version, and the requests that do, JoinGroup and OffsetCommit, change the
group).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from zkconsumer.config.keys import KEYS_BY_NAME
from zkconsumer.lag.history import OffsetHistory
from zkconsumer.lag.report import GroupReport, GroupState, ScanInputs, scan
from zkconsumer.lag.status import Status, WindowRules
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.coordinator_groups import CoordinatorGroup
from zkconsumer.znodes.fence import Fence


def look_once(states: Iterable[GroupState], partitions: Mapping[str, list[TopicPartition]],
              log_ends: Mapping[TopicPartition, int],
              kafka_offsets: Mapping[str, Mapping[TopicPartition, int]], window_s: float,
              now: float) -> list[GroupReport]:
    return scan(ScanInputs(states, partitions, log_ends, kafka_offsets),
                OffsetHistory(WindowRules(1, window_s)), now)


def status_name(status: Status) -> str | None:
    """None where there was nothing to judge (no committed offset, or no log end)."""
    return None if status == Status.NOTFOUND else status.name


def group_status_name(report: GroupReport) -> str | None:
    """The group's status; None for a group with no partition to judge."""
    return status_name(report.status) if report.partitions else None


def partition_rows(report: GroupReport) -> list[dict]:
    """Lag is counted from the larger committed offset, where a member with dual commit would
    resume; None where the group has no offset or the log end is unknown."""
    return [{"topic": p.topic, "partition": p.partition,
             "zookeeper_offset": p.zookeeper_offset, "kafka_offset": p.kafka_offset,
             "log_end_offset": p.log_end, "lag": p.lag, "owner": p.owner,
             "status": status_name(p.status)}
            for p in report.partitions]


def where_of(in_zookeeper: bool, coordinator: CoordinatorGroup | None) -> str:
    """Where the group lives: zookeeper, kafka (its group coordinator, or only its offsets
there, for a group the coordinator forgot), or both."""
    if in_zookeeper and coordinator is not None:
        return "both"
    return "zookeeper" if in_zookeeper else "kafka"


def list_row(name: str, where: str, coordinator: CoordinatorGroup | None,
             state: GroupState | None, report: GroupReport | None,
             fence: Fence | None = None) -> dict:
    """A group `group list` could not read is still a row, with no figures; `state` is the
    coordinator's (None for a group only ZooKeeper knows); `cutover` its fence
    (`cutover_of`)."""
    known = {"group": name, "where": where,
             "state": None if coordinator is None else coordinator.state or None}
    if state is None or report is None:
        return {**known, "members": None, "zookeeper_offsets": None,
                "owned_partitions": None, "storage": None, "lag": None, "status": None,
                "cutover": cutover_of(fence)}
    return {**known, "members": report.members,
            "zookeeper_offsets": len(state.zookeeper_offsets),
            "owned_partitions": len(state.owners), "storage": storage_of(report),
            "lag": report.total_lag if any(p.lag is not None for p in report.partitions)
            else None,
            "status": group_status_name(report), "cutover": cutover_of(fence)}


def cutover_of(fence: Fence | None) -> str | None:
    """The group's cutover fence in a few words (`draining to kafka`, `switched to
    zookeeper`); None: no cutover was ever started."""
    return None if fence is None else f"{fence.phase} to {fence.to}"


def cutover_view(fence: Fence | None) -> dict | None:
    """The fence as JSON shows it."""
    return None if fence is None else {"to": fence.to, "phase": fence.phase,
                                       "started_ms": fence.started_ms}


def uncommitted(report: GroupReport) -> list[str]:
    """Partitions a member owns that have no committed offset in either storage yet
    (`topic-partition`): shown with `-` for offset and lag until the member commits."""
    return [f"{p.topic}-{p.partition}" for p in report.partitions
            if p.owner is not None and p.zookeeper_offset is None and p.kafka_offset is None]


def uncommitted_note(where: str, partitions: list[str]) -> str:
    """Why `-` stands where a partition is consumed: nothing committed yet."""
    interval_s = KEYS_BY_NAME["auto.commit.interval.ms"].default / 1000
    shown = ", ".join(partitions[:5]) + (", ..." if len(partitions) > 5 else "")
    return (f"{where}: {len(partitions)} owned partition(s) with nothing committed yet "
            f"({shown}): offsets and lag show '-' until the member commits, every "
            f"auto.commit.interval.ms ({interval_s:g} s by default) and when it stops")


def member_rows(state: GroupState) -> list[dict]:
    return [{"consumer_id": consumer_id, "pattern": registration.pattern,
             "subscription": dict(registration.subscription)}
            for consumer_id, registration in state.members.items()]


def coordinator_view(group: CoordinatorGroup) -> dict:
    """The group as its coordinator describes it: state, protocol type ("consumer", or "" for
    a group that only keeps offsets), the assignor its members agreed on, and each member with
    the partitions assigned to it (none shown where `malformed` says they do not parse)."""
    return {"state": group.state, "protocol_type": group.protocol_type,
            "protocol": group.protocol, "malformed": group.malformed,
            "members": [{"member_id": member.member_id, "client_id": member.client_id,
                         "client_host": member.client_host,
                         "assigned": _per_topic(member.assigned)}
                        for member in group.members]}


def kafka_only_partitions(owned: Iterable[TopicPartition],
                          committed: Iterable[TopicPartition],
                          topics: Iterable[str] = ()) -> list[TopicPartition]:
    """A group only Kafka knows is described by its partitions: those assigned to its members
    and those it has an offset for (only `topics`' if any are named)."""
    chosen = set(topics)
    return sorted(tp for tp in {*owned, *committed} if not chosen or tp.topic in chosen)


def _per_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return grouped


def storage_of(report: GroupReport) -> str:
    """Where the group's offsets are: zookeeper, kafka, both, or none."""
    places = {storage for p in report.partitions
              for storage, offset in (("zookeeper", p.zookeeper_offset),
                                      ("kafka", p.kafka_offset)) if offset is not None}
    return "both" if len(places) == 2 else next(iter(places), "none")


def offsets_differ(zookeeper: Mapping[TopicPartition, int],
                   kafka: Mapping[TopicPartition, int]) -> list[dict]:
    """Every partition where the two storages disagree (including one having none)."""
    return [{"topic": tp.topic, "partition": tp.partition,
             "zookeeper_offset": zookeeper.get(tp), "kafka_offset": kafka.get(tp)}
            for tp in sorted(set(zookeeper) | set(kafka)) if zookeeper.get(tp) != kafka.get(tp)]

"""The cluster-wide questions the offset store, the offset readers, the log-offsets client, the
exporter and the admin commands ask, over a `Cluster`'s connections: topic metadata, log
offsets per leader, group coordinators, groups' committed offsets, commits, the groups each
broker coordinates and how their coordinators describe them. The bytes are the codec's (`codec`, `group_codec`); what an error code
means, and the coordinator-moved rule, are `retry_policy`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping

from zkconsumer.kafka.errors import BrokerError, KafkaConnectionError, OffsetsNotAnswered
from zkconsumer.kafka.io.cluster import Address, Call, Cluster
from zkconsumer.kafka.protocol import codec, group_codec
from zkconsumer.kafka.protocol.cluster_versions import Spoken
from zkconsumer.kafka.protocol.codec import Metadata, ProtocolError
from zkconsumer.kafka.protocol.group_codec import DescribedGroupAnswer, ListedGroup
from zkconsumer.kafka.protocol.retry_policy import COORDINATOR_MOVED, broker_error
from zkconsumer.kafka.protocol.versions import NoCommonVersion
from zkconsumer.model import TopicPartition

# Between rounds of a question whose leaders were unknown or moved: kafka-python's
# retry.backoff.ms.
RETRY_BACKOFF_S = 0.1
NO_LEADER = -1


def _unreadable(address: Address, what: str, exc: Exception) -> KafkaConnectionError:
    """An answer that does not parse, or versions not agreed: the connection is given up as a
    failed one would be (the broker may have restarted in other versions)."""
    return KafkaConnectionError(f"broker {address[0]}:{address[1]} answered {what} in a form "
                                f"that does not parse: {exc}")


def read_metadata(cluster: Cluster, topics: list[str] | None) -> Metadata:
    """Metadata of these topics (None: of every topic) from any broker; the cluster learns
    the brokers it names. KafkaConnectionError when no broker answers."""
    address = cluster.any_broker()

    def calls(spoken: Spoken) -> list[Call]:
        version = spoken.version(codec.METADATA)
        return [Call(codec.METADATA, version, codec.metadata_request(topics, version))]

    try:
        answers = cluster.exchange(address, calls)
        metadata = codec.decode_metadata(answers.payloads[0], answers.calls[0].version)
    except (ProtocolError, NoCommonVersion) as exc:
        cluster.drop(address)
        raise _unreadable(address, "Metadata", exc) from None
    cluster.brokers = dict(metadata.brokers)
    for tp, leader in metadata.leaders.items():
        if leader == NO_LEADER:
            cluster.leaders.pop(tp, None)
        else:
            cluster.leaders[tp] = leader
    return metadata


def list_offsets(cluster: Cluster, times: Mapping[TopicPartition, int], *, timeout_s: float,
                 isolation_level: int = codec.READ_UNCOMMITTED, needs_timestamps: bool = False,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep
                 ) -> dict[TopicPartition, int | None]:
    """Per partition, the offset of its `time` (codec.EARLIEST, codec.LATEST, or a time in ms:
    the first offset at or after it, None where no message is that recent), asked of each
    leader at once. The leaders the cluster knows are asked without Metadata; partitions
    without a known leader, or whose leader moved or failed (their leader then forgotten), are
    asked again with fresh metadata of their topics until `timeout_s` has passed; then
    OffsetsNotAnswered (a KafkaConnectionError) names them and carries what was answered. A BrokerError no retry cures is raised at once.
    `needs_timestamps`: a broker that speaks only ListOffsets v0 (before 0.10.1) cannot look
    offsets up by time, which raises NoCommonVersion."""
    deadline = clock() + timeout_s
    wanted = dict(times)
    found: dict[TopicPartition, int | None] = {}
    while True:
        trouble = []
        unknown = {tp.topic for tp in wanted if cluster.leaders.get(tp) not in cluster.brokers}
        if unknown:
            read_metadata(cluster, sorted(unknown))
        per_leader: dict[int, dict[TopicPartition, int]] = {}
        for tp, time_ms in wanted.items():
            leader = cluster.leaders.get(tp, NO_LEADER)
            if leader not in cluster.brokers:
                trouble.append(f"no leader known for {tp}")
            else:
                per_leader.setdefault(leader, {})[tp] = time_ms

        def asker(of_leader: dict[TopicPartition, int]) -> Callable[[Spoken], list[Call]]:
            def calls(spoken: Spoken) -> list[Call]:
                version = spoken.version(codec.LIST_OFFSETS)
                if needs_timestamps and version == 0:
                    raise NoCommonVersion(f"broker {spoken.address} speaks only ListOffsets "
                                          "v0, which cannot look offsets up by time")
                return [Call(codec.LIST_OFFSETS, version, codec.list_offsets_request(
                    of_leader, version, isolation_level, int(timeout_s * 1000)))]
            return calls

        leaders = {cluster.brokers[node]: of_leader for node, of_leader in per_leader.items()}
        answered = cluster.exchange_many({address: asker(of_leader)
                                          for address, of_leader in leaders.items()})
        for address, answers in answered.items():
            if isinstance(answers, KafkaConnectionError):
                _forget_leaders(cluster, leaders[address])
                trouble.append(str(answers))
                continue
            try:
                offsets = codec.decode_list_offsets(answers.payloads[0], answers.calls[0].version)
            except ProtocolError as exc:
                cluster.drop(address)
                _forget_leaders(cluster, leaders[address])
                trouble.append(str(_unreadable(address, "ListOffsets", exc)))
                continue
            for tp, (error, offset) in offsets.items():
                if tp not in leaders[address]:
                    continue
                if error:
                    failure = broker_error(error, f"ListOffsets of {tp}")
                    if not failure.retriable:
                        raise failure
                    _forget_leaders(cluster, [tp])  # not the leader (any more), or unknown
                    trouble.append(str(failure))
                    continue
                found[tp] = offset
                del wanted[tp]
            unanswered = [tp for tp in leaders[address] if tp not in offsets]
            _forget_leaders(cluster, unanswered)
            trouble.extend(f"{address[0]}:{address[1]} did not answer for {tp}"
                           for tp in unanswered)
        if not wanted:
            return found
        if clock() + RETRY_BACKOFF_S >= deadline:
            raise OffsetsNotAnswered(f"no offsets for {len(wanted)} partitions after "
                                     f"{timeout_s:g}s: {trouble[0] if trouble else ''}",
                                     found, list(wanted))
        sleep(RETRY_BACKOFF_S)


def _forget_leaders(cluster: Cluster, partitions: Iterable[TopicPartition]) -> None:
    """These partitions' leaders are to be asked of Metadata again."""
    for tp in partitions:
        cluster.leaders.pop(tp, None)


class Coordinators:
    """Which broker coordinates each group, found once and kept until a request there says
    it moved (the coordinator-moved rule: `retry_policy.COORDINATOR_MOVED`) or its connection
    fails: kafka-python's admin client never forgets one, so after a move it asked the old
    broker for good."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._of: dict[str, Address] = {}

    def find(self, groups: Iterable[str]) -> tuple[dict[str, Address], dict[str, Exception]]:
        """(each group's coordinator, why a group's could not be found), one FindCoordinator
        per unknown group, pipelined to one broker."""
        groups = list(dict.fromkeys(groups))
        unknown = [group for group in groups if group not in self._of]
        errors: dict[str, Exception] = {}
        if unknown:
            address = self._cluster.any_broker()

            def calls(spoken: Spoken) -> list[Call]:
                version = spoken.version(codec.FIND_COORDINATOR)
                return [Call(codec.FIND_COORDINATOR, version,
                             group_codec.find_coordinator_request(group, version))
                        for group in unknown]

            answers = self._cluster.exchange(address, calls)
            for group, call, payload in zip(unknown, answers.calls, answers.payloads,
                                            strict=True):
                try:
                    answer = group_codec.decode_find_coordinator(payload, call.version)
                except ProtocolError as exc:
                    self._cluster.drop(address)
                    raise _unreadable(address, "FindCoordinator", exc) from None
                if answer.error:
                    errors[group] = broker_error(answer.error,
                                                 f"finding the coordinator of group {group}")
                else:
                    self._of[group] = (answer.host, answer.port)
        return {group: self._of[group] for group in groups if group in self._of}, errors

    def forget(self, groups: Iterable[str]) -> None:
        for group in groups:
            self._of.pop(group, None)

    def at(self, address: Address) -> list[str]:
        return [group for group, where in self._of.items() if where == address]


GroupSpecs = Mapping[str, Collection[TopicPartition] | None]


def fetch_offsets(cluster: Cluster, coordinators: Coordinators, specs: GroupSpecs
                  ) -> tuple[dict[str, dict[TopicPartition, int]], dict[str, Exception]]:
    """(each group's committed offsets of the partitions named, None: of every partition it
    has; why a group's could not be read). A group whose coordinator moved, or whose
    coordinator's connection failed, has its coordinator forgotten, so the next read finds it
    anew; its error is retriable. NoCommonVersion for a group asked for every partition of a
    broker that cannot answer that (OffsetFetch v1, Kafka before 0.10.2), or that answers it
    in a form that does not parse."""
    found: dict[str, dict[TopicPartition, int]] = {}
    located, errors = coordinators.find(specs)
    per_coordinator: dict[Address, list[str]] = {}
    for group, address in located.items():
        per_coordinator.setdefault(address, []).append(group)

    def asker(groups: list[str]) -> Callable[[Spoken], list[Call]]:
        def calls(spoken: Spoken) -> list[Call]:
            version = spoken.version(codec.OFFSET_FETCH)
            if version < 2 and any(specs[group] is None for group in groups):
                raise NoCommonVersion(f"broker {spoken.address} speaks OffsetFetch "
                                      f"v{version}, which answers only partitions named")
            return [Call(codec.OFFSET_FETCH, version,
                         group_codec.offset_fetch_request(group, specs[group], version))
                    for group in groups]
        return calls

    answered = cluster.exchange_many({address: asker(groups)
                                      for address, groups in per_coordinator.items()})
    for address, answers in answered.items():
        groups = per_coordinator[address]
        if isinstance(answers, KafkaConnectionError):
            coordinators.forget(groups)
            errors.update(dict.fromkeys(groups, answers))
            continue
        for group, call, payload in zip(groups, answers.calls, answers.payloads, strict=True):
            try:
                fetched = group_codec.decode_offset_fetch(payload, call.version)
            except ProtocolError as exc:
                cluster.drop(address)
                coordinators.forget(groups)
                if specs[group] is None:
                    # Some brokers (Tansu) answer a question for every partition in a form
                    # that leaves out the topics: such a broker can answer only partitions
                    # named, as a 0.9 one can.
                    raise NoCommonVersion(f"broker {address[0]}:{address[1]} answered "
                                          f"OffsetFetch for every partition of a group in a "
                                          f"form that does not parse: {exc}") from None
                unreadable = _unreadable(address, "OffsetFetch", exc)
                errors.update({g: unreadable for g in groups if g not in found})
                break
            error = fetched.error or next(
                (code for code, _ in fetched.offsets.values() if code), 0)
            if error:
                if error in COORDINATOR_MOVED:
                    coordinators.forget([group])
                errors[group] = broker_error(error, f"reading the offsets of group {group}")
                continue
            found[group] = {tp: offset for tp, (_, offset) in fetched.offsets.items()
                            if offset is not None}
    return found, errors


def commit_offsets(cluster: Cluster, coordinators: Coordinators, group: str,
                   offsets: Mapping[TopicPartition, int]) -> None:
    """Commit as a group with no Kafka-side members (generation -1, no member id), which
    every broker since 0.8.2 takes as "this group manages its own partitions". BrokerError or
    KafkaConnectionError as the first partition's error, the coordinator forgotten when it
    moved."""
    located, errors = coordinators.find([group])
    if group in errors:
        raise errors[group]
    address = located[group]

    def calls(spoken: Spoken) -> list[Call]:
        version = spoken.version(codec.OFFSET_COMMIT)
        return [Call(codec.OFFSET_COMMIT, version,
                     group_codec.offset_commit_request(group, -1, "", offsets, version))]

    try:
        answers = cluster.exchange(address, calls)
        codes = group_codec.decode_offset_commit(answers.payloads[0], answers.calls[0].version)
    except KafkaConnectionError:
        coordinators.forget([group])
        raise
    except ProtocolError as exc:
        cluster.drop(address)
        coordinators.forget([group])
        raise _unreadable(address, "OffsetCommit", exc) from None
    error = next((code for code in codes.values() if code), 0)
    if error:
        if error in COORDINATOR_MOVED:
            coordinators.forget([group])
        raise broker_error(error, f"committing the offsets of group {group}")


def list_groups(cluster: Cluster) -> list[ListedGroup]:
    """Every group every broker coordinates (each broker lists its own), asked of all brokers
    at once. KafkaConnectionError or BrokerError when a broker cannot answer: a listing
    without one broker's groups would look complete."""
    metadata = read_metadata(cluster, [])

    def calls(spoken: Spoken) -> list[Call]:
        version = spoken.version(codec.LIST_GROUPS)
        return [Call(codec.LIST_GROUPS, version, group_codec.list_groups_request(version))]

    listed: list[ListedGroup] = []
    answered = cluster.exchange_many(dict.fromkeys(metadata.brokers.values(), calls))
    for address, answers in answered.items():
        if isinstance(answers, KafkaConnectionError):
            raise answers
        try:
            error, groups = group_codec.decode_list_groups(answers.payloads[0],
                                                           answers.calls[0].version)
        except ProtocolError as exc:
            cluster.drop(address)
            raise _unreadable(address, "ListGroups", exc) from None
        if error:
            raise broker_error(error, f"listing the groups of broker {address[0]}:{address[1]}")
        listed.extend(groups)
    return listed


# Groups described per DescribeGroups request: bounds an answer's size on a big cluster.
DESCRIBED_PER_REQUEST = 100


def describe_groups(cluster: Cluster, coordinators: Coordinators, names: Iterable[str]
                    ) -> dict[str, DescribedGroupAnswer]:
    """Each group as its coordinator describes it, the groups of each coordinator asked in a
    few requests, every coordinator at once. A group whose coordinator could not be found or
    moved is described by its error code (the coordinator forgotten when it moved);
    KafkaConnectionError when a coordinator's connection fails."""
    names = list(dict.fromkeys(names))
    located, errors = coordinators.find(names)
    described = {group: DescribedGroupAnswer(error.code, group, "", "", "", [])
                 for group, error in errors.items() if isinstance(error, BrokerError)}
    per_coordinator: dict[Address, list[list[str]]] = {}
    for group, address in located.items():
        batches = per_coordinator.setdefault(address, [])
        if not batches or len(batches[-1]) == DESCRIBED_PER_REQUEST:
            batches.append([])
        batches[-1].append(group)

    def asker(batches: list[list[str]]) -> Callable[[Spoken], list[Call]]:
        def calls(spoken: Spoken) -> list[Call]:
            version = spoken.version(codec.DESCRIBE_GROUPS)
            return [Call(codec.DESCRIBE_GROUPS, version,
                         group_codec.describe_many_groups_request(batch, version))
                    for batch in batches]
        return calls

    answered = cluster.exchange_many({address: asker(batches)
                                      for address, batches in per_coordinator.items()})
    for address, answers in answered.items():
        if isinstance(answers, KafkaConnectionError):
            coordinators.forget(coordinators.at(address))
            raise answers
        for call, payload in zip(answers.calls, answers.payloads, strict=True):
            try:
                groups = group_codec.decode_described_groups(payload, call.version)
            except ProtocolError as exc:
                cluster.drop(address)
                coordinators.forget(coordinators.at(address))
                raise _unreadable(address, "DescribeGroups", exc) from None
            for answer in groups:
                if answer.error_code in COORDINATOR_MOVED:
                    coordinators.forget([answer.group_id])
                described[answer.group_id] = answer
    return described


__all__ = ["BrokerError", "Coordinators", "KafkaConnectionError", "commit_offsets",
           "describe_groups",
           "fetch_offsets", "list_groups", "list_offsets", "read_metadata"]

"""One member of a Kafka-coordinated consumer group, without its I/O: which request to send to
whom and when, and what the group coordinator's answers mean.

The driver owns the sockets and the clock; this state owns every decision and is told the time
with every call, as the fetch session is (h11's split): find the group's coordinator, join the
group offering the assignors of `partition.assignment.strategy` in order, compute the group's
assignment when the coordinator makes this member the leader (the driver is asked for the
partition counts of the group's topics), sync, heartbeat every `heartbeat.interval.ms`, commit
and fetch offsets in the member's generation, and leave on a clean stop.

A generation (its id and the member id the coordinator gave) is what makes an assignment the
member's: every partition of it may be delivered and committed while the generation lasts, and
none after it passed, which happens as soon as the member learns that the coordinator no longer
counts it in (a rebalance began, its generation or member id is unknown there) or may not (no
heartbeat answered for `session.timeout.ms`, on the clock the driver tells). Then nothing is
delivered or committed until the member has joined again and been given partitions anew
(`may_deliver`). A coordinator that moves or cannot be reached in a generation does not end it,
as with Java's consumer: the member looks the coordinator up again keeping its member id and
generation (RELOCATING), its commits wait for the new one, and the first heartbeat the new
coordinator answers goes on in the generation. Meanwhile no answer renews the lease
(`lease_deadline`), so delivery stops when it runs out, and the session passing without one
ends the generation as ever.

Every change of state goes through one table of what each event does in each state; an event
the table does not list for the state raises `UnexpectedGroupEvent`, a bug of the driver. What
the driver must learn (an assignment, its revocation, a commit's outcome, committed offsets)
queues as events for `next_events`. Errors no retry can fix raise a `GroupError` subclass and
leave the member FAILED; transient ones are retried, the coordinator looked up again with a
backoff doubling from `retry.backoff.ms` to `retry.backoff.max.ms`, for as long as they last.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from enum import Enum
from typing import NamedTuple, NoReturn

from zkconsumer.assignment.group_assignors import ASSIGNORS, group_assign
from zkconsumer.errors import AssignmentError, ConfigError
from zkconsumer.kafka.errors import (
    ChannelError,
    GroupAuthorizationError,
    GroupConfigError,
    GroupError,
    GroupMetadataError,
    InconsistentGroupProtocolError,
    ProtocolRefusedError,
    UnexpectedGroupEvent,
)
from zkconsumer.kafka.protocol import group_codec as codec
from zkconsumer.kafka.protocol.codec import (
    API_NAMES,
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    SYNC_GROUP,
    ProtocolError,
)
from zkconsumer.kafka.protocol.consumer_protocol import (
    PROTOCOL_TYPE,
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from zkconsumer.kafka.protocol.retry_policy import UNKNOWN_SERVER_ERROR, error_name
from zkconsumer.logs import get_logger
from zkconsumer.model import TopicPartition, lease_deadline

log = get_logger(__name__)

# The error codes the group coordinator answers with (Kafka's numbers).
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_FOR_PARTITION = 6
REQUEST_TIMED_OUT = 7
OFFSET_METADATA_TOO_LARGE = 12
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
INVALID_COMMIT_OFFSET_SIZE = 28
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
UNSUPPORTED_VERSION = 35
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82
UNSTABLE_OFFSET_COMMIT = 88

# Errors of writing the group's state to its offsets partition, which a 0.9 coordinator answers
# as they are (later brokers say COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR instead): too few
# in-sync replicas, the partition gone or led elsewhere. Seen from 0.9 brokers losing a replica.
_STORE_TROUBLE = frozenset({UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_FOR_PARTITION,
                            NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND})
# The coordinator moved, is starting, or failed for a moment: look it up again.
_COORDINATOR_TROUBLE = frozenset({COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
                                  NOT_COORDINATOR, REQUEST_TIMED_OUT, UNKNOWN_SERVER_ERROR,
                                  *_STORE_TROUBLE})
# The coordinator no longer knows this member by its id, or its generation: join as new.
_FORGOTTEN = frozenset({ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID})
# A commit that only fails itself: the member goes on, the caller commits again later.
_COMMIT_ONLY = frozenset({UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE,
                          INVALID_COMMIT_OFFSET_SIZE, NOT_ENOUGH_REPLICAS,
                          NOT_ENOUGH_REPLICAS_AFTER_APPEND})
# Java's margin over the rebalance timeout for a JoinGroup's answer.
_JOIN_MARGIN_S = 5.0
# The part of the session the member's lease leaves unused (`lease_deadline`): the
# coordinator's count runs from when it received the request, no earlier than it was sent, and
# this covers the clocks' drift and the moment between the check and the hand-out.
LEASE_MARGIN_SHARE = 0.1


class State(Enum):
    NEW = "new"
    FINDING = "finding"        # looking up the group's coordinator
    JOINING = "joining"        # JoinGroup due or awaiting its answer
    ASSIGNING = "assigning"    # the leader awaits the partition counts of the group's topics
    SYNCING = "syncing"        # SyncGroup due or awaiting its answer
    STABLE = "stable"          # in a generation, heartbeating
    RELOCATING = "relocating"  # in a generation, looking up its coordinator that moved
    LEAVING = "leaving"        # LeaveGroup due or awaiting its answer
    CLOSED = "closed"
    FAILED = "failed"


class Event(Enum):
    START = "start"
    COORDINATOR_FOUND = "coordinator_found"
    COORDINATOR_LOST = "coordinator_lost"  # moved, unreachable, loading, or the session passed
    COORDINATOR_MOVED = "coordinator_moved"  # the same, in a generation whose session lasts
    JOINED_AS_LEADER = "joined_as_leader"
    JOINED_AS_FOLLOWER = "joined_as_follower"
    ASSIGNMENT_COMPUTED = "assignment_computed"
    SYNCED = "synced"
    REJOIN = "rejoin"  # the generation passed, the coordinator is still ours
    COMMIT = "commit"
    FETCH_OFFSETS = "fetch_offsets"
    LEAVE = "leave"
    CLOSE = "close"
    FAIL = "fail"


_IN_GROUP = (State.JOINING, State.ASSIGNING, State.SYNCING, State.STABLE)
_LIVE = (State.NEW, State.FINDING, *_IN_GROUP, State.RELOCATING, State.LEAVING)
# In a generation: its partitions may be delivered while its session lasts.
_GENERATION = (State.STABLE, State.RELOCATING)

_TRANSITIONS: dict[tuple[State, Event], State] = {
    (State.NEW, Event.START): State.FINDING,
    (State.FINDING, Event.COORDINATOR_FOUND): State.JOINING,
    (State.JOINING, Event.JOINED_AS_LEADER): State.ASSIGNING,
    (State.JOINING, Event.JOINED_AS_FOLLOWER): State.SYNCING,
    (State.ASSIGNING, Event.ASSIGNMENT_COMPUTED): State.SYNCING,
    (State.SYNCING, Event.SYNCED): State.STABLE,
    # Outside STABLE a commit is refused and an offset fetch ignored: the generation can pass
    # between the driver's question and its call, which is no bug of the driver.
    **{(state, event): state
       for state in (State.FINDING, *_IN_GROUP, State.RELOCATING, State.LEAVING)
       for event in (Event.COMMIT, Event.FETCH_OFFSETS)},
    **{(state, Event.REJOIN): State.JOINING for state in _IN_GROUP},
    # The generation passed while its coordinator was looked up: join once it is found.
    (State.RELOCATING, Event.REJOIN): State.FINDING,
    **{(state, Event.COORDINATOR_LOST): State.FINDING
       for state in (State.FINDING, *_IN_GROUP, State.RELOCATING)},
    **{(state, Event.COORDINATOR_MOVED): State.RELOCATING for state in _GENERATION},
    (State.RELOCATING, Event.COORDINATOR_FOUND): State.STABLE,
    **{(state, Event.LEAVE): State.LEAVING for state in (*_IN_GROUP, State.RELOCATING)},
    **{(state, Event.CLOSE): State.CLOSED for state in (*_LIVE, State.CLOSED)},
    **{(state, Event.FAIL): State.FAILED for state in _LIVE},
    (State.FAILED, Event.CLOSE): State.FAILED,
}


class Coordinator(NamedTuple):
    node_id: int
    host: str
    port: int


class Generation(NamedTuple):
    generation_id: int
    member_id: str


class Request(NamedTuple):
    """One request to send: to the coordinator, or (`coordinator` None: FindCoordinator) to any
    broker. `round` is the join round it belongs to; an answer from an earlier round changes
    nothing but a commit's outcome."""

    api_key: int
    version: int
    body: bytes
    coordinator: Coordinator | None
    sent_at: float
    deadline: float
    round: int
    offsets: Mapping[TopicPartition, int]  # OffsetCommit: what it commits
    partitions: frozenset[TopicPartition]  # OffsetFetch: what it asks


# -- what the driver learns (`next_events`) --------------------------------------------------

class Assigned(NamedTuple):
    """The member is in `generation` and owns these partitions: deliver and commit them."""

    generation: Generation
    partitions: frozenset[TopicPartition]


class Revoked(NamedTuple):
    """The generation passed: these partitions may no longer be delivered or committed.
    `parting` is that generation when the coordinator began a rebalance, which takes the
    member's last commit in it until the member joins again (`commit_parting`); else None."""

    partitions: frozenset[TopicPartition]
    reason: str
    parting: Generation | None = None


class Committed(NamedTuple):
    offsets: dict[TopicPartition, int]


class CommitFailed(NamedTuple):
    offsets: dict[TopicPartition, int]
    reason: str


class OffsetsFetched(NamedTuple):
    offsets: dict[TopicPartition, int | None]  # None: nothing committed


GroupEvent = Assigned | Revoked | Committed | CommitFailed | OffsetsFetched


class GroupMember:
    """Not thread-safe: the driver serialises every call. `now` is monotonic seconds; the
    timeouts are the Java consumer's keys, in milliseconds. `user_data` goes in every
    JoinGroup's subscription: the group's other members see it (a zkconsumer member that
    honours the cutover fence says so there), and their assignors ignore it."""

    def __init__(self, group_id: str, topics: Collection[str],
                 strategies: Sequence[str] = ("range", "roundrobin"), *,
                 session_timeout_ms: int = 10000, rebalance_timeout_ms: int = 300000,
                 heartbeat_interval_ms: int = 3000, request_timeout_ms: int = 30000,
                 retry_backoff_ms: int = 100, retry_backoff_max_ms: int = 1000,
                 user_data: bytes | None = None) -> None:
        unknown = [name for name in strategies if name not in ASSIGNORS]
        if unknown or not strategies:
            raise AssignmentError(f"unknown partition.assignment.strategy {list(strategies)!r}; "
                                  "use range, roundrobin or both")
        if heartbeat_interval_ms >= session_timeout_ms:
            raise ConfigError("heartbeat.interval.ms", heartbeat_interval_ms,
                              f"must be lower than session.timeout.ms ({session_timeout_ms}), "
                              "typically a third of it")
        self._group_id = group_id
        self._topics = tuple(sorted(set(topics)))  # the subscription wanted
        self._joined_topics: tuple[str, ...] = ()  # the one the last JoinGroup carried
        self._strategies = tuple(strategies)
        self._user_data = user_data
        self._session_s = session_timeout_ms / 1000.0
        self._session_timeout_ms = session_timeout_ms
        self._rebalance_timeout_ms = rebalance_timeout_ms
        self._heartbeat_s = heartbeat_interval_ms / 1000.0
        self._request_s = request_timeout_ms / 1000.0
        self._backoff_s = retry_backoff_ms / 1000.0
        self._backoff_max_s = retry_backoff_max_ms / 1000.0
        self._state = State.NEW
        self._coordinator: Coordinator | None = None
        self._member_id = ""
        self._round = 0
        self._retries = 0  # transient failures since the last generation reached, for the backoff
        self._not_before = 0.0  # no FindCoordinator or JoinGroup before this
        self._in_flight: dict[int, Request] = {}
        self._joined: codec.JoinAnswer | None = None  # this round's JoinGroup answer
        self._group_subscriptions: dict[str, tuple[str, ...]] = {}  # the leader's: per member
        # The leader's: the partition counts this round's assignment was computed from.
        self._counted: dict[str, int] = {}
        self._sync_assignments: dict[str, bytes] = {}
        self._generation: Generation | None = None
        self._assigned: frozenset[TopicPartition] = frozenset()
        # When the last JoinGroup, SyncGroup, Heartbeat or OffsetCommit the coordinator
        # answered (counting the member in) was sent: its session there runs from no earlier
        # than that. Minus infinity before the first.
        self._alive_since = -math.inf
        self._moved_at: float | None = None  # when the coordinator of the generation moved
        self._heartbeat_at = 0.0
        self._commits: list[dict[TopicPartition, int]] = []
        # The generation a rebalance just ended, and the revoked partitions' last commits in
        # it, sent before the JoinGroup.
        self._parting: Generation | None = None
        self._parting_commits: list[dict[TopicPartition, int]] = []
        self._fetches: set[TopicPartition] = set()
        self._fetch_at = 0.0
        self._events: list[GroupEvent] = []

    # -- reading ------------------------------------------------------------------------------

    @property
    def state(self) -> State:
        return self._state

    @property
    def group_id(self) -> str:
        return self._group_id

    @property
    def member_id(self) -> str:
        return self._member_id

    @property
    def coordinator(self) -> Coordinator | None:
        """Where every request but FindCoordinator goes; None while it is looked up."""
        return self._coordinator if self._state in (*_IN_GROUP, State.LEAVING) else None

    @property
    def generation(self) -> Generation | None:
        """The generation the member is in; None from the moment it learnt that it passed
        (a session passing is learnt at the next call told the time; `may_deliver` reads the
        clock itself)."""
        return self._generation

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        return self._assigned

    @property
    def lease_deadline(self) -> float:
        """Until when the coordinator is proven to count the member in (monotonic seconds;
        minus infinity before it ever answered): the last JoinGroup, SyncGroup, Heartbeat or
        OffsetCommit it answered was sent at `alive_since`, so it counts the member in at
        least a session after that; less `LEASE_MARGIN_SHARE` of the session, for the time
        between a check and its hand-out. It outlasts a generation that a rebalance ended: the
        coordinator still takes the parting commit in it, and what is delivered is the
        generation's to stop (`generation`, `may_deliver`)."""
        return lease_deadline(self._alive_since, self._session_s, 1.0 - LEASE_MARGIN_SHARE)

    def may_deliver(self, tp: TopicPartition, now: float) -> bool:
        """Whether `tp` may be delivered or committed now: it was given to the member in its
        generation, the generation has not passed, and a heartbeat (or the SyncGroup) sent
        less than `session.timeout.ms` ago was answered."""
        return (self._state in _GENERATION and tp in self._assigned
                and now < self._alive_since + self._session_s)

    def topics_to_count(self) -> list[str]:
        """The leader's question to the driver: how many partitions each of these topics has
        (every topic a member of the group subscribes to); answer with `assign`."""
        if self._state is not State.ASSIGNING:
            return []
        return sorted({topic for topics in self._group_subscriptions.values()
                       for topic in topics})

    def subscribe(self, topics: Collection[str], now: float) -> None:
        """A pattern subscription's topics, matched again against the cluster's: when they
        changed, the member joins again with them (leader or not), as the Java consumer does
        for a pattern; a change while a JoinGroup is under way is carried by a JoinGroup
        right after that generation comes."""
        self._check(now)
        self._topics = tuple(sorted(set(topics)))
        self._rejoin_for_subscription(now)

    def topics_to_watch(self) -> list[str]:
        """The leader's, in a generation it assigned: the topics whose partition counts the
        assignment was computed from. A topic created since, or given more partitions, needs a
        new assignment: read their counts again now and then and tell `partition_counts_seen`."""
        return sorted(self._counted) if self._state is State.STABLE else []

    def watched_topic_missing(self) -> bool:
        """Whether the assignment counted a topic with no partitions (one not created yet),
        which the driver then asks about more often."""
        return 0 in self._counted.values()

    def next_events(self) -> list[GroupEvent]:
        """What happened since the last call, in order."""
        events, self._events = self._events, []
        return events

    # -- what the driver reports --------------------------------------------------------------

    def start(self, now: float) -> None:
        self._transition(Event.START)
        self._not_before = now

    def assign(self, partition_counts: Mapping[str, int], now: float) -> None:
        """The leader's assignment of the group, from the partition counts of
        `topics_to_count` (a topic left out has none)."""
        self._check(now)
        self._transition(Event.ASSIGNMENT_COMPUTED)
        assert self._joined is not None  # ASSIGNING comes only with a JoinGroup answer
        strategy = self._joined.protocol_name or ""
        self._counted = {topic: partition_counts.get(topic, 0)
                         for topics in self._group_subscriptions.values() for topic in topics}
        group = group_assign(strategy, self._group_subscriptions, partition_counts)
        self._sync_assignments = {member: encode_assignment(Assignment(0, tuple(partitions)))
                                  for member, partitions in group.items()}
        log.info("computed the group's assignment as its leader", group=self._group_id,
                 strategy=strategy, members=len(group),
                 partitions=sum(len(partitions) for partitions in group.values()))

    def partition_counts_seen(self, partition_counts: Mapping[str, int], now: float) -> None:
        """The counts of `topics_to_watch` read again (a topic left out has none). When any
        changed, the leader joins again, as the Java consumer's leader does when metadata
        changes: the coordinator then rebalances the group and the leader assigns it anew.
        Ignored outside a generation the member assigned (it may have passed meanwhile)."""
        self._check(now)
        if self._state is not State.STABLE or not self._counted:
            return
        changed = {topic: (counted, partition_counts.get(topic, 0))
                   for topic, counted in self._counted.items()
                   if partition_counts.get(topic, 0) != counted}
        if changed:
            self._rejoin("partition counts changed: " + ", ".join(
                f"{topic} {before} -> {after}"
                for topic, (before, after) in sorted(changed.items())[:5]), now, parting=True)

    def commit(self, offsets: Mapping[TopicPartition, int], now: float
               ) -> list[TopicPartition]:
        """Commit these offsets (the next to consume) in the member's generation; the
        partitions that may not be committed now (`may_deliver`) are left out and returned."""
        self._check(now)
        self._transition(Event.COMMIT)
        refused = [tp for tp in offsets if not self.may_deliver(tp, now)]
        allowed = {tp: offset for tp, offset in offsets.items() if tp not in refused}
        if allowed:
            self._commits.append(allowed)
        return refused

    def commit_parting(self, offsets: Mapping[TopicPartition, int], now: float
                       ) -> list[TopicPartition]:
        """Commit the revoked partitions' offsets in the generation a rebalance just ended
        (`Revoked.parting`), before the member joins again, as Java's consumer commits before
        it rejoins: the JoinGroup waits for the answer. Refused whole (and returned) once the
        JoinGroup was sent, or when the generation did not end with a rebalance."""
        self._check(now)
        self._transition(Event.COMMIT)
        if self._state is not State.JOINING or self._parting is None:
            return list(offsets)
        if offsets:
            self._parting_commits.append(dict(offsets))
        return []

    def fetch_offsets(self, partitions: Collection[TopicPartition], now: float) -> None:
        """Ask the coordinator the group's committed offsets of these partitions (outside a
        generation: nothing is asked); the answer comes as `OffsetsFetched`."""
        self._check(now)
        self._transition(Event.FETCH_OFFSETS)
        if self._state in _GENERATION:  # asked once a moved coordinator is found again
            self._fetches.update(partitions)

    def close(self, now: float) -> None:
        """A clean stop: leave the group if the member is in it, else close at once. The
        generation passes here, so a commit still queued is not sent but comes back as
        `CommitFailed`: a driver's final commit is made, and its `Committed` waited for, before
        it closes."""
        if self._state in (*_IN_GROUP, State.RELOCATING) and self._member_id:
            self._pass_generation("the member is leaving the group")
            self._next_round()
            self._transition(Event.LEAVE)
        else:
            self._pass_generation("the member closed")
            self._next_round()
            self._transition(Event.CLOSE)

    # -- what to send -------------------------------------------------------------------------

    def next_request(self, versions: codec.GroupVersions, now: float) -> Request | None:
        """The request to send now, on a connection to `coordinator` (or, while that is None,
        to any broker) speaking `versions`; None when nothing is due. Call until None."""
        self._check(now)
        state = self._state
        if state in (State.FINDING, State.RELOCATING) and now >= self._not_before:
            return self._send(FIND_COORDINATOR, versions.find_coordinator,
                              codec.find_coordinator_request(self._group_id,
                                                             versions.find_coordinator), now)
        if state is State.JOINING and self._parting is not None:
            if self._parting_commits:
                offsets = self._parting_commits.pop(0)
                return self._send(OFFSET_COMMIT, versions.offset_commit,
                                  codec.offset_commit_request(
                                      self._group_id, self._parting.generation_id,
                                      self._parting.member_id, offsets, versions.offset_commit),
                                  now, offsets=offsets)
            if OFFSET_COMMIT in self._in_flight:
                return None  # the JoinGroup waits for the parting commit's answer
        if state is State.JOINING and now >= self._not_before:
            request = self._send(JOIN_GROUP, versions.join_group, self._join_body(versions), now)
            if request is not None:
                self._parting = None  # the old generation takes no commit from here on
                self._joined_topics = self._topics
            return request
        if state is State.SYNCING:
            assert self._joined is not None and self._generation is None
            return self._send(SYNC_GROUP, versions.sync_group, codec.sync_group_request(
                self._group_id, self._joined.generation_id, self._member_id,
                self._joined.protocol_name or "", self._sync_assignments,
                versions.sync_group), now)
        if state is State.LEAVING:
            return self._send(LEAVE_GROUP, versions.leave_group, codec.leave_group_request(
                self._group_id, self._member_id, versions.leave_group), now)
        if state is not State.STABLE or self._generation is None:
            return None
        generation = self._generation
        if now >= self._heartbeat_at:
            request = self._send(HEARTBEAT, versions.heartbeat, codec.heartbeat_request(
                self._group_id, generation.generation_id, generation.member_id,
                versions.heartbeat), now)
            if request is not None:
                return request
        if self._commits and OFFSET_COMMIT not in self._in_flight:
            offsets = self._commits.pop(0)
            return self._send(OFFSET_COMMIT, versions.offset_commit, codec.offset_commit_request(
                self._group_id, generation.generation_id, generation.member_id, offsets,
                versions.offset_commit), now, offsets=offsets)
        if self._fetches and now >= self._fetch_at:
            asked = frozenset(self._fetches)
            request = self._send(OFFSET_FETCH, versions.offset_fetch, codec.offset_fetch_request(
                self._group_id, sorted(asked), versions.offset_fetch), now, partitions=asked)
            if request is not None:
                self._fetches.clear()
            return request
        return None

    def wait_until(self, now: float) -> float:
        """When something next falls due (a request, a backoff's end, a heartbeat, the session
        passing, an answer overdue), for the driver's wait."""
        times = [request.deadline for request in self._in_flight.values()]
        state, idle = self._state, not self._in_flight.keys() - {OFFSET_COMMIT}
        if state in (State.FINDING, State.JOINING, State.RELOCATING) and idle:
            times.append(self._not_before)
        if state is State.RELOCATING:
            times.append(self._alive_since + self._session_s)
        if state in (State.SYNCING, State.LEAVING) and idle:
            times.append(now)
        if state is State.STABLE:
            # A heartbeat or offset fetch still awaiting its answer is not due again: its time,
            # passed, would have the driver wake at once, over and over, until the answer.
            times.append(self._alive_since + self._session_s)
            if HEARTBEAT not in self._in_flight:
                times.append(self._heartbeat_at)
            if self._fetches and OFFSET_FETCH not in self._in_flight:
                times.append(self._fetch_at)
            if self._commits and OFFSET_COMMIT not in self._in_flight:
                times.append(now)
        return max(now, min(times)) if times else now + self._heartbeat_s

    # -- what came back -----------------------------------------------------------------------

    def receive(self, request: Request, payload: bytes | bytearray, now: float) -> None:
        """The coordinator's (or, for FindCoordinator, a broker's) answer to `request`."""
        if not self._answered(request):
            return
        name = API_NAMES[request.api_key]
        try:
            if request.api_key == FIND_COORDINATOR:
                return self._coordinator_answered(
                    codec.decode_find_coordinator(payload, request.version), now)
            if request.api_key == JOIN_GROUP:
                return self._join_answered(codec.decode_join_group(payload, request.version),
                                           request, now)
            if request.api_key == SYNC_GROUP:
                return self._sync_answered(*codec.decode_sync_group(payload, request.version),
                                           request, now)
            if request.api_key == HEARTBEAT:
                return self._heartbeat_answered(
                    codec.decode_heartbeat(payload, request.version), request, now)
            if request.api_key == LEAVE_GROUP:
                return self._left(codec.decode_leave_group(payload, request.version))
            if request.api_key == OFFSET_COMMIT:
                return self._commit_answered(
                    codec.decode_offset_commit(payload, request.version), request, now)
            return self._offsets_answered(codec.decode_offset_fetch(payload, request.version),
                                          request, now)
        except ProtocolError as exc:
            self._fail(GroupError(f"the group coordinator's {name} v{request.version} answer "
                                  f"does not parse: {exc}"))

    def failed(self, request: Request, failure: ChannelError | str, now: float) -> None:
        """`request` got no answer: its connection failed or closed, or it is overdue."""
        if not self._answered(request):
            return
        reason = f"{API_NAMES[request.api_key]} got no answer: {failure}"
        if request.api_key == OFFSET_COMMIT and not self._commit_kept(request, now):
            self._events.append(CommitFailed(dict(request.offsets), reason))
        if request.api_key == OFFSET_FETCH:
            self._fetches.update(request.partitions)  # cleared if the generation passes
        if request.api_key == LEAVE_GROUP:
            return self._left(0)
        if request.round == self._round and self._state in (State.FINDING, *_IN_GROUP,
                                                             State.RELOCATING):
            self._coordinator_lost(reason, now)

    def unreachable(self, reason: str, now: float) -> None:
        """The coordinator cannot be connected to (its broker is down): look it up again, in
        the generation while its session lasts; a member leaving is gone either way."""
        if self._state is State.LEAVING:
            log.info("the coordinator cannot be reached to leave the group; the member is "
                     "gone either way", group=self._group_id, error=reason)
            self._transition(Event.CLOSE)
        elif self._state in (*_IN_GROUP, State.RELOCATING):
            self._coordinator_lost(f"the coordinator cannot be reached: {reason}", now)

    def expire(self, now: float) -> None:
        """Give up on answers overdue (`request.timeout.ms`; a JoinGroup's is the rebalance
        timeout and 5 s more), and on a generation whose session passed."""
        for request in [r for r in self._in_flight.values() if now >= r.deadline]:
            self.failed(request, f"no answer within {request.deadline - request.sent_at:g} s",
                        now)
        self._check(now)

    # -- the answers --------------------------------------------------------------------------

    def _coordinator_answered(self, answer: codec.CoordinatorAnswer, now: float) -> None:
        if answer.error in _COORDINATOR_TROUBLE:
            return self._coordinator_lost(_describe(FIND_COORDINATOR, answer.error), now)
        if answer.error:
            self._fatal(FIND_COORDINATOR, answer.error)
        self._coordinator = Coordinator(answer.node_id, answer.host, answer.port)
        if self._state is State.RELOCATING:
            self._heartbeat_at = now  # the new coordinator's answer goes on in the generation
        self._transition(Event.COORDINATOR_FOUND)
        self._not_before = now
        log.info("found the group's coordinator", group=self._group_id,
                 coordinator=f"{answer.host}:{answer.port}", node=answer.node_id)

    def _join_answered(self, answer: codec.JoinAnswer, request: Request, now: float) -> None:
        error = answer.error
        if error == MEMBER_ID_REQUIRED:  # v4+: join again under the id the coordinator gave
            self._member_id = answer.member_id
            return self._rejoin(_describe(JOIN_GROUP, error), now)
        if error:
            if not self._handled_as_group_error(JOIN_GROUP, error, now):
                self._fatal(JOIN_GROUP, error)
            return
        if answer.protocol_name not in self._strategies:
            self._fail(InconsistentGroupProtocolError(
                f"the coordinator chose assignor {answer.protocol_name!r} for group "
                f"{self._group_id!r}; this member offers {self._offer()}"))
        self._member_id = answer.member_id
        self._joined = answer
        self._group_subscriptions = {}
        if answer.leader == answer.member_id:
            try:
                self._group_subscriptions = {
                    member: decode_subscription(metadata, member).topics
                    for member, metadata in answer.members}
            except GroupMetadataError as exc:
                self._fail(exc)
        leader = answer.leader == answer.member_id
        self._transition(Event.JOINED_AS_LEADER if leader else Event.JOINED_AS_FOLLOWER)
        self._sync_assignments = {}
        # The coordinator counts the member in from here: its session runs from the join.
        self._alive_since = request.sent_at
        log.info("joined the group", group=self._group_id, generation=answer.generation_id,
                 member_id=answer.member_id, leader=leader, strategy=answer.protocol_name)

    def _sync_answered(self, error: int, assignment: bytes, request: Request, now: float
                       ) -> None:
        if error:
            if not self._handled_as_group_error(SYNC_GROUP, error, now):
                self._fatal(SYNC_GROUP, error)
            return
        assert self._joined is not None
        try:  # the leader gives no bytes at all to a member it left out
            leader = f"group leader {self._joined.leader!r}"
            partitions = (decode_assignment(assignment, leader).partitions
                          if assignment else ())
        except GroupMetadataError as exc:
            self._fail(exc)
        # Only a generation reached ends the backoff: a coordinator found, or a join
        # answered, by one that then fails the same way every time (a 0.9 coordinator that
        # cannot store the group) must not be asked again ten times a second.
        self._retries = 0
        self._generation = Generation(self._joined.generation_id, self._member_id)
        self._assigned = frozenset(partitions)
        self._alive_since = request.sent_at
        self._heartbeat_at = now + self._heartbeat_s
        self._transition(Event.SYNCED)
        self._events.append(Assigned(self._generation, self._assigned))
        log.info("assigned partitions", group=self._group_id,
                 generation=self._generation.generation_id, count=len(self._assigned))
        self._rejoin_for_subscription(now)

    def _heartbeat_answered(self, error: int, request: Request, now: float) -> None:
        if error:
            if not self._handled_as_group_error(HEARTBEAT, error, now):
                self._fatal(HEARTBEAT, error)
            return
        self._alive_since = request.sent_at
        self._retries = 0  # the generation is the member's still, where it is looked after
        if self._moved_at is not None and self._generation is not None:
            log.info("the group's coordinator moved; the generation goes on there",
                     group=self._group_id, generation=self._generation.generation_id,
                     coordinator=f"{self._coordinator.host}:{self._coordinator.port}"
                     if self._coordinator else None, ms=round((now - self._moved_at) * 1000))
            self._moved_at = None

    def _commit_answered(self, errors: Mapping[TopicPartition, int], request: Request,
                         now: float) -> None:
        offsets = dict(request.offsets)
        codes = {code for tp, code in errors.items() if tp in offsets and code}
        unanswered = [tp for tp in offsets if tp not in errors]
        if not codes and not unanswered:
            if request.round == self._round and self._state is State.STABLE:
                # The coordinator counts in a member whose commit in its generation it took.
                self._alive_since = max(self._alive_since, request.sent_at)
            self._events.append(Committed(offsets))
            return
        if not codes:
            self._events.append(CommitFailed(offsets, f"the OffsetCommit answer left out "
                                                      f"{len(unanswered)} of its partitions"))
            return
        error = min(codes, key=_severity)
        if (error in _COMMIT_ONLY or error not in _COORDINATOR_TROUBLE
                or not self._commit_kept(request, now)):
            self._events.append(CommitFailed(offsets, _describe(OFFSET_COMMIT, error)))
        if error in _COMMIT_ONLY or request.round != self._round:
            return
        if not self._handled_as_group_error(OFFSET_COMMIT, error, now):
            self._fatal(OFFSET_COMMIT, error)

    def _offsets_answered(self, answer: codec.FetchedOffsets, request: Request, now: float
                          ) -> None:
        codes = {code for code, _ in answer.offsets.values() if code} | (
            {answer.error} if answer.error else set())
        others = codes - {UNKNOWN_TOPIC_OR_PARTITION, UNSTABLE_OFFSET_COMMIT}
        if others:
            error = min(others, key=_severity)
            self._fetches.update(request.partitions)  # cleared if the generation passes
            if not self._handled_as_group_error(OFFSET_FETCH, error, now):
                self._fatal(OFFSET_FETCH, error)
            return
        if UNSTABLE_OFFSET_COMMIT in codes:
            # A transaction's offsets are not decided yet: ask again after the backoff.
            self._fetches.update(request.partitions)
            self._fetch_at = now + self._backoff_s
            return
        self._events.append(OffsetsFetched({
            tp: offset if code == 0 else None
            for tp, (code, offset) in answer.offsets.items() if tp in request.partitions}))

    def _left(self, error: int) -> None:
        if error:
            log.info("the coordinator answered LeaveGroup with an error; the member is gone "
                     "either way", group=self._group_id, error=_describe(LEAVE_GROUP, error))
        self._transition(Event.CLOSE)

    # -- error codes --------------------------------------------------------------------------

    def _handled_as_group_error(self, api_key: int, error: int, now: float) -> bool:
        """Rejoin or look the coordinator up again for the codes that call for it; False for
        any other code."""
        reason = _describe(api_key, error)
        if error == REBALANCE_IN_PROGRESS:
            self._rejoin(reason, now, parting=True)
        elif error in _FORGOTTEN:
            self._member_id = ""
            self._rejoin(reason, now)
        elif error in _COORDINATOR_TROUBLE:
            self._coordinator_lost(reason, now)
        else:
            return False
        return True

    def _fatal(self, api_key: int, error: int) -> NoReturn:
        reason = _describe(api_key, error)
        group = repr(self._group_id)
        if error == INCONSISTENT_GROUP_PROTOCOL:
            exc: GroupError = self.refusal()
        elif error in (GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED):
            exc = GroupAuthorizationError(f"the brokers refuse this client group {group} or its "
                                          f"topics ({reason}); grant it in the broker's ACLs")
        elif error == INVALID_SESSION_TIMEOUT:
            exc = GroupConfigError(
                f"session.timeout.ms={self._session_timeout_ms} is outside the range the brokers "
                f"allow, group.min.session.timeout.ms to group.max.session.timeout.ms ({reason})")
        elif error == INVALID_GROUP_ID:
            exc = GroupConfigError(f"the brokers refuse group.id {group} ({reason})")
        elif error == GROUP_MAX_SIZE_REACHED:
            exc = GroupConfigError(f"group {group} already has the brokers' group.max.size "
                                   f"members ({reason})")
        else:
            exc = GroupError(f"the group coordinator answered {reason} for group {group}")
        self._fail(exc)

    def _fail(self, exc: GroupError) -> NoReturn:
        self._pass_generation(str(exc))
        self._next_round()
        self._transition(Event.FAIL)
        if not isinstance(exc, ProtocolRefusedError):  # logged once the driver words it
            log.error("the member cannot stay in its group", group=self._group_id,
                      error=str(exc))
        raise exc

    # -- the generation's passing -------------------------------------------------------------

    def _check(self, now: float) -> None:
        """The clock's part: a generation whose last answered heartbeat is a session old may
        be gone at the coordinator already."""
        if self._state in _GENERATION and now >= self._alive_since + self._session_s:
            self._coordinator_lost(
                f"no heartbeat answered for session.timeout.ms ({self._session_timeout_ms} ms)",
                now)

    def _rejoin_for_subscription(self, now: float) -> None:
        if self._state is not State.STABLE or self._topics == self._joined_topics:
            return
        added = sorted(set(self._topics) - set(self._joined_topics))
        removed = sorted(set(self._joined_topics) - set(self._topics))
        self._rejoin("subscription changed: " + "; ".join(
            f"{sign} {', '.join(topics[:5])}" for sign, topics in (("+", added), ("-", removed))
            if topics), now, parting=True)

    def _rejoin(self, reason: str, now: float, parting: bool = False) -> None:
        self._pass_generation(reason, parting)
        self._next_round()
        self._transition(Event.REJOIN)
        self._not_before = now
        log.info("rejoining the group", group=self._group_id, reason=reason,
                 member_id=self._member_id or None)

    def _coordinator_lost(self, reason: str, now: float) -> None:
        kept = self._keeps_generation(now)
        if kept:
            # Only what the old coordinator was asked goes: a commit is sent again (or its
            # loss reported) when answered or failed, a fetch is asked again.
            for request in self._in_flight.values():
                if request.api_key == OFFSET_FETCH:
                    self._fetches.update(request.partitions)
            self._in_flight = {key: request for key, request in self._in_flight.items()
                               if key == OFFSET_COMMIT}
            self._transition(Event.COORDINATOR_MOVED)
            if self._moved_at is None:
                self._moved_at = now
        else:
            self._pass_generation(reason)
            self._next_round()
            self._transition(Event.COORDINATOR_LOST)
        delay = min(self._backoff_max_s, self._backoff_s * 2 ** self._retries)
        self._retries += 1
        self._not_before = now + delay
        log.info("looking the group's coordinator up again", group=self._group_id,
                 reason=reason, retry_in_ms=round(delay * 1000),
                 generation=self._generation.generation_id if kept and self._generation
                 else None)

    def _keeps_generation(self, now: float) -> bool:
        """Whether a coordinator moved or out of reach leaves the member its generation: it is
        in one whose session lasts, which the new coordinator takes over (Java's consumer
        goes on heartbeating there); the lease stops delivery if no answer comes in time."""
        return (self._state in _GENERATION and self._generation is not None
                and now < self._alive_since + self._session_s)

    def _commit_kept(self, request: Request, now: float) -> bool:
        """Whether a commit the coordinator's move left unanswered (or answered with its
        trouble) is sent again, to the new coordinator in the same generation: it was made
        in the generation the member keeps. If that passes, it fails with the others."""
        if request.round != self._round or not self._keeps_generation(now):
            return False
        self._commits.insert(0, dict(request.offsets))
        return True

    def _pass_generation(self, reason: str, parting: bool = False) -> None:
        """The gate closes: nothing assigned may be delivered or committed any more, but for
        the parting commit when a rebalance ended the generation (`commit_parting`)."""
        self._parting = self._generation if parting else None
        self._moved_at = None
        self._events.extend(CommitFailed(offsets, reason) for offsets in self._parting_commits)
        self._parting_commits.clear()
        if self._generation is None and not self._assigned:
            return
        revoked = self._assigned
        self._generation = None
        self._assigned = frozenset()
        self._events.append(Revoked(revoked, reason, self._parting))
        self._events.extend(CommitFailed(offsets, reason) for offsets in self._commits)
        self._commits.clear()
        self._fetches.clear()

    def _next_round(self) -> None:
        """Answers to this round's requests change nothing from now on (a commit's outcome is
        still reported)."""
        self._round += 1
        self._joined = None
        self._counted = {}
        self._in_flight = {key: request for key, request in self._in_flight.items()
                           if key == OFFSET_COMMIT}

    # -- helpers ------------------------------------------------------------------------------

    def _transition(self, event: Event) -> None:
        target = _TRANSITIONS.get((self._state, event))
        if target is None:
            raise UnexpectedGroupEvent(f"group {self._group_id!r}: event {event.value} is not "
                                       f"one state {self._state.value} takes")
        self._state = target

    def _send(self, api_key: int, version: int, body: bytes, now: float,
              offsets: Mapping[TopicPartition, int] | None = None,
              partitions: frozenset[TopicPartition] = frozenset()) -> Request | None:
        if api_key in self._in_flight:
            return None
        timeout = self._request_s
        if api_key == JOIN_GROUP:
            rebalance_ms = self._rebalance_timeout_ms if version >= 1 else self._session_timeout_ms
            timeout = max(timeout, rebalance_ms / 1000.0 + _JOIN_MARGIN_S)
        request = Request(api_key, version, body,
                          None if api_key == FIND_COORDINATOR else self._coordinator, now,
                          now + timeout, self._round, offsets or {}, partitions)
        self._in_flight[api_key] = request
        if api_key == HEARTBEAT:
            self._heartbeat_at = now + self._heartbeat_s
        return request

    def _answered(self, request: Request) -> bool:
        """Whether the answer to `request` is still awaited (not overdue, not of a request
        that an earlier failure or a new round dropped)."""
        if self._in_flight.get(request.api_key) is not request:
            return False
        del self._in_flight[request.api_key]
        return True

    def _join_body(self, versions: codec.GroupVersions) -> bytes:
        subscription = encode_subscription(Subscription(0, self._topics, self._user_data))
        return codec.join_group_request(
            self._group_id, self._session_timeout_ms, self._rebalance_timeout_ms,
            self._member_id, [(name, subscription) for name in self._strategies],
            versions.join_group)

    def _offer(self) -> str:
        return f"protocol type {PROTOCOL_TYPE!r} with assignors {', '.join(self._strategies)}"

    def refusal(self, theirs: codec.DescribedGroup | str | None = None) -> ProtocolRefusedError:
        """The coordinator's refusal of this member's protocol (INCONSISTENT_GROUP_PROTOCOL) in
        one line naming both sides: what this member offers, and what the group's members use
        as the coordinator describes the group (`theirs`: the DescribeGroups answer the driver
        got after the refusal, since the refusal itself names nothing of theirs), or why that
        could not be learnt (a str), or, with None, in general terms."""
        refused = (f"group {self._group_id!r} refused this member "
                   f"({_describe(JOIN_GROUP, INCONSISTENT_GROUP_PROTOCOL)}): it offers "
                   f"{self._offer()}")
        remedy = "set partition.assignment.strategy to one they use"
        if isinstance(theirs, codec.DescribedGroup) and theirs.error:
            theirs = _describe(DESCRIBE_GROUPS, theirs.error)
        if not isinstance(theirs, codec.DescribedGroup):
            unknown = "" if theirs is None else f" (DescribeGroups could not say which: {theirs})"
            return ProtocolRefusedError(
                f"{refused}, and the group's members speak another protocol type or none of "
                f"these assignors{unknown}; {remedy}")
        if not theirs.members:
            return ProtocolRefusedError(f"{refused}; the group has no members now (state "
                                        f"{theirs.state}): they left meanwhile")
        assignor = (f"assignor {theirs.protocol!r}" if theirs.protocol else
                    f"no assignor chosen yet (state {theirs.state})")
        if theirs.protocol_type != PROTOCOL_TYPE:
            remedy = "it is another kind of group: use another group.id"
        members = ("the group's member uses" if theirs.members == 1 else
                   f"the group's {theirs.members} members use")
        return ProtocolRefusedError(f"{refused}; {members} protocol type "
                                    f"{theirs.protocol_type!r} with {assignor}: {remedy}")


def _describe(api_key: int, error: int) -> str:
    return f"Kafka error {error} {error_name(error)} answering {API_NAMES[api_key]}"


def _severity(error: int) -> int:
    """Which of several codes in one OffsetCommit answer decides: what ends the member first,
    then what passes the generation, then what moves the coordinator, then the rest, and last
    what fails the commit alone."""
    if error in (GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED):
        return 0
    if error in _FORGOTTEN or error == REBALANCE_IN_PROGRESS:
        return 1
    if error in _COMMIT_ONLY:
        return 4
    if error in _COORDINATOR_TROUBLE:
        return 2
    return 3

"""The edge between a member and Kafka's group coordinator: one thread owns the connection to
the coordinator (and, to look it up, to a bootstrap broker), drives the sans-I/O `GroupMember`
with the clock, and turns what it learns into the member's state.

A generation is to a Kafka-coordinated member what the ZooKeeper session is to the other kind:
the token its claims are made under (`MemberState`). An assignment comes as a new session, so
the member's worker claims it, reading the committed offsets through the coordinator
(`fetch_offsets`); the generation passing (a rebalance began, the coordinator forgot the
member, no heartbeat was answered for a session) comes as the session's expiry, which
closes the gate and drops every claim in one step, before anything else is done. A coordinator
that moved is no such passing: the member looks it up again in its generation, its claims kept
and their delivery stopped by the lease alone until the new coordinator answers. Every answer
that proves the generation still the member's renews the gate's lease (`GroupMember.
lease_deadline`), whose deadline stops the streams by itself, whether or not this thread runs
to notice the session passing (a frozen process). Commits go through the group member too, in
the generation their claims were made in, and never in another (`commit`).

A refusal of the member's protocol (INCONSISTENT_GROUP_PROTOCOL) names nothing of the other
members', so the coordinator that sent it is asked what they use (DescribeGroups, on the same
connection) and the member fails with one line naming both sides.

Other threads only queue calls here and wait for their outcome: the `GroupMember` is touched
by this thread alone. Waits for an answer are sliced so that a stop ends a JoinGroup held at
the coordinator (for up to the rebalance timeout) at once.
"""

from __future__ import annotations

import collections
import queue
import select
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, NamedTuple, Protocol

from zkconsumer.errors import ZkConsumerError
from zkconsumer.kafka.errors import ChannelError, ProtocolRefusedError
from zkconsumer.kafka.io.channel import BrokerChannel
from zkconsumer.kafka.io.connect import parse_servers
from zkconsumer.kafka.io.opener import Dialer, open_broker
from zkconsumer.kafka.protocol.codec import (
    DESCRIBE_GROUPS,
    JOIN_GROUP,
    SYNC_GROUP,
    ProtocolError,
)
from zkconsumer.kafka.protocol.group_codec import (
    DESCRIBE_GROUPS_VERSION,
    DescribedGroup,
    GroupNegotiation,
    GroupVersions,
    decode_describe_groups,
    describe_groups_request,
)
from zkconsumer.kafka.protocol.group_member import (
    Assigned,
    CommitFailed,
    Committed,
    Generation,
    GroupEvent,
    GroupMember,
    OffsetsFetched,
    Revoked,
    State,
)
from zkconsumer.logs import get_logger
from zkconsumer.member import coordination as port
from zkconsumer.member.claims import Token
from zkconsumer.member.state import MemberState, StaleClaimError
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.store import OffsetStoreError

log = get_logger(__name__)

# A refused member asks what the others use this long at the most before it reports.
DESCRIBE_TIMEOUT_S = 5.0
# The longest the thread waits before it looks at its calls, the clock and a stop again.
_SLICE_S = 0.1
# How often a leader whose assignment counted a topic with no partitions (not created yet)
# reads the counts again, whatever the interval for the others.
MISSING_TOPIC_RECOUNT_S = 1.0
# The member's own JoinGroup and SyncGroup: given up at once when the member is leaving.
_REBALANCE_REQUESTS = (JOIN_GROUP, SYNC_GROUP)


class GenerationPassed(StaleClaimError):
    """The generation a claim or a commit was made in passed before it was done."""


class UnexpectedGroupEvent(ZkConsumerError):
    """The group member reported what this driver never asked for: a defect, which fails the
    member rather than being dropped."""


class _Call(NamedTuple):
    kind: str  # "commit", "fetch" or "close"
    offsets: Mapping[TopicPartition, int]
    tokens: Mapping[TopicPartition, Token]
    partitions: frozenset[TopicPartition]
    generation: Generation | None
    outcome: Future


class KafkaCoordination:
    """`settings` are the member's kafka-python settings (the fetcher's: bootstrap servers,
    api_version, TLS, SASL, client id, request timeout); `partition_counts(topics)` answers
    the leader's question. When the generation passed, `withdraw()` stops delivery from its
    claims and gives their last offsets (for the parting commit, when a rebalance ended it),
    and `forget()` is called once the member's state dropped the claims. As the group's leader
    it counts the partitions of the group's topics again every `recount_interval_s`, so that a
    topic created or given partitions since is assigned. A pattern subscription's topics
    (`subscription()`, None for a fixed one) are matched again as often, and a change joins the
    group again with them."""

    def __init__(self, group: GroupMember, member: MemberState, settings: Mapping[str, Any],
                 partition_counts: Callable[[list[str]], dict[str, int]],
                 withdraw: Callable[[], Mapping[TopicPartition, int]],
                 forget: Callable[[], None], on_failure: Callable[[BaseException], None],
                 recount_interval_s: float = 10.0,
                 subscription: Callable[[], list[str]] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._group = group
        self._member = member
        self._bootstrap = parse_servers(settings["bootstrap_servers"])
        self._dialer = Dialer.from_settings(settings)
        self._negotiation = GroupNegotiation(settings.get("api_version"))
        self._timeout_s = self._dialer.timeout_s
        self._partition_counts = partition_counts
        self._withdraw = withdraw
        self._forget = forget
        self._on_failure = on_failure
        self._recount_interval_s = recount_interval_s
        self._recount_at = 0.0
        self._count_again_at = 0.0  # after a count that could not be read
        self._counting_failed = False  # warned of once per run of failures
        self._subscription = subscription
        self._rematch_at = 0.0
        self._clock = clock
        self._calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._leaving = threading.Event()
        self._stopped = threading.Event()
        # The commits sent, in order, each with what the group member refused of it; None for
        # a parting commit, which nobody waits for.
        self._commits: collections.deque[tuple[Future | None, list[TopicPartition]]] = \
            collections.deque()
        self._fetch: tuple[Generation, Future] | None = None
        self._rebalance_began = clock()  # the first join, then each generation's passing
        self._channels: dict[tuple[str, int], tuple[BrokerChannel, GroupVersions]] = {}
        self._next_bootstrap = 0
        self._thread = threading.Thread(target=self._run, name="zkconsumer-coordination",
                                        daemon=True)
        self._lease = group.lease_deadline  # what the gate was last told
        member.gate.lease(self._lease)

    # -- other threads ------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def on_its_thread(self) -> bool:
        """Whether the caller is the coordination thread (in the user's on_partitions_revoked,
        which it calls)."""
        return threading.current_thread() is self._thread

    def rebalance_seconds(self) -> float:
        """How long since the member last began to (re)join: on an assignment, how long the
        member went without one."""
        return self._clock() - self._rebalance_began

    def commit(self, offsets: Mapping[TopicPartition, int],
               tokens: Mapping[TopicPartition, Token]) -> None:
        """Commit `offsets` in the generation each partition's token names, which must be the
        member's generation when the commit is sent; OffsetStoreError when any was not
        committed."""
        self._ask(_Call("commit", offsets, tokens, frozenset(), None, Future()),
                  2 * self._timeout_s)

    def fetch_offsets(self, partitions: Collection[TopicPartition], generation: Generation
                      ) -> dict[TopicPartition, int]:
        """The group's committed offsets of `partitions` (a partition without one is left
        out), read in `generation`; GenerationPassed if it passed first."""
        fetched = self._ask(_Call("fetch", {}, {}, frozenset(partitions), generation, Future()),
                            2 * self._timeout_s)
        return {tp: offset for tp, offset in fetched.items() if offset is not None}

    def close(self, timeout: float) -> bool:
        """Leave the group (LeaveGroup when in it) and stop; True if done within `timeout`."""
        self._leaving.set()
        self._calls.put(_Call("close", {}, {}, frozenset(), None, Future()))
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=timeout)
        return not self._thread.is_alive()

    def _ask(self, call: _Call, timeout: float) -> Any:
        if self._stopped.is_set():
            raise OffsetStoreError("the member is not in its group any more")
        if self.on_its_thread():
            # From a callback this thread runs (the connector turns a commit there into the
            # parting commit): it would wait for itself.
            raise OffsetStoreError(f"no {call.kind} from the coordination thread's own "
                                   "callbacks: their generation passed")
        self._calls.put(call)
        self._wake.set()
        deadline = time.monotonic() + timeout
        while not call.outcome.done():
            if self._stopped.is_set() or time.monotonic() >= deadline:
                raise OffsetStoreError(f"the group coordinator did not answer the {call.kind} "
                                       "in time")
            try:
                return call.outcome.result(timeout=_SLICE_S)
            except FutureTimeout:  # the builtin TimeoutError only from Python 3.11
                continue
        return call.outcome.result()

    # -- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        group = self._group
        try:
            self._rebalance_began = self._clock()
            group.start(self._rebalance_began)
            while group.state not in (State.CLOSED, State.FAILED):
                self._step()
        except Exception as exc:  # noqa: BLE001 - the member fails loudly, once
            self._on_failure(exc)
            self._leave_after_failure()
        finally:
            self._stopped.set()
            for channel, _ in self._channels.values():
                channel.close()
            self._give_up_waiters("the member left its group")

    def _leave_after_failure(self) -> None:
        """A member that failed outside the group protocol (the user's callback raised, a
        topic could not be counted) is still in the group: it leaves now (LeaveGroup, within
        a request timeout), so the others are given its partitions at once rather than after
        its session. Nothing more is reported: the failure was."""
        if self._group.state in (State.CLOSED, State.FAILED):
            return
        self._leaving.set()
        deadline = self._clock() + self._timeout_s
        try:
            if self._group.state is not State.LEAVING:
                self._group.close(self._clock())
            while self._group.state is not State.CLOSED and self._clock() < deadline:
                self._step()
        except Exception:  # noqa: BLE001 - leaving is a courtesy here; the session ends it too
            log.debug("no LeaveGroup after the failure", exc_info=True)

    def _step(self) -> None:
        group = self._group
        now = self._clock()
        self._take_calls(now)
        group.expire(now)
        if group.state is State.ASSIGNING:  # the leader's turn, even with no topic to count
            if now < self._count_again_at:
                self._idle(self._count_again_at - now)
                return
            counts = self._counted(group.topics_to_count())
            if counts is None:  # asked again a little later: the coordinator waits a session
                self._count_again_at = now + MISSING_TOPIC_RECOUNT_S
                self._idle(MISSING_TOPIC_RECOUNT_S)
                return
            group.assign(counts, now)
            self._schedule_recount(now)
        self._recount(now)
        self._rematch(now)
        self._learn(group.next_events(), now)
        if group.state in (State.CLOSED, State.FAILED):
            return
        coordinator = group.coordinator
        address = (coordinator.host, coordinator.port) if coordinator is not None \
            else self._bootstrap[self._next_bootstrap % len(self._bootstrap)]
        try:
            channel, versions = self._channel(address)
        except ChannelError as exc:
            # An unreachable coordinator is looked up again (in the generation, while its
            # session lasts); an unreachable bootstrap broker gives way to the next.
            log.warning("cannot reach the group's broker", broker=f"{address[0]}:{address[1]}",
                        error=str(exc))
            if coordinator is None:
                self._next_bootstrap += 1
                self._idle(1.0)
            else:
                self._group.unreachable(str(exc), self._clock())
            return
        request = group.next_request(versions, now)
        if request is None:
            self._idle(group.wait_until(now) - now)
            return
        try:
            channel.send(request.api_key, request.version, request.body)
            payload = self._answer(channel, request)
        except ChannelError as exc:
            self._drop(address)
            group.failed(request, exc, self._clock())
            return
        if payload is None:
            # The connection is given up with the answer. A JoinGroup or SyncGroup of a member
            # that is leaving goes with the close, which then sends LeaveGroup on a new
            # connection; any other answer counts as lost.
            self._drop(address)
            if not self._leaving.is_set():
                group.failed(request, "given up: overdue, or the generation passed meanwhile",
                             self._clock())
            return
        try:
            group.receive(request, payload, self._clock())
        except ProtocolRefusedError:
            raise group.refusal(self._their_protocol(channel)) from None
        self._renew_lease()

    def _answer(self, channel: BrokerChannel, request) -> bytearray | None:
        """The answer to `request`; None when it is overdue, when the generation passed on
        the clock meanwhile, or when the member is leaving and it is its own JoinGroup or
        SyncGroup (the coordinator may hold those for a whole rebalance timeout)."""
        while True:
            now = self._clock()
            if now >= request.deadline or self._generation_passed(now):
                return None
            if self._leaving.is_set() and request.api_key in _REBALANCE_REQUESTS:
                return None
            wait = min(_SLICE_S, request.deadline - now)
            if channel.has_buffered_data() or select.select([channel], [], [], wait)[0]:
                return channel.receive(max(_SLICE_S, request.deadline - now))

    def _recount(self, now: float) -> None:
        watched = self._group.topics_to_watch()
        if not watched or now < self._recount_at:
            return
        counts = self._counted(watched)
        if counts is not None:
            self._group.partition_counts_seen(counts, now)
        self._schedule_recount(now)

    def _schedule_recount(self, now: float) -> None:
        """Every interval, or every second while a topic the leader counted does not exist."""
        self._recount_at = now + (MISSING_TOPIC_RECOUNT_S if self._group.watched_topic_missing()
                                  else self._recount_interval_s)

    def _rematch(self, now: float) -> None:
        if self._subscription is None or now < self._rematch_at:
            return
        self._rematch_at = now + self._recount_interval_s
        try:
            topics = self._subscription()
        except ZkConsumerError as exc:
            log.warning("cannot match the subscription's pattern now; matching again later",
                        error=str(exc))
            return
        self._group.subscribe(topics, now)

    def _counted(self, topics: list[str]) -> dict[str, int] | None:
        """The topics' partition counts; None when Kafka's metadata cannot be read now (every
        broker restarting, say), which is no reason for the member to fail."""
        if not topics:
            return {}
        try:
            counts = self._partition_counts(topics)
        except ZkConsumerError as exc:
            if not self._counting_failed:
                log.warning("cannot count the partitions of the group's topics now; asking "
                            "again", error=str(exc))
            self._counting_failed = True
            return None
        self._counting_failed = False
        return counts

    def _their_protocol(self, coordinator: BrokerChannel) -> DescribedGroup | str:
        """What the group's members use, as the coordinator that refused this member's
        protocol describes the group; or why it could not be asked or its answer read."""
        try:
            return decode_describe_groups(coordinator.request(
                DESCRIBE_GROUPS, DESCRIBE_GROUPS_VERSION,
                describe_groups_request(self._group.group_id), timeout_s=DESCRIBE_TIMEOUT_S),
                self._group.group_id)
        except (ChannelError, ProtocolError) as exc:
            return str(exc)

    def _generation_passed(self, now: float) -> bool:
        """The clock's part while an answer is awaited: a session that passes without an
        answered heartbeat closes the gate now, not when a slow answer comes."""
        had = self._group.generation is not None
        self._group.expire(now)
        self._learn(self._group.next_events(), now)
        return had and self._group.generation is None

    def _idle(self, seconds: float) -> None:
        self._wake.wait(max(0.0, min(seconds, _SLICE_S)))
        self._wake.clear()

    def _take_calls(self, now: float) -> None:
        while True:
            try:
                call = self._calls.get_nowait()
            except queue.Empty:
                return
            if call.kind == "close":
                if self._group.state is not State.LEAVING:  # its LeaveGroup is due already
                    self._group.close(now)
            elif call.kind == "commit":
                self._commit(call, now)
            else:
                self._fetch_offsets(call, now)

    def _commit(self, call: _Call, now: float) -> None:
        generation = self._group.generation
        refused = [tp for tp in call.offsets if call.tokens.get(tp) != generation]
        allowed = {tp: offset for tp, offset in call.offsets.items() if tp not in refused}
        if allowed:
            refused += self._group.commit(allowed, now)
        if len(refused) < len(call.offsets):  # something queued: its outcome comes as an event
            self._commits.append((call.outcome, refused))
        elif refused:
            call.outcome.set_exception(_not_in_generation(refused))
        else:
            call.outcome.set_result(None)

    def _fetch_offsets(self, call: _Call, now: float) -> None:
        if self._group.generation != call.generation or self._fetch is not None:
            call.outcome.set_exception(GenerationPassed(
                f"generation {call.generation} passed before its offsets were read"))
            return
        self._group.fetch_offsets(call.partitions, now)
        assert call.generation is not None  # a fetch names its generation
        self._fetch = (call.generation, call.outcome)

    def _renew_lease(self) -> None:
        """Tell the gate the lease the coordinator's last answers prove (see
        `GroupMember.lease_deadline`): the streams stop at its deadline by themselves."""
        deadline = self._group.lease_deadline
        if deadline != self._lease:
            self._lease = deadline
            self._member.gate.lease(deadline)

    def _learn(self, events: list[GroupEvent], now: float) -> None:
        self._renew_lease()
        for event in events:
            if isinstance(event, Revoked):
                self._revoked(event, now)
            elif isinstance(event, Assigned):
                port.report(self._member, port.Assigned(event.generation, event.partitions,
                                                        self._lease))
            elif isinstance(event, Committed | CommitFailed):
                if not self._commits:
                    raise UnexpectedGroupEvent(f"a commit's outcome with no commit sent: "
                                               f"{event!r}")
                outcome, refused = self._commits.popleft()
                if outcome is None:
                    _parting_outcome(event)
                elif isinstance(event, CommitFailed):
                    outcome.set_exception(OffsetStoreError(
                        f"offsets not committed to the group coordinator: {event.reason}"))
                elif refused:
                    outcome.set_exception(_not_in_generation(refused))
                else:
                    outcome.set_result(None)
            elif isinstance(event, OffsetsFetched):
                if self._fetch is None:
                    raise UnexpectedGroupEvent(f"offsets read with no read asked: {event!r}")
                self._fetch[1].set_result(event.offsets)
                self._fetch = None
            else:
                raise UnexpectedGroupEvent(f"an event the coordination does not know: "
                                           f"{event!r}")

    def _revoked(self, event: Revoked, now: float) -> None:
        """First the assignment is taken back (`Revoking`: a worker that just claimed from it
        hears it is no longer current), then its claims stop being delivered from. Then their
        last offsets are taken, the claims dropped, and those offsets committed in the
        generation that ended when a rebalance ended it (the coordinator takes them until the
        member rejoins)."""
        port.report(self._member, port.Revoking())
        self._rebalance_began = now
        last = self._withdraw()
        port.report(self._member, port.Revoked(event.reason))
        self._forget()
        if self._fetch is not None:
            self._fetch[1].set_exception(GenerationPassed(event.reason))
            self._fetch = None
        log.info("partitions revoked; delivery and commits stopped for them",
                 count=len(event.partitions), reason=event.reason)
        if event.parting is not None and last:
            refused = self._group.commit_parting(last, now)
            if len(refused) < len(last):
                self._commits.append((None, refused))

    def _give_up_waiters(self, reason: str) -> None:
        for outcome, _ in self._commits:
            if outcome is not None:
                outcome.set_exception(OffsetStoreError(reason))
        self._commits.clear()
        if self._fetch is not None:
            self._fetch[1].set_exception(GenerationPassed(reason))
            self._fetch = None

    # -- connections --------------------------------------------------------------------------

    def _channel(self, address: tuple[str, int]) -> tuple[BrokerChannel, GroupVersions]:
        if address not in self._channels:
            self._channels[address] = self._open(*address)
        return self._channels[address]

    def _drop(self, address: tuple[str, int]) -> None:
        opened = self._channels.pop(address, None)
        if opened is not None:
            opened[0].close()

    def _open(self, host: str, port: int) -> tuple[BrokerChannel, GroupVersions]:
        """A connection as every Kafka path opens one (`open_broker`): TLS, the versions from
        ApiVersions (a broker leaving it unanswered is a 0.9 one, connected to again), then
        the SASL login."""
        opened = open_broker(self._dialer, host, port, self._negotiation)
        return opened.channel, opened.known[0]


class GroupOffsets(Protocol):
    """What `GroupCommits` needs of the coordination: `KafkaCoordination`'s calls, and the
    generation the member is in (None: none, or it is passing)."""

    @property
    def generation(self) -> Generation | None: ...

    def fetch_offsets(self, partitions: Collection[TopicPartition], generation: Generation
                      ) -> dict[TopicPartition, int]: ...

    def commit(self, offsets: Mapping[TopicPartition, int],
               tokens: Mapping[TopicPartition, Token]) -> None: ...


class GroupCommits:
    """The committer's store for a Kafka-coordinated member: every commit goes through the
    group coordinator in the generation of the claims it commits (`owners`: each partition's
    token), unchanged offsets too (Kafka expires offsets not committed for
    `offsets.retention.minutes`)."""

    name = "kafka"

    def __init__(self, coordination: GroupOffsets) -> None:
        self._coordination = coordination

    def fetch(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Committed offsets, read in the generation the member is in (OffsetStoreError when
        it is in none)."""
        generation = self._coordination.generation
        if generation is None:
            raise OffsetStoreError("the member is joining its group: no generation to read in")
        return self._coordination.fetch_offsets(list(partitions), generation)

    def commit(self, offsets: Mapping[TopicPartition, int], *,
               refresh: Mapping[TopicPartition, int] | None = None, retry: bool = True,
               owners: Mapping[TopicPartition, Token] | None = None) -> None:
        """One attempt whatever `retry` says: a commit refused now is refused for good (its
        generation passed), and auto commit commits again at its next interval."""
        everything = {**(refresh or {}), **offsets}
        if everything:
            self._coordination.commit(everything, owners or {})

    def close(self) -> None:
        return None


def _parting_outcome(event: Committed | CommitFailed) -> None:
    if isinstance(event, Committed):
        log.info("committed the revoked partitions' offsets before joining again",
                 partitions=len(event.offsets))
    else:
        log.warning("the revoked partitions' offsets were not committed; their next owners "
                    "resume from the last commit", reason=event.reason)


def _not_in_generation(refused: list[TopicPartition]) -> OffsetStoreError:
    return OffsetStoreError(
        f"offsets of {len(refused)} partitions not committed: their generation passed "
        f"({', '.join(str(tp) for tp in refused[:5])})")

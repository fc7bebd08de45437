"""The coordination port: what a `ConsumerConnector` asks of whoever coordinates its group.

One connector composes one coordination: ZooKeeper's registry and sorted-range rebalance
(`zk_group.ZookeeperGroup`) or Kafka's group coordinator (`kafka_group.KafkaGroup`), or, in the
unit tests, a scripted one. The connector has the parts every member has (the streams, the fetch
loop, the committer, the auto-committer, the worker thread, the member's state, the cutover
fence, the metrics); the coordination has its clients, joins and leaves the group, and reports
what happens to the member's state in neutral terms (`report`): a term of ownership (a
ZooKeeper session, a Kafka generation) is `Assigned` with its partitions and the lease they are
held under, its lease is lost (`LeaseLost`: the term may be ending where the member cannot
hear of it) until the same term is assigned again, or it is `Revoked` (after `Revoking`, when the
coordination calls the user's revocation callback in between); the cutover fence moving
the group away is `Fenced` (see `ConsumerConnector._fenced`). Between those the coordination
renews the lease on the delivery gate. Neither implementation imports the connector, nor the
connector anything of theirs but their constructors.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from zkconsumer.config import ConsumerConfig
from zkconsumer.fetch import KafkaAccess
from zkconsumer.member.claims import Token
from zkconsumer.member.committer import OffsetCommitter
from zkconsumer.member.fence_decision import GroupMoved
from zkconsumer.member.fence_watch import MemberFence
from zkconsumer.member.fetch_loop import FetchLoop
from zkconsumer.member.rebalancer import RebalanceCallbacks
from zkconsumer.member.state import Event, MemberState
from zkconsumer.member.streams import KafkaStream
from zkconsumer.metrics import MemberMetrics
from zkconsumer.model import TopicPartition
from zkconsumer.znodes.consumers import ConsumerRegistration

if TYPE_CHECKING:
    from kazoo.client import KazooClient

# A step of leaving, named for the log; one returning False counts as not done.
LeavingStep = tuple[str, Callable[[], object]]
StreamFor = Callable[[TopicPartition, str], KafkaStream]


class Assigned(NamedTuple):
    """A term of ownership began, or goes on: a ZooKeeper session connected, a Kafka
    generation assigned (`term`; None: a connection with no session to speak of, which is
    no term the member had). `partitions`: what it assigns (None: the member's rebalance
    decides, as on ZooKeeper); `lease`: the deadline they are held under on the member's clock
    (None: renewed apart, by the session's answers)."""

    term: Token | None
    partitions: frozenset[TopicPartition] | None = None
    lease: float | None = None


class LeaseLost(NamedTuple):
    """The term may be ending where the member cannot hear of it (a suspended connection):
    delivery and commits pause until the same term is `Assigned` again."""


class Revoking(NamedTuple):
    """The term is being taken back (a Kafka generation passed): its assignment goes now,
    before the revocation callback and the parting commit; `Revoked` follows. Its gate and
    claims stay until then (the callback may still commit)."""


class Revoked(NamedTuple):
    """The term ended (a session expired, a generation passed): every claim goes with it."""

    reason: str = ""


class Fenced(NamedTuple):
    """The cutover fence moved the group away: delivery stops, and the member drains."""

    moved: GroupMoved


TermEvent = Assigned | LeaseLost | Revoking | Revoked


def report(member: MemberState, event: TermEvent) -> Event:
    """A coordination's event, applied to the member's state in one step; returns what it was
    there (an `Assigned` term is the same one resumed, or a new one)."""
    if isinstance(event, Assigned):
        if event.lease is not None:
            member.gate.lease(event.lease)
        return member.term_event(Event.ASSIGNED, event.term, event.partitions)
    if isinstance(event, LeaseLost):
        return member.term_event(Event.LEASE_LOST, None)
    if isinstance(event, Revoking):
        return member.term_event(Event.TERM_ENDING, None)
    return member.term_event(Event.TERM_ENDED, None)


class Claimed(NamedTuple):
    """What `claim_assigned` claimed: in which term, and the partitions new to the member
    (partition -> stream thread)."""

    term: Token
    partitions: Mapping[TopicPartition, str]


def claim_assigned(member: MemberState, deal: Callable[[frozenset[TopicPartition]],
                                                       Mapping[TopicPartition, str]],
                   committed: Callable[[Mapping[TopicPartition, str], Token],
                                       Mapping[TopicPartition, int]],
                   stream_for: StreamFor) -> Claimed | None:
    """The one path from what an `Assigned` carried to the member's claims: the partitions
    of the member's term (`MemberState.assignment`), dealt to its stream threads (`deal`),
    those it does not hold yet recorded, their `committed` offsets read in the term, and
    delivered from. None when the member has no assignment in its term (none yet, or the term
    is ending). Whatever the claims raise (StaleClaimError: the term passed meanwhile), they
    are dropped again first."""
    assigned = member.assignment
    if assigned is None or assigned.term is None or assigned.term != member.term:
        return None
    term = assigned.term
    held = member.held()
    threads = {tp: thread for tp, thread in deal(assigned.partitions).items() if tp not in held}
    try:
        member.begin_claims(threads, stream_for)
        offsets = committed(threads, term) if threads else {}
        member.claims_made(term, threads, offsets)
    except BaseException:
        member.drop(threads)
        raise
    return Claimed(term, threads)


class Wording(NamedTuple):
    """How logs, `/healthz` and the cutover fence name a coordination."""

    coordinator: str  # who a leave that did not finish did not finish with
    name: str  # the fence's word for it: "zookeeper" or "kafka"
    term_ended: str  # `/healthz` while the member's term has ended and it joins again
    unfinished_leave: str  # what follows a leave that did not finish


class CommitRoute(NamedTuple):
    """Where the committer writes, and how it tells the member's token is still its own."""

    store: Any  # an OffsetStore
    owner_checks: Callable[[Mapping[TopicPartition, Token]], Mapping[TopicPartition, Any]]
    pause_words: tuple[str, str]


class Host(Protocol):
    """What the connector offers the coordination it composes: the parts every member has."""

    config: ConsumerConfig
    consumer_id: str
    moved: GroupMoved | None
    _member: MemberState
    _streams: list[KafkaStream]
    _callbacks: RebalanceCallbacks
    _metrics: MemberMetrics
    _log: Any
    _access: KafkaAccess
    _fetch_loop: FetchLoop
    _committer: OffsetCommitter
    _fence: MemberFence | None

    def _fail(self, exc: BaseException) -> None: ...

    def _final_commit(self, retry: bool, deadline: float | None = None) -> bool: ...


class Coordination(Protocol):
    """One group coordination, as the connector composes it (see the module's docstring).
    The calls come in this order: `bind`, `first_term`, then on a start `kafka_access`,
    `open`, `join`, `start`; the worker's `rebalance` and `renew_term`; on leaving
    `leaving_steps`, `close_clients`, `disconnect`."""

    wording: Wording

    @property
    def fence_session(self) -> KazooClient | None:
        """The ZooKeeper session the cutover fence is read and watched on; None: no fence."""

    @property
    def zookeeper_session(self) -> tuple[int, bytes]:
        """(session id, password) of the member's ZooKeeper session, for fault injection."""

    def bind(self, host: Host) -> None:
        """The connector it serves, once its member state exists: reports go to it from now."""

    def first_term(self) -> Token | None:
        """The term the member starts in (a ZooKeeper session), or None (no generation yet)."""

    def kafka_access(self) -> KafkaAccess:
        """How the member reaches the brokers."""

    def open(self, opened: contextlib.ExitStack, registration: ConsumerRegistration,
             wildcard: bool) -> CommitRoute:
        """Open the coordination's clients (closed with `opened` should the start fail)."""

    def join(self, topics: set[str], wildcard: bool, stream_for: StreamFor,
             fenced: bool) -> None:
        """Join the group (with `fenced`, its promise to honour the fence made already)."""

    def start(self) -> None:
        """The member's threads are about to start: the coordination's own start too."""

    def rebalance(self) -> bool:
        """The worker's turn: claim and release what the group says; True when the member
        may be STABLE after it."""

    def renew_term(self) -> None:
        """The worker's turn after a term began: the member claims in it from now."""

    def commit_in_callback(self, in_hand: bool) -> bool:
        """A commit asked from the coordination's own thread (in the user's
        on_partitions_revoked): True when the coordination took it over."""

    def leaving_steps(self, commit: bool, failed: bool, deadline: float) -> list[LeavingStep]:
        """What leaving is made of, in order (see `ConsumerConnector._leave_group`)."""

    def fenced(self) -> None:
        """The fence moved the group away: delivery stops now."""

    def stop_watching(self) -> None:
        """Stop what watches the group's topics (on shutdown and after a failure)."""

    def close_clients(self) -> None:
        """The clients `open` opened."""

    def disconnect(self) -> None:
        """The coordination's connections made with the connector."""

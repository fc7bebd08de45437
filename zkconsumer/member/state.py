"""The member's state behind one lock: its lifecycle, the term of ownership its claims belong
to (a ZooKeeper session, or a Kafka generation: whatever its coordination reports as one, see
`coordination`), the record of each partition it owns (its `Claim`) and the delivery gate.

The coordination's reports (a term assigned, its lease lost, the term ended), its watches,
the rebalance worker, the fetch loop and the user's `close()` run on different threads. Each
only reports what happened here, and every change goes through one transition (as in kazoo's
partitioner recipe: named states, one lock, a table of what each event does in each state), so
no thread can act on half of another's change. A single
worker thread asks `next_work()` what to do, so rebalances never run concurrently and a burst
of watch events becomes one rebalance, not many.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping
from enum import Enum
from typing import NamedTuple

from zkconsumer.errors import ZkConsumerError
from zkconsumer.member.claims import Claim, DeliveryGate, Feed, Phase, Token
from zkconsumer.model import OffsetMove, TopicPartition, offset_move


class State(Enum):
    NEW = "new"                  # not in the group yet
    REBALANCING = "rebalancing"  # a rebalance (or a rejoin in a new term) is due or running
    STABLE = "stable"            # owning our slice, fetching
    TERM_ENDED = "term_ended"    # the term ended: what the member held in it is gone
    FAILED = "failed"            # gave up (e.g. rebalance attempts exhausted); streams raise
    CLOSED = "closed"


class Event(Enum):
    STARTED = "started"
    GROUP_CHANGED = "group_changed"
    REBALANCE_DONE = "rebalance_done"
    # As the coordination reports them (see `term_event`, and `coordination.report`):
    LEASE_LOST = "lease_lost"  # the term may be ending unheard (a suspended connection)
    TERM_ENDING = "term_ending"  # the term's assignment is taken back; TERM_ENDED follows
    TERM_ENDED = "term_ended"  # a session expired, a generation passed
    ASSIGNED = "assigned"  # a term, as the coordination has it now
    # What an ASSIGNED turns out to be, by its term:
    TERM_RESUMED = "term_resumed"
    NEW_TERM = "new_term"
    REJOINED = "rejoined"  # the new term's cleanup and (re)registration are done
    FAILED = "failed"
    CLOSE_REQUESTED = "close_requested"


class Work(Enum):
    REBALANCE = "rebalance"
    REJOIN = "rejoin"
    STOP = "stop"


class StaleClaimError(ZkConsumerError):
    """Claims made in a ZooKeeper session the member does not have (any more), or by a member
    that is leaving: their owner znodes must not be trusted. The rebalancer releases them and
    ends the rebalance; the state then has the member register again (or stop) first."""


class MemberStateError(ZkConsumerError):
    """An event the transition table does not list for the member's state: a defect in the
    member (an event sent where it was never expected), raised where it is sent, never
    ignored."""


_FINAL = frozenset({State.FAILED, State.CLOSED})
_LIVE = tuple(state for state in State if state not in _FINAL)

# What each event does in each state. An event that arrives where it has nothing to do is
# listed in `_IGNORED`; any other pair is a defect (`MemberStateError`).
_TRANSITIONS: dict[tuple[State, Event], State] = {
    (State.NEW, Event.STARTED): State.REBALANCING,
    (State.REBALANCING, Event.GROUP_CHANGED): State.REBALANCING,
    (State.STABLE, Event.GROUP_CHANGED): State.REBALANCING,
    (State.REBALANCING, Event.REBALANCE_DONE): State.STABLE,
    (State.REBALANCING, Event.REJOINED): State.REBALANCING,
    # A new session before the start only means registering again once started.
    (State.NEW, Event.NEW_TERM): State.NEW,
    (State.TERM_ENDED, Event.NEW_TERM): State.REBALANCING,
    (State.REBALANCING, Event.NEW_TERM): State.REBALANCING,
    (State.STABLE, Event.NEW_TERM): State.REBALANCING,
    **{(state, Event.TERM_ENDED): State.TERM_ENDED for state in _LIVE},
    # A term taken back (a Kafka generation passing) before it ends: its assignment goes at
    # once, in any state but one where no term is left to end.
    **{(state, Event.TERM_ENDING): state for state in State if state is not State.TERM_ENDED},
    **{(state, Event.FAILED): State.FAILED for state in _LIVE},
    **{(state, Event.CLOSE_REQUESTED): State.CLOSED for state in _LIVE},
    # A member that is leaving still learns what its session does: its last commits depend on it.
    **{(state, event): state for state in _FINAL
       for event in (Event.TERM_ENDED, Event.NEW_TERM)},
    **{(state, event): state for state in State
       for event in (Event.LEASE_LOST, Event.TERM_RESUMED)},
}

# Events that do arrive in these states and have nothing to do there.
_IGNORED: frozenset[tuple[State, Event]] = frozenset({
    # The group watches fire from the registration on; the start's rebalance reads the group,
    # and so does the rebalance of a new session; a leaving member rebalances no more.
    (State.NEW, Event.GROUP_CHANGED),
    (State.TERM_ENDED, Event.GROUP_CHANGED),
    # A session that expired (and maybe came back) before the start: the new session's
    # re-registration and rebalance are due already.
    (State.TERM_ENDED, Event.STARTED),
    (State.REBALANCING, Event.STARTED),
    # The worker's rebalance or re-registration ended after the session expired, or after the
    # member began to leave.
    (State.TERM_ENDED, Event.REBALANCE_DONE),
    (State.TERM_ENDED, Event.REJOINED),
    *((state, event) for state in _FINAL
      for event in (Event.GROUP_CHANGED, Event.REBALANCE_DONE, Event.REJOINED)),
    # A shutdown after a failure, and a failure reported while shutting down: the first
    # final state stays.
    (State.FAILED, Event.CLOSE_REQUESTED),
    (State.CLOSED, Event.FAILED),
})


class MemberState:
    """Everything about a member that more than one thread reads or writes, under one lock.

    Invariants, kept by `_transition` (the only place the state changes) and the claim
    methods; each is tested in tests/unit/test_member_state.py:

    1. Claims only ever belong to the member's current session: each claim records the session
       it was made in as its token, which is `session`; `begin_claims` and `claims_made` refuse
       claims in any other session (`StaleClaimError`).
    2. When the session expires (or kazoo connects in another one), the session, every claim and
       the gate go in the same step: there are no claims and the gate is closed until the new
       session's re-registration, cleanup included, reports it (`rejoined`). Only then are
       claims accepted and delivery resumed.
    3. The gate is open exactly while the connection is up in the session the claims belong to:
       a suspended connection closes it (the session may be expiring on the server, and other
       members may own our partitions by now), the same session coming back opens it.
    4. FAILED and CLOSED are final: no event leaves them, and no claim is accepted in them.
    5. The worker is given one thing at a time: a due re-registration before any rebalance, a
       burst of changes as one rebalance, and the member is STABLE only once a rebalance ended
       with nothing else due and a session to own partitions in.
    6. Nothing blocks or calls out while holding the lock: kazoo's thread reports here.
    7. Every event is listed for every state it is sent in, as a transition or as ignored
       there; any other is a defect and raises `MemberStateError`, changing nothing.
    8. One record per partition held, from before its owner znode is made until after it is
       deleted, through its phases: CLAIMING (not delivered, not committed), FETCHING
       (delivered and committed), RELEASING (a successor record, so that nothing fetched under
       the fetching one is delivered any more; only its last commit). Claiming a partition
       already held is a defect. A record left CLAIMING or RELEASING by a rebalance cut short
       is `unfinished`: the next one releases it first.
    9. A commit never names a partition whose token has passed: `committable` and `releasing`
       give what to commit with the token of each claim, only while the gate is open and its
       lease holds, and only claims of the member's session exist; a write marks the claim of its own token
       only (`committed`).
    10. A claim's offsets only move forward: its consumed position never moves back, only a
       position ahead of its committed offset is pending, and a write never lowers the mark.
    11. The connector's lifecycle is part of it: streams are asked for once (again only after
       a failed start), never after a shutdown began; a shutdown begins once; the threads
       start (STARTED) only if no shutdown began, so a shutdown knows whether it stops them.

    12. What a coordination's ASSIGNED carried for its term (Kafka's partitions) is the
       member's `assignment`, which claims are made from, until the term is taken back
       (TERM_ENDING, before the user's revocation callback, the gate and claims staying for the
       parting commit) or ends; TERM_ENDING where no term is left (TERM_ENDED) is a defect.

    The fetch loop fetches the claims `fetching` gives into their streams, the committer
    commits what `committable` gives, and the membership checks ownership by the tokens given
    with it: none of them keeps a copy of the claims.

    The claims mapping and the gate's flag are read without the lock, per message, by the
    streams: both are only ever changed in place under the lock, so a reader sees a claim (or
    the gate) before or after a change, and a claim that just went only drops a message.
    """

    def __init__(self, session: Token | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`session`: the ZooKeeper session the member starts in (its registration's). A
        member of a Kafka-coordinated group has its generation (id and member id) in that
        place: the coordinator's Assigned and Revoked come as a new session and an expiry."""
        self._lock = threading.Condition()
        self._clock = clock  # the lease's (see `DeliveryGate`)
        self._state = State.NEW
        self._term = session  # the claims' session; None from an expiry to the cleanup
        self._live = session  # the session kazoo is connected in now; None while it is not
        self._claims: dict[TopicPartition, Claim] = {}
        # What the coordination's last `Assigned` carried for its term (None: nothing, or the
        # term is ending): the claims are made from it.
        self._assignment: Assignment | None = None
        self._gate = DeliveryGate()
        self._rebalance_due = False
        self._rejoin_due = False
        # The connector's lifecycle: streams asked for (a start under way or done), the
        # threads started, and a shutdown begun.
        self._start_requested = False
        self._started = False
        self._closing = False

    # -- reading ----------------------------------------------------------------------------

    @property
    def state(self) -> State:
        with self._lock:
            return self._state

    @property
    def term(self) -> Token | None:
        with self._lock:
            return self._term

    @property
    def assignment(self) -> Assignment | None:
        """The partitions the coordination assigned the member in a term, as its `Assigned`
        carried them; None when none were carried (the member's rebalance decides), or once
        the term is ending (TERM_ENDING) or ended. The term is the member's own only once it
        rejoined in it (`term`)."""
        with self._lock:
            return self._assignment

    @property
    def started(self) -> bool:
        """Whether the member's threads were started (and so are the shutdown's to stop)."""
        with self._lock:
            return self._started

    @property
    def closing(self) -> bool:
        """Whether a shutdown began; a start still under way gives up at its next step."""
        with self._lock:
            return self._closing

    @property
    def leaving(self) -> bool:
        with self._lock:
            return self._state in _FINAL

    @property
    def gate(self) -> DeliveryGate:
        """The streams' gate, opened and closed only here; it also carries the failure."""
        return self._gate

    @property
    def delivering(self) -> bool:
        """The coordination's word alone: whether the gate is open (the term is trusted). What
        may be committed is `may_commit`'s question, which also asks the lease."""
        return self._gate.delivering

    def may_commit(self) -> bool:
        """The one question whether a commit may be written now, the one a hand-out asks too:
        the term's word (the gate open) and its lease (not lapsed on the member's clock).
        `to_commit` asks it with the entries it gathers."""
        return self._gate.holds(self._clock())

    @property
    def claims(self) -> Mapping[TopicPartition, Claim]:
        """The records, for the streams' per-message check (a chunk is delivered while the
        record it was fetched under is its partition's); read-only outside this class."""
        return self._claims

    def owned(self) -> dict[TopicPartition, str]:
        """The partitions owned and delivered from, with their thread ids. A partition's claim
        is FETCHING only after its owner znode is made and stops before the znode is deleted,
        so no two members ever list the same partition at once."""
        return self._threads(lambda claim: claim.phase is Phase.FETCHING)

    def held(self) -> dict[TopicPartition, str]:
        """Every partition whose owner znode is (or may be) ours, in any phase, with its thread
        id: what a rebalance plans from, and what leaving releases."""
        return self._threads(lambda _claim: True)

    def unfinished(self) -> dict[TopicPartition, str]:
        """Claims a rebalance cut short left CLAIMING or RELEASING: their owner znodes may
        still block the group, and counting them as kept would leave them unfetched."""
        return self._threads(lambda claim: claim.phase is not Phase.FETCHING)

    def fetching(self) -> dict[TopicPartition, Claim]:
        """The claims delivered from, for the fetch loop: it fetches exactly these, each into
        its stream, a new claim from its committed offset (or a reset, while `reset_pending`)."""
        with self._lock:
            return {tp: claim for tp, claim in self._claims.items()
                    if claim.phase is Phase.FETCHING}

    def committable(self, consumed: Mapping[TopicPartition, int] | None = None
                    ) -> dict[TopicPartition, CommitEntry]:
        """What to commit of the partitions delivered from, each with the token its commit is
        made under, after taking in where each record's stream says consumption stands (and
        any positions `consumed` given); nothing while the gate is closed or its lease
        lapsed."""
        return self.to_commit(consumed) or {}

    def releasing(self, partitions: Collection[TopicPartition],
                  consumed: Mapping[TopicPartition, int] | None = None
                  ) -> dict[TopicPartition, CommitEntry]:
        """`committable` for those of `partitions` being released, for their last commit: no
        longer delivered from, but their owner znodes are still ours."""
        return self.to_commit(consumed, releasing=partitions) or {}

    def to_commit(self, consumed: Mapping[TopicPartition, int] | None = None,
                  releasing: Collection[TopicPartition] | None = None
                  ) -> dict[TopicPartition, CommitEntry] | None:
        """`committable` (or, given `releasing`, `releasing`), but None when no commit may be
        written now (`may_commit`, asked once, with the entries): a committer tells a commit
        refused from one with nothing to write."""
        if releasing is None:
            return self._entries(lambda claim: claim.phase is Phase.FETCHING, consumed)
        wanted = set(releasing)
        return self._entries(lambda claim: claim.phase is Phase.RELEASING
                             and claim.partition in wanted, consumed)

    def committed(self, written: Mapping[TopicPartition, tuple[Token, int]]) -> None:
        """Offsets written (partition -> (token, offset)): each counts for the claim of that
        token only, and never lowers its mark (a commit that raced a newer one)."""
        with self._lock:
            for tp, (token, offset) in written.items():
                claim = self._claims.get(tp)
                if claim is not None and claim.token == token \
                        and offset_move(claim.committed, offset) is OffsetMove.FORWARD:
                    claim.committed = offset

    def reset_to(self, claim: Claim, position: int) -> None:
        """A claim made without a committed offset was reset (`auto.offset.reset`) to
        `position`: that is committed even if nothing is ever delivered from it, as the
        reference does, or its next owner resets again, past whatever was produced in
        between. A claim that is not the partition's any more is left alone."""
        with self._lock:
            if self._claims.get(claim.partition) is claim:
                claim.reset_pending = False
                _advance(claim, position)

    def consumed_positions(self) -> dict[TopicPartition, int]:
        """Where consumption of each partition delivered from stands: its stream's word (in
        its record), else where a reset put it, else the committed offset."""
        with self._lock:
            positions = {}
            for tp, claim in self._claims.items():
                position = claim.consumed.value
                if position is None:
                    position = claim.position if claim.position is not None else claim.committed
                if claim.phase is Phase.FETCHING and position is not None:
                    positions[tp] = position
            return positions

    def _threads(self, chosen: Callable[[Claim], bool]) -> dict[TopicPartition, str]:
        with self._lock:
            return {tp: claim.thread_id for tp, claim in self._claims.items() if chosen(claim)}

    def _entries(self, chosen: Callable[[Claim], bool],
                 consumed: Mapping[TopicPartition, int] | None
                 ) -> dict[TopicPartition, CommitEntry] | None:
        with self._lock:
            if not self.may_commit():  # closed, or the lease lapsed
                return None
            entries = {}
            for tp, claim in self._claims.items():
                if not chosen(claim) or claim.token != self._term:
                    continue
                _take_in(claim)
                if consumed and tp in consumed:
                    _advance(claim, consumed[tp])
                entries[tp] = CommitEntry(claim.token, claim.committed, claim.pending())
            return entries

    # -- the connector's lifecycle ------------------------------------------------------------

    def request_start(self) -> None:
        """Streams were asked for: the member starts once, and never after a shutdown."""
        with self._lock:
            if self._closing:
                raise ZkConsumerError("the connector was shut down; make a new one")
            if self._start_requested:
                raise ZkConsumerError("streams were already created for this connector")
            self._start_requested = True

    def start_failed(self) -> bool:
        """The start failed before the threads started: starting again may work. True if a
        shutdown began meanwhile (and is then why it failed, whatever the step said)."""
        with self._lock:
            self._start_requested = False
            return self._closing

    def start(self) -> None:
        """The threads start now (STARTED); a shutdown that began first refuses it."""
        with self._lock:
            if self._closing:
                raise ZkConsumerError("shut down before the threads started")
            self._started = True
            self._transition(Event.STARTED)

    def begin_close(self) -> bool:
        """A shutdown begins (CLOSE_REQUESTED); False if one already did. Whether the threads
        were started is settled from here on (`started`)."""
        with self._lock:
            if self._closing:
                return False
            self._closing = True
            self._transition(Event.CLOSE_REQUESTED)
            return True

    # -- events -----------------------------------------------------------------------------

    def handle(self, event: Event, session: Token | None = None) -> State:
        """Apply an event; returns the state it leaves the member in."""
        with self._lock:
            return self._transition(event, session)

    def term_event(self, event: Event, session: Token | None,
                   partitions: frozenset[TopicPartition] | None = None) -> Event:
        """What the coordination reported (LEASE_LOST, TERM_ENDING, TERM_ENDED or ASSIGNED)
        with the term it has now (`session`: a ZooKeeper session id, a Kafka generation) and,
        for an ASSIGNED, the `partitions` it assigns in it (None: the member's rebalance
        decides); returns the event applied, an ASSIGNED being either the same term resumed
        or a new one (after its end there is no term to resume)."""
        with self._lock:
            if event is Event.ASSIGNED:
                same = session is not None and session == self._term
                event = Event.TERM_RESUMED if same else Event.NEW_TERM
            self._transition(event, session, partitions)
            return event

    def rejoined(self, session: Token | None) -> bool:
        """The worker forgot what the lost term owned and joined again in `session` (the new
        term); True if the member now claims and delivers in it. False if the term changed
        again meanwhile: the rejoin stays due."""
        with self._lock:
            self._transition(Event.REJOINED, session)
            return session is not None and self._term == session

    def fail(self, exc: BaseException) -> bool:
        """Record the member's failure (the first one wins); False if it had already failed."""
        with self._lock:
            if not self._gate.fail(exc):
                return False
            self._transition(Event.FAILED)
            return True

    # -- claims -----------------------------------------------------------------------------

    def begin_claims(self, partitions: Mapping[TopicPartition, str],
                     stream_for: Callable[[TopicPartition, str], Feed] | None = None) -> Token:
        """Record claims of these partitions (partition -> thread id, each fed into the stream
        `stream_for` gives), CLAIMING, before their owner znodes are made; returns the session
        they are made in. StaleClaimError if there is none to claim in (or the member is
        leaving)."""
        with self._lock:
            self._check_claimable(self._term)
            assert self._term is not None  # checked above
            held = sorted(str(tp) for tp in partitions if tp in self._claims)
            if held:
                raise MemberStateError(f"claimed while held already: {', '.join(held)}")
            for tp, thread in partitions.items():
                stream = None if stream_for is None else stream_for(tp, thread)
                self._claims[tp] = Claim(tp, thread, self._term, Phase.CLAIMING, stream)
            return self._term

    def claims_made(self, session: Token, partitions: Collection[TopicPartition],
                    committed: Mapping[TopicPartition, int] | None = None
                    ) -> dict[TopicPartition, Claim]:
        """The owner znodes of these claims were made in `session` and their `committed`
        offsets read (a partition absent there has none, and is reset): they are delivered
        from now (FETCHING). StaleClaimError if that is not the member's session any more
        (its claims went with it) or the member is leaving."""
        committed = committed or {}
        with self._lock:
            self._check_claimable(session)
            made = {}
            for tp in partitions:
                claim = self._claims.get(tp)
                if claim is None or claim.phase is not Phase.CLAIMING:
                    raise MemberStateError(f"{tp} was not being claimed: {claim!r}")
                made[tp] = claim
            for tp, claim in made.items():
                claim.committed = committed.get(tp)
                claim.reset_pending = claim.committed is None
                claim.phase = Phase.FETCHING  # in place: nothing was fetched under it yet
            return made

    def withdraw(self, partitions: Collection[TopicPartition]) -> None:
        """Stop delivering from these partitions (before their owner znodes are released):
        each record is replaced by its RELEASING successor."""
        with self._lock:
            for tp in partitions:
                claim = self._claims.get(tp)
                if claim is not None and claim.phase is not Phase.RELEASING:
                    self._claims[tp] = claim.releasing()

    def drop(self, partitions: Collection[TopicPartition]) -> None:
        """The member holds these no more: their owner znodes were deleted, or never made."""
        with self._lock:
            for tp in partitions:
                self._claims.pop(tp, None)

    def _check_claimable(self, session: Token | None) -> None:
        if self._state in _FINAL:
            raise StaleClaimError(f"the member is {self._state.value}; it claims nothing")
        if session is None or session != self._term:
            raise StaleClaimError(
                f"claimed in ZooKeeper session {_hex(session)}, but the member's session is "
                f"{_hex(self._term)}")

    # -- the worker -------------------------------------------------------------------------

    def next_work(self, timeout: float | None = None) -> Work | None:
        """Block until there is something to do; None when `timeout` passes with nothing. A
        re-registration stays due until `rejoined` accepts it, so one that failed is
        tried again."""
        with self._lock:
            if not self._lock.wait_for(self._has_work, timeout):
                return None
            if self._state in _FINAL:
                return Work.STOP
            if self._rejoin_due:
                return Work.REJOIN
            self._rebalance_due = False
            return Work.REBALANCE

    def wait_until_trusted(self, timeout: float) -> bool:
        """Whether delivering and committing became safe within `timeout`: a suspended
        connection may come back in the same session; once the session is gone (its owner
        znodes with it) it never will, and the answer is False at once."""
        with self._lock:
            self._lock.wait_for(lambda: self._gate.delivering or self._term is None, timeout)
            return self._gate.delivering

    def wait_for(self, states: set[State], timeout: float | None = None) -> State | None:
        with self._lock:
            if self._lock.wait_for(lambda: self._state in states, timeout):
                return self._state
            return None

    def _has_work(self) -> bool:
        if self._state in _FINAL or self._rejoin_due:
            return True
        return self._rebalance_due and self._state is State.REBALANCING

    # -- the one place the state changes ------------------------------------------------------

    def _transition(self, event: Event, session: Token | None = None,
                    partitions: frozenset[TopicPartition] | None = None) -> State:
        if (self._state, event) in _IGNORED:
            return self._state
        target = _TRANSITIONS.get((self._state, event))
        if target is None:
            raise MemberStateError(
                f"event {event.value} in state {self._state.value}: the member's transition "
                "table does not list it")
        if not self._applies(event, session):
            return self._state
        self._record(event, session, partitions)
        self._state = target
        if self._live is not None and self._live == self._term:
            self._gate.resume()
        else:
            self._gate.pause()
        self._lock.notify_all()
        return target

    def _applies(self, event: Event, session: Token | None) -> bool:
        if event is Event.REBALANCE_DONE:
            # Something became due while the rebalance ran: the member is not settled yet.
            settled = not (self._rebalance_due or self._rejoin_due)
            return settled and self._term is not None
        if event is Event.REJOINED:
            # Registered in a session that is not (or no longer) the connected one.
            return session is not None and session == self._live
        return True

    def _record(self, event: Event, session: Token | None,
                partitions: frozenset[TopicPartition] | None) -> None:
        if event in (Event.STARTED, Event.GROUP_CHANGED):
            self._rebalance_due = True
        elif event is Event.LEASE_LOST:
            self._live = None
        elif event is Event.TERM_RESUMED:
            self._live = session
            if partitions is not None:
                self._assignment = Assignment(session, partitions)
        elif event is Event.TERM_ENDING:
            # Taken back before the term ends: from here on nothing claims from it, and who
            # asks whether it is still current (a worker that just claimed) hears it is not.
            self._assignment = None
        elif event is Event.TERM_ENDED:
            self._live = None
            self._drop_term()
            self._rebalance_due = False  # nothing can be done until a new session comes
            self._rejoin_due = False
        elif event is Event.NEW_TERM:
            self._live = session
            self._drop_term()
            self._assignment = None if partitions is None else Assignment(session, partitions)
            self._rejoin_due = True
            self._rebalance_due = True
        elif event is Event.REJOINED:
            self._term = session
            self._rejoin_due = False
            self._rebalance_due = True

    def _drop_term(self) -> None:
        """Our owner znodes went with the session, and someone else may own them by now."""
        self._term = None
        self._assignment = None
        self._claims.clear()


class Assignment(NamedTuple):
    """What a coordination assigned the member in a term (`coordination.Assigned`)."""

    term: Token | None
    partitions: frozenset[TopicPartition]


class CommitEntry(NamedTuple):
    """What a commit of one partition is made of: the token it is made under, the offset
    committed so far (None: none), and the consumed position ahead of it (None: nothing
    new)."""

    token: Token
    committed: int | None
    pending: int | None


def _take_in(claim: Claim) -> None:
    """The position the claim's stream recorded in it (lock-free, per message) taken in for
    its commits."""
    consumed = claim.consumed.value
    if consumed is not None:
        _advance(claim, consumed)


def _advance(claim: Claim, position: int) -> None:
    """A consumed position never moves back: a late record from a stale fetch must not
    rewind it."""
    if claim.position is None or position > claim.position:
        claim.position = position


def _hex(session: Token | None) -> str:
    if session is None:
        return "none"
    return f"0x{session:x}" if isinstance(session, int) else str(session)

"""What the streams check before they hand out a message, below them and below the member's
state, which keeps both: the record of each owned partition (`Claim`) and the member's delivery
gate."""

from __future__ import annotations

import importlib
import math
import threading
from collections.abc import Callable, Hashable
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import OffsetMove, TopicPartition, offset_move

Token = Hashable
"""What a coordinator's ownership is valid under: for ZooKeeper, the session the owner znode
was made in (a Kafka group coordinator's would be its generation and member id)."""


class Phase(Enum):
    CLAIMING = "claiming"    # its owner znode is being made and its offset read: not delivered
    FETCHING = "fetching"    # delivered from, and committed
    RELEASING = "releasing"  # no longer delivered from: its last commit, then its owner znode goes


class Feed(Protocol):
    """What a claim's stream is to the fetch loop, which queues its chunks into it
    (`streams.KafkaStream`)."""

    def offer(self, chunk: Any, keep_trying: Callable[[], bool]) -> bool: ...


class Claim:
    """The member's record of one partition it holds, for one period of ownership: the thread
    and stream it is delivered to, the coordinator's token it was claimed under, its phase,
    the offset committed for it, where its stream's consumption stands (`consumed`, a cell the
    stream writes per message, lock-free), the position gathered from it for commits (or where
    a reset put it), and whether that reset is still to be learned from the fetcher. What was
    consumed under a claim goes with it: nothing of it outlives the record to be purged.

    Kept by `MemberState`, one per partition, and changed only under its lock. The streams
    check that the record a chunk was fetched under is still the partition's, so a record
    that stops being delivered from is replaced by a successor (`releasing`), never changed
    in place there, and a new claim is a new object."""

    __slots__ = ("committed", "consumed", "partition", "phase", "position", "reset_pending",
                 "stream", "thread_id", "token")

    def __init__(self, partition: TopicPartition, thread_id: str, token: Token = None,
                 phase: Phase = Phase.FETCHING, stream: Feed | None = None) -> None:
        self.partition = partition
        self.thread_id = thread_id
        self.token = token
        self.phase = phase
        self.stream = stream
        self.committed: int | None = None  # None: the store has no offset for it
        self.position: int | None = None
        self.consumed = Consumed()  # the stream's; see `Consumed`
        self.reset_pending = False

    def releasing(self) -> Claim:
        """The successor its last commit is made from: the same cell, so a position a stream
        recorded as the claim was replaced is not lost to it."""
        successor = Claim(self.partition, self.thread_id, self.token, Phase.RELEASING,
                          self.stream)
        successor.committed = self.committed
        successor.position = self.position
        successor.consumed = self.consumed
        return successor

    def pending(self) -> int | None:
        """The position to commit, if it is ahead of the committed offset: rewriting an
        unchanged offset is wasted traffic, and writing one behind it would rewind the group."""
        position = self.position
        if position is None or offset_move(self.committed, position) is not OffsetMove.FORWARD:
            return None
        return position

    def __repr__(self) -> str:
        return f"Claim({self.partition}, {self.thread_id}, {self.phase.value})"


class _PythonDeadline:
    """A gate's `until`; `_cursor.Deadline` where the extension was built, which the C
    per-message path reads as a double, with no attribute lookup."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0


class _PythonConsumed:
    """A claim's consumed position (offset + 1 of the last message done with; None before
    one), written by its stream per message; `_cursor.Consumed` where the extension was built,
    which the C per-message path writes with no lookup."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: int | None = None


def compiled(name: str, fallback: Any) -> Any:
    """`name` of the compiled `_cursor` extension, or `fallback` where it was not built (no C
    compiler); the tests hold both to the same behaviour."""
    try:
        return getattr(importlib.import_module("zkconsumer.member._cursor"), name)
    except ImportError:
        return fallback


if TYPE_CHECKING:  # the compiled ones have no stubs: typed as the ones they stand for
    Deadline = _PythonDeadline
    Consumed = _PythonConsumed
else:
    Deadline = compiled("Deadline", _PythonDeadline)
    Consumed = compiled("Consumed", _PythonConsumed)


class DeliveryGate:
    """What every stream of one member checks before handing out a message.

    Two things keep it open, and each closes it by itself:
    - the coordination's word (`pause`/`resume`): closed while the member's term of ownership
      (its ZooKeeper session, its Kafka generation) cannot be trusted or is gone, so nothing is
      handed out that another member may already own;
    - the member's lease (`lease`): the deadline on the monotonic clock until which the last
      proof that the member still holds its partitions (an answer from ZooKeeper in the
      session, a heartbeat or commit answered in the generation) is good. A passed deadline
      stops every hand-out at once, whatever the coordination thread has noticed yet: a process
      frozen (SIGSTOP, a long pause) past it hands out nothing when it runs again, though its
      coordination thread has not yet learnt that its partitions went to other members.

    `until.value` is both in one float, read per message (in C by `_cursor`): the lease's
    deadline while the coordination says open, minus infinity while it says closed; a hand-out
    goes ahead only while the clock is before it. A gate no coordination gave a lease to (a stream
    on its own) has no deadline. It also carries the member's failure, which every stream then
    raises. In a member, only its `MemberState` opens and closes it, and only its coordination
    renews the lease.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # pause, resume and lease write `until` one at a time
        self.open = threading.Event()  # for waiting until the coordination lets delivery resume
        self.open.set()
        self.delivering = True  # the coordination's word, read by commits and waits
        self._deadline = math.inf  # the lease's: none until a coordination gives one
        self.until = Deadline()  # what every hand-out compares the clock with (see above)
        self.until.value = math.inf
        self.failed = threading.Event()
        self._failure: BaseException | None = None

    def pause(self) -> None:
        with self._lock:
            self.delivering = False
            self.until.value = -math.inf
            self.open.clear()

    def resume(self) -> None:
        with self._lock:
            self.delivering = True
            self.until.value = self._deadline
            self.open.set()

    def lease(self, deadline: float) -> None:
        """The coordination's proof that the member holds its partitions is good until
        `deadline` (monotonic seconds); minus infinity: nothing proven."""
        with self._lock:
            self._deadline = deadline
            if self.delivering:
                self.until.value = deadline

    @property
    def deadline(self) -> float:
        """The lease's deadline, whether or not the coordination says open."""
        return self._deadline

    def holds(self, now: float) -> bool:
        """Whether a hand-out (or a commit) may go ahead at `now`: the coordination says open
        and the lease has not lapsed."""
        return now < self.until.value

    def fail(self, exc: BaseException) -> bool:
        """Record the member's failure; False if it had already failed."""
        if self.failed.is_set():
            return False
        self._failure = exc
        self.failed.set()
        return True

    @property
    def failure(self) -> BaseException | None:
        return self._failure

    def raise_failure(self) -> None:
        reason = self._failure
        if isinstance(reason, ZkConsumerError):
            raise reason
        raise ZkConsumerError(f"{type(reason).__name__}: {reason}") from reason

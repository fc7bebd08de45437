"""What the streams check before they hand out a message, below them and below the member's
state, which keeps both: the record of each owned partition (`Claim`) and the member's delivery
gate."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from enum import Enum
from typing import Any, Protocol

from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import TopicPartition

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
    the offset committed for it, the consumed position gathered from its stream (or where a
    reset put it), and whether that reset is still to be learned from the fetcher.

    Kept by `MemberState`, one per partition, and changed only under its lock. The streams
    check that the record a chunk was fetched under is still the partition's, so a record
    that stops being delivered from is replaced by a successor (`releasing`), never changed
    in place there, and a new claim is a new object."""

    __slots__ = ("committed", "partition", "phase", "position", "reset_pending", "stream",
                 "thread_id", "token")

    def __init__(self, partition: TopicPartition, thread_id: str, token: Token = None,
                 phase: Phase = Phase.FETCHING, stream: Feed | None = None) -> None:
        self.partition = partition
        self.thread_id = thread_id
        self.token = token
        self.phase = phase
        self.stream = stream
        self.committed: int | None = None  # None: the store has no offset for it
        self.position: int | None = None
        self.reset_pending = False

    def releasing(self) -> Claim:
        successor = Claim(self.partition, self.thread_id, self.token, Phase.RELEASING,
                          self.stream)
        successor.committed = self.committed
        successor.position = self.position
        return successor

    def pending(self) -> int | None:
        """The position to commit, if it is ahead of the committed offset: rewriting an
        unchanged offset is wasted traffic, and writing one behind it would rewind the group."""
        position = self.position
        if position is None or (self.committed is not None and position <= self.committed):
            return None
        return position

    def __repr__(self) -> str:
        return f"Claim({self.partition}, {self.thread_id}, {self.phase.value})"


class DeliveryGate:
    """What every stream of one member checks before handing out a message.

    It is closed while the member's ZooKeeper session cannot be trusted (connection suspended:
    the session may be expiring on the server, and with it our owner znodes), so nothing is
    handed out that another member may already own; and it carries the member's failure, which
    every stream then raises. In a member, only its `MemberState` opens and closes it.
    """

    def __init__(self) -> None:
        self.open = threading.Event()  # for waiting until delivery may resume
        self.open.set()
        self.delivering = True  # the same, read per message: a plain attribute is cheapest
        self.failed = threading.Event()
        self._failure: BaseException | None = None

    def pause(self) -> None:
        self.delivering = False
        self.open.clear()

    def resume(self) -> None:
        self.delivering = True
        self.open.set()

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

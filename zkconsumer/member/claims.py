"""What the streams check before they hand out a message, below them and below the member's
state, which keeps both: a partition's claim (one period of its ownership) and the member's
delivery gate."""

from __future__ import annotations

import threading

from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import TopicPartition


class Claim:
    """A token for one period of ownership of a partition; a new claim is a new object. It
    records the ZooKeeper session its owner znode was made in (see `MemberState`)."""

    __slots__ = ("partition", "session", "thread_id")

    def __init__(self, partition: TopicPartition, thread_id: str,
                 session: int | None = None) -> None:
        self.partition = partition
        self.thread_id = thread_id
        self.session = session


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

"""The one release sequence of a member's partitions, whoever coordinates its group.

Releasing is, in this order: delivery stops (each record replaced by its RELEASING successor,
the fetch loop told), the last commit of what was consumed, the partitions given back to the
group (owner znodes deleted; on Kafka's coordinator the generation's end gives them back), and
the records dropped, what was consumed under them with them (it is kept in the records). ZooKeeper's
rebalancer runs the whole of it at once (`release`); Kafka's coordination runs its first step
as the generation passes and its last once the member's state dropped the generation's records
(`stop_delivery`, then `forget`), the last commit being the parting commit the coordinator
takes in between. A term lost outside the member's hands (a session expired) only forgets.

Where the user's `on_partitions_revoked` is not called by the release itself (ZooKeeper's
rebalancer calls it with what each release gives back) but once for a whole term, as on Kafka's
coordinator, what the application was told it holds is kept in `Told`: it outlives the term's
records, since the one to tell the revocation may come after the term ended.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping

from zkconsumer.member.fetch_loop import FetchLoop
from zkconsumer.member.state import MemberState
from zkconsumer.model import TopicPartition


class Release:
    def __init__(self, member: MemberState, fetch_loop: FetchLoop) -> None:
        self._member = member
        self._fetch_loop = fetch_loop

    def stop_delivery(self, partitions: Collection[TopicPartition]) -> None:
        """Nothing more of these is handed out or fetched from now."""
        self._member.withdraw(partitions)
        self._fetch_loop.routing_changed()

    def forget(self) -> None:
        """The records went with the term, outside a release: the fetch loop is told, so
        nothing more is fetched under them (what was consumed under them went with them)."""
        self._fetch_loop.routing_changed()

    def release(self, partitions: Mapping[TopicPartition, str],
                last_commit: Callable[[set[TopicPartition]], object],
                give_back: Callable[[Mapping[TopicPartition, str]], object]) -> None:
        """The whole sequence, for partitions the member gives back itself. The fetch loop is
        told once, as delivery stops: it fetches for FETCHING records only."""
        self.stop_delivery(partitions)
        last_commit(set(partitions))
        give_back(partitions)
        self._member.drop(partitions)


class Told:
    """What the application was told it holds (`on_partitions_assigned`, partition -> stream
    thread) and not yet told it lost: told of the revocation once, by whoever comes first
    after the term is taken back (the coordination thread as the term passes, the worker's
    next assignment, a leave). It outlives the term's records, and its lock settles the one
    race: a worker that just claimed records what it told only while its term is still
    current, else it tells the revocation itself (`keep`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._told: dict[TopicPartition, str] = {}

    def keep(self, told: Mapping[TopicPartition, str], still_current: Callable[[], bool]
             ) -> bool:
        """The application was just told `told` was assigned: kept to be told of its
        revocation later, if `still_current()` (asked under the lock); False if not, and the
        caller tells it now (whoever took the term back found nothing kept)."""
        with self._lock:
            if not still_current():
                return False
            self._told = dict(told)
            return True

    def take(self) -> dict[TopicPartition, str]:
        """What to tell of the revocation now, once: the next `take` finds nothing."""
        with self._lock:
            told, self._told = self._told, {}
            return told

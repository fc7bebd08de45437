"""A member's znodes and watches: the only part of membership that talks to ZooKeeper.

Claims are one multi-operation transaction: either every owner znode of the attempt is created
or none is, so a failed attempt leaves nothing behind to clean up, and claiming many partitions
costs one round trip.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from typing import TYPE_CHECKING

from kazoo.exceptions import (
    KazooException,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.protocol.states import EventType, KazooState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from zkconsumer.config.zookeeper import REBALANCE_TURN_MS
from zkconsumer.errors import ZkConsumerError
from zkconsumer.logs import get_logger
from zkconsumer.member.owner_wait import OwnersSeen, leader_epoch
from zkconsumer.member.plan import GroupSnapshot
from zkconsumer.model import TopicPartition
from zkconsumer.offsets.store import OwnerCheck
from zkconsumer.topology import TopicSource, TopicView, ZookeeperTopics
from zkconsumer.zk.group_state import read_registered
from zkconsumer.zk.group_walk import Registered, registrations
from zkconsumer.zk.session import current_session
from zkconsumer.zk.turns import Turns
from zkconsumer.zk.znode_reader import KazooReader, Znode
from zkconsumer.znodes.consumers import ConsumerRegistration, decode_owner, encode_owner
from zkconsumer.znodes.paths import BROKER_IDS, BROKER_TOPICS, GroupPaths, topic_path

if TYPE_CHECKING:
    from kazoo.client import KazooClient
    from kazoo.protocol.states import WatchedEvent, ZnodeStat

log = get_logger(__name__)

# The version of an owner znode this member created (see `ZookeeperMembership.claim`).
CLAIMED_OWNER_VERSION = 1
# Transactions per claim: the first may meet znodes of our own to settle; a third conflict
# means the group is changing under us, which the rebalancer's retry handles.
_CLAIM_ATTEMPTS = 3


class _Reading:
    """Stands in the view cache while a view is read, so that a watch firing meanwhile (which
    empties the cache) is not overwritten by the read's answer."""

    all_topics: tuple[str, ...] = ()

    def partitions(self, _topic: str) -> list[int] | None:
        return None

    def partitions_of(self, topics: Iterable[str]) -> dict[str, list[int] | None]:
        return dict.fromkeys(topics)


_READING: TopicView = _Reading()


class DuplicateConsumerIdError(ZkConsumerError):
    """Another live process registered the same consumer id."""


class ZookeeperMembership:
    def __init__(self, zk: KazooClient, group: str, consumer_id: str,
                 registration: ConsumerRegistration, topics: TopicSource | None = None, *,
                 turn_ms: int = REBALANCE_TURN_MS,
                 clock: Callable[[], float] = time.monotonic,
                 draw: Callable[[], float] = random.random) -> None:
        """`turn_ms`: see `zk.turns` (`rebalance.turn.ms`); `clock` and `draw` (a random
        fraction) are the turns' clock and chance."""
        self.zk = zk
        self.paths = GroupPaths(group)
        self.consumer_id = consumer_id
        self.registration = registration
        # Where topics and partitions come from; only the ZooKeeper registry can be watched.
        self.topics = topics or ZookeeperTopics(zk)
        self.last_view: TopicView | None = None  # what the last snapshot was computed from
        self._wildcard = False
        self._watched_topics: set[str] = set()
        # Each watched topic's znode data as its watch last read it (None: no znode), which
        # the next view takes instead of reading it again (see `_topic_watch`).
        self._topic_znodes: dict[str, bytes | None] = {}
        self._watch_lock = threading.Lock()
        self._on_change: Callable[[], None] | None = None
        self._registered: dict[str, Registered] = {}  # see `snapshot`
        # The ids the last snapshot listed, with the registry's child version then.
        self._listed: tuple[frozenset[str], int] | None = None
        # Sessions owning contested claims, to be looked for in the next snapshot's
        # registrations, and the last ones for which every registration was read again.
        self._contesting: set[int] = set()
        self._doubted: frozenset[int] = frozenset()
        # The topic registry as last read, until a watch of it fires (see `snapshot`).
        self._cached_view: TopicView | None = None
        # Topics whose owner folder is known to exist (see `_ensure_owner_folders`).
        self._owner_folders: set[str] = set()
        # When to read the group after a change (under `_watch_lock`); `_stopped` ends a wait.
        self._turns = Turns(turn_ms / 1000.0)
        self._clock = clock
        self._draw = draw
        self._stopped = threading.Event()

    # -- registration -----------------------------------------------------------------------

    def register(self) -> None:
        with self._watch_lock:
            # A new session may have missed a topic's change, until its watch reads it again.
            self._cached_view = None
            self._topic_znodes.clear()
        path = self.paths.member(self.consumer_id)
        try:
            self.zk.create(path, self.registration.encode(), ephemeral=True, makepath=True)
        except NodeExistsError:
            _, stat = self.zk.get(path)
            if stat.ephemeralOwner != self.zk.client_id[0]:
                raise DuplicateConsumerIdError(
                    f"consumer id {self.consumer_id} is already registered in group "
                    f"{self.paths.group} by another live session"
                ) from None
        log.info("registered", consumer_id=self.consumer_id, path=path)

    def deregister(self) -> None:
        try:
            self.zk.delete(self.paths.member(self.consumer_id))
        except NoNodeError:
            pass

    # -- watches ----------------------------------------------------------------------------

    def watch(self, on_change: Callable[[], None], topics: Collection[str],
              wildcard: bool) -> None:
        """Call `on_change` whenever members, brokers or the subscribed topics change.

        kazoo re-arms these watches itself, also after a new session, but for the registry of
        members, which each snapshot watches anew (`_watch_members`). Topics known from Kafka
        metadata have no znodes here: their changes are found by a `MetadataRefresher`, which
        reads `interest()`.
        """
        self._on_change = on_change
        self._wildcard = wildcard
        # The registry's znode need not exist: its watch waits for it (`_watch_members`).
        self._watch_members()
        self.zk.add_listener(self._connection_changed)
        if self.topics.watched_in_zookeeper:
            self._watch_children(BROKER_IDS)
            if wildcard:
                self._watch_children(BROKER_TOPICS)
        self.watch_topics(topics)

    def watch_topics(self, topics: Collection[str]) -> None:
        """Watch each topic's znode (creation and partition changes); idempotent per topic."""
        with self._watch_lock:
            new = set(topics) - self._watched_topics
            self._watched_topics |= new
        if not self.topics.watched_in_zookeeper:
            return
        for topic in sorted(new):
            DataWatch(self.zk, topic_path(topic), self._topic_watch(topic))
        if new:
            # The view was read before these watches began: a change in between is seen only
            # by reading it again.
            with self._watch_lock:
                self._cached_view = None

    def interest(self) -> tuple[bool, frozenset[str]]:
        """Whether a filter subscribes, and the topics the group subscribes to by now."""
        with self._watch_lock:
            return self._wildcard, frozenset(self._watched_topics)

    def _watch_members(self) -> None:
        """The registry of members is watched by each read of it (`snapshot`), which a member
        makes in its turn: a change tells the member once, and it looks again only then (a
        burst of registrations is one read, not one per registration). The registry's znode is
        watched here for being removed and made again; its first answer counts the members a
        member not ranked yet takes a random place among, and the group's size it takes. kazoo
        drops a connection's watches with it (calling them with a NONE event, which is no
        change): once connected again, the watch is set again (`_connection_changed`)."""
        first = [True]

        def on_node(_data, stat, *_event) -> None:
            initial, first[0] = first[0], False
            if initial:
                with self._watch_lock:
                    if self._turns.unranked(stat.numChildren if stat else 0, self._draw()):
                        self._turns.changed(self._clock())
            elif stat is not None:
                self._members_changed()

        DataWatch(self.zk, self.paths.ids, on_node)

    def _members_changed(self, event: WatchedEvent | None = None) -> None:
        """The registry of members changed (or its znode was made again): the next snapshot
        waits this member's turn and reads it. A NONE event is the connection dropping."""
        if event is None or event.type != EventType.NONE:
            self._notify(False)

    def _connection_changed(self, state: KazooState) -> None:
        """On kazoo's thread, never blocking: connected again, the registry is watched again,
        and a change made while it was not (its child version moved since the last snapshot)
        is told as one. In a new session, the rebalance that registers again reads it anyway."""
        if state is not KazooState.CONNECTED or self._stopped.is_set():
            return
        try:
            request = self.zk.get_children_async(self.paths.ids, watch=self._members_changed,
                                                 include_data=True)
        except KazooException:
            return  # the connection went again: so does this, and the next one asks again
        request.rawlink(self._listed_again)

    def _listed_again(self, request) -> None:
        last = self._listed
        if request.successful() and last is not None and request.value[1].cversion != last[1]:
            self._notify(False)

    def stop_waiting(self) -> None:
        """A member leaving does not wait for its turn (`snapshot` then reads at once)."""
        self._stopped.set()

    def _watch_children(self, path: str) -> None:
        """kazoo's ChildrenWatch gives up for good on a missing znode (`/brokers/ids` before any
        broker registered, `/brokers/topics` before any topic exists, or either one removed),
        so a watch on the znode itself starts a children watch whenever the znode exists."""
        first = [True]
        watching = [False]

        def on_node(_data, stat, *_event) -> None:
            initial, first[0] = first[0], False
            if stat is None:
                watching[0] = False  # its children watch stopped with it
            elif not watching[0]:
                watching[0] = True
                ChildrenWatch(self.zk, path, self._changes_after_first())
            else:
                return  # the znode's data changed, not its children
            if not initial:
                self._notify(True)

        DataWatch(self.zk, path, on_node)

    def _topic_watch(self, topic: str) -> Callable[..., None]:
        """A topic's watch: what it reads is kept for the next view, which then need not read
        the znode again (at 5,000 partitions, 60 KB that every member of a deploy read twice:
        for its watch, then for its first rebalance); after its first answer, it tells a
        change. A new session forgets what the watches read (`register`), and kazoo calls a
        watch again only when the znode changed: until then, views read the topic themselves,
        as before."""
        tell = self._changes_after_first()

        def changed(data: bytes | None, stat: ZnodeStat | None, *_event) -> None:
            with self._watch_lock:
                self._topic_znodes[topic] = (data or b"") if stat is not None else None
            tell()

        return changed

    def _changes_after_first(self) -> Callable[..., None]:
        """kazoo calls a new watch once at once; only later calls are changes (of the topic
        registry)."""
        first = [True]

        def changed(*_args):
            if first[0]:
                first[0] = False
                return
            self._notify(True)

        return changed

    def _notify(self, topology: bool) -> None:
        """`topology`: the topic registry changed, rather than the group's members."""
        with self._watch_lock:
            if topology:
                self._cached_view = None
            self._turns.changed(self._clock())
        if self._on_change is not None:
            self._on_change()

    # -- snapshot ---------------------------------------------------------------------------

    def snapshot(self, exclude_internal_topics: bool) -> GroupSnapshot:
        """Registrations already read are not read again: with N members, every rebalance
        read N registrations in each of them, N x N reads for one member joining or leaving.
        A registration does not change while its id stays registered in the same session; an
        id registered again in another session (a restart with a fixed consumer.id) may say
        something else. Seen gone in between, it is read as new; gone and back between two
        reads, it shows in the registry's child version (more changes than the two lists
        differ by), and every registration is read again. Claims contested by a session none
        of the registrations read holds are noted by `claim` for the next snapshot to look at
        as well (`_registrations_in_doubt`)."""
        self._await_turn()
        try:
            listed, stat = self.zk.get_children(self.paths.ids, watch=self._members_changed,
                                                include_data=True)
        except NoNodeError:  # the registry's znode is watched for being made again
            listed, stat = [], None
        known = self._registered if not self._gone_and_back(listed, stat) else {}
        registered = read_registered(self.zk, self.paths.group, known, listed)
        if self._registrations_in_doubt(registered) and known:  # not when all were just read
            # the ones cached before are read again; the ones just read are not
            fresh = {name: found for name, found in registered.items() if name not in known}
            registered = read_registered(self.zk, self.paths.group, fresh, listed)
        self._registered = registered
        with self._watch_lock:
            if self.consumer_id in registered:
                self._turns.ranked(list(registered).index(self.consumer_id), len(registered))
        members = registrations(registered)
        view = self._topic_view()
        # Only a filter's subscription needs every topic's name (see `_RegistryView`).
        all_topics = view.all_topics if any(registration.is_wildcard
                                            for registration in members.values()) else ()
        partial = GroupSnapshot(members, all_topics, {})
        subscribed = sorted(partial.subscribed_topics(exclude_internal_topics))
        partitions = {topic: numbers for topic, numbers in view.partitions_of(subscribed).items()
                      if numbers is not None}
        self.last_view = view
        return GroupSnapshot(members, all_topics, partitions)

    def _gone_and_back(self, listed: list[str], stat: ZnodeStat | None) -> bool:
        """Whether ids may have left and registered again since the last snapshot's list: the
        registry's children changed more often than the two lists differ."""
        before = self._listed
        now = self._listed = (frozenset(listed), stat.cversion) if stat is not None else None
        if before is None or now is None:
            return False
        return now[1] - before[1] > len(now[0] ^ before[0])

    def _await_turn(self) -> None:
        """Wait for this member's turn after the changes not yet read (see `zk.turns`)."""
        while True:
            with self._watch_lock:
                wait = self._turns.wait(self._clock())
                if wait <= 0 or self._stopped.is_set():
                    self._turns.reading()
                    return
            self._stopped.wait(wait)

    def _topic_view(self) -> TopicView:
        """The topic registry is read again only once a watch of it fired (or new topics came
        to be watched, or the member registered in a new session): a member joining or leaving
        changes nothing there, and every member re-reading a topic's znode (60 KB at 5,000
        partitions) on each of a fleet's rebalances was a fifth of the packets of a 60-member
        group's start. A watched topic's znode is taken from what its watch last read, not
        read again. Sources not watched in ZooKeeper are asked each time (they keep their own
        cache)."""
        if not self.topics.watched_in_zookeeper:
            return self.topics.view()
        with self._watch_lock:
            cached = self._cached_view
            if cached is None or cached is _READING:
                # Marked before the read: a watch firing meanwhile has the next one read too.
                self._cached_view = cached = _READING
            known = dict(self._topic_znodes)
        if cached is not _READING:
            return cached
        view = self.topics.view(known)
        with self._watch_lock:
            if self._cached_view is _READING:
                self._cached_view = view
        return view

    # -- ownership --------------------------------------------------------------------------

    def claim(self, partitions: Mapping[TopicPartition, str]) -> list[TopicPartition]:
        """Create every owner znode or none; returns the partitions someone else still owns.

        Each znode is created and then rewritten in the same transaction, so ours have version
        `CLAIMED_OWNER_VERSION` while one the reference consumer creates has version 0; with
        the session check of `owner_checks` that makes our offset commits conditional on still
        owning the partition.

        Idempotent, as the reference is: an owner znode of this very session naming the same
        thread (left by a transaction that was applied although its answer was lost) counts
        as claimed, and one naming another of our threads is replaced.
        """
        if not partitions:
            return []
        self._ensure_owner_folders({tp.topic for tp in partitions})
        remaining = dict(partitions)
        for attempt in range(1, _CLAIM_ATTEMPTS + 1):
            if not remaining:
                break
            ordered = sorted(remaining)
            transaction = self.zk.transaction()
            for tp in ordered:
                path, data = self.paths.owner(tp.topic, tp.partition), encode_owner(remaining[tp])
                transaction.create(path, data, ephemeral=True)
                transaction.set_data(path, data, version=0)
            results = transaction.commit()
            conflicts = [tp for tp, result in zip(ordered, results[::2], strict=True)
                         if isinstance(result, NodeExistsError)]
            if not conflicts:
                if any(isinstance(result, NoNodeError) for result in results[::2]):
                    self._owner_folders.clear()  # one was removed: the next claim makes it
                _raise_first_failure(results)
                return []
            contested = self._settle_own_owners(conflicts, remaining)
            if contested:
                self._contesting.update(contested.values())
                return list(contested)
            if attempt == _CLAIM_ATTEMPTS:
                self._registered = {}  # the next attempt reads every registration again
                return conflicts
        return []

    def _ensure_owner_folders(self, topics: Collection[str]) -> None:
        """Make the owner folders of these topics that this member has not seen yet: at fleet
        size, asking whether the folder is there before each claim was about one request in
        eight of a rolling restart. A folder removed later (a group deleted by hand) fails the claim
        with NoNodeError, which forgets them all, so that the rebalance's next attempt makes
        it again."""
        for topic in sorted(set(topics) - self._owner_folders):
            self.zk.ensure_path(self.paths.owners_topic(topic))
            self._owner_folders.add(topic)

    def _registrations_in_doubt(self, registered: Mapping[str, Registered]) -> bool:
        """Whether every registration must be read again. A claim is most often contested by
        a peer that has not let go yet, or by one registered since the last read: the session
        owning the contested znode then holds one of the registrations just read, and nothing
        is read again (at fleet size, reading every registration again at each contest was
        most of the group's requests). A contesting session that none holds is a member that
        left without letting go, or an id registered again in a new session, whose cached
        registration may be stale: every registration is read again, once for such a set of
        sessions (a departed member's does not make each attempt read them all until its
        session ends)."""
        unknown = self._contesting - {found.session for found in registered.values()}
        self._contesting = set()
        if not unknown or unknown <= self._doubted:
            return False
        self._doubted = frozenset(unknown)
        return True

    def _settle_own_owners(self, conflicts: list[TopicPartition],
                           remaining: dict[TopicPartition, str]) -> dict[TopicPartition, int]:
        """Sort conflicting owner znodes: those of this session either already say what we
        want (taken out of `remaining`) or are stale and deleted; returns the others' ones,
        each with the session that owns it."""
        session = current_session(self.zk)
        nodes = self._owner_nodes(conflicts)
        contested = {}
        stale = []
        for tp in conflicts:
            if tp not in nodes:
                continue  # released meanwhile: claim it again
            path, node = nodes[tp]
            if node.session != session:
                contested[tp] = node.session
            elif decode_owner(path, node.data) == remaining[tp] \
                    and node.version == CLAIMED_OWNER_VERSION:
                del remaining[tp]
            else:
                stale.append((path, node.version))
        for path, version in stale:
            try:
                self.zk.delete(path, version=version)
            except NoNodeError:
                pass
        return contested

    def owner_checks(self, tokens: Mapping[TopicPartition, Hashable]
                     ) -> dict[TopicPartition, OwnerCheck]:
        """What an offset commit of these partitions is conditional on: our owner znodes, for
        those whose token (the session their claim was made in) is the session we have now;
        the others are left out (an expiry deleted their owner znodes)."""
        session = current_session(self.zk)
        return {tp: OwnerCheck(self.paths.owner(tp.topic, tp.partition), CLAIMED_OWNER_VERSION,
                               session)
                for tp, token in tokens.items() if session is not None and token == session}

    def release(self, partitions: Mapping[TopicPartition, str]) -> None:
        """Delete the owner znodes that still name our threads; others' znodes are left alone."""
        mine = [(path, node.version) for tp, (path, node) in self._owner_nodes(partitions).items()
                if decode_owner(path, node.data) == partitions[tp]]
        if not mine:
            return
        transaction = self.zk.transaction()
        for path, version in mine:
            transaction.delete(path, version)
        _raise_first_failure(transaction.commit())

    def owners_seen(self, partitions: Collection[TopicPartition]) -> OwnersSeen:
        """Which session owns each of these owner znodes now (read pipelined), the leader
        epoch of the answers, and the sessions of the members the last snapshot read."""
        sessions = {tp: node.session
                    for tp, (_path, node) in self._owner_nodes(partitions).items()}
        return OwnersSeen(sessions, leader_epoch(self.zk.last_zxid),
                          frozenset(found.session for found in self._registered.values()),
                          len(self._registered))

    def _owner_nodes(self, partitions: Collection[TopicPartition]
                     ) -> dict[TopicPartition, tuple[str, Znode]]:
        """The owner znodes of these partitions that exist, each with its path, read together
        (a level)."""
        paths = {tp: self.paths.owner(tp.topic, tp.partition) for tp in partitions}
        nodes = KazooReader(self.zk).data(paths.values())
        return {tp: (path, nodes[path]) for tp, path in paths.items() if path in nodes}

    def wait_for_owners_gone(self, partitions: Collection[TopicPartition], timeout_s: float) -> bool:
        """Block until none of these owner znodes exists, or the timeout; True if all are gone.

        The reference sleeps `rebalance.backoff.ms` blindly; a watch wakes us the moment the
        previous owner lets go.
        """
        released = threading.Event()
        remaining = {self.paths.owner(tp.topic, tp.partition) for tp in partitions}
        lock = threading.Lock()

        def check(path: str) -> None:
            # Asynchronous, so every owner is asked at once; a watch re-asks on any change.
            try:
                request = self.zk.exists_async(path, watch=lambda _event: check(path))
            except KazooException:
                return  # the session is closing or lost; the waiter's timeout ends the wait
            request.rawlink(lambda answered: settle(path, answered))

        def settle(path: str, answered) -> None:
            if not answered.successful() or answered.value is not None:
                return
            with lock:
                remaining.discard(path)
                if not remaining:
                    released.set()

        for path in list(remaining):
            check(path)
        return released.wait(timeout_s)


def _raise_first_failure(results: list) -> None:
    """A multi-op either applies every op or none; kazoo reports failures as results, so the
    op that failed must be found and raised, or a failed claim would look like success."""
    for result in results:
        if isinstance(result, Exception) and not isinstance(
                result, (RolledBackError, RuntimeInconsistency)):
            raise result

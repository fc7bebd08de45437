"""`ZookeeperGroup`: the coordination of a ZooKeeper-coordinated group (the default), as a
`ConsumerConnector` composes it (see `coordination`): the member's ZooKeeper session is its
term of ownership, its registration and owner znodes the group's state, and the rebalancer
(sorted-range or round-robin, `rebalancer.py`) what the worker runs on each change.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from kazoo.protocol.states import KazooState

from zkconsumer.config import ConsumerConfig, ZookeeperSettings
from zkconsumer.errors import ZkConsumerError
from zkconsumer.fetch import KafkaAccess, resolve_kafka_access
from zkconsumer.fetch.kafka_client import kafka_client_options
from zkconsumer.member.claims import Token
from zkconsumer.member.coordination import (
    Assigned,
    CommitRoute,
    Host,
    LeaseLost,
    LeavingStep,
    Revoked,
    StreamFor,
    TermEvent,
    Wording,
    report,
)
from zkconsumer.member.rebalancer import Rebalancer
from zkconsumer.member.state import Event, MemberState
from zkconsumer.member.zk_membership import ZookeeperMembership
from zkconsumer.offsets import OffsetStore, open_offset_store
from zkconsumer.topology import MetadataRefresher, TopicSource, open_topic_source
from zkconsumer.zk.registry import wait_for_brokers
from zkconsumer.zk.session import connect_for, current_session, startup_retry
from zkconsumer.znodes.brokers import BrokerRegistration
from zkconsumer.znodes.consumers import ConsumerRegistration

if TYPE_CHECKING:
    from kazoo.client import KazooClient

# How long a starting member waits for a broker to (re-)register before it gives up.
BROKER_WAIT_S = 60.0
# How often a start-up step waiting on a thread of its own looks for a shutdown.
_START_POLL_S = 0.1

WORDING = Wording(
    coordinator="ZooKeeper", name="zookeeper",
    term_ended="ZooKeeper session expired; registering again",
    unfinished_leave=("the next owners resume from the last commit; this member's znodes go "
                      "when its session expires"))

T = TypeVar("T")


def unless_shut_down(step: Callable[[], T], closing: Callable[[], bool]) -> T:
    """`step()`, waited for on the side so that a shutdown ends the wait at once (a broker
    that accepts connections but never answers holds a metadata read for a whole request
    timeout); the step left behind ends within its own timeout."""
    outcome: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        try:
            outcome.set_result(step())
        except BaseException as exc:  # noqa: BLE001 - raised on the starting thread
            outcome.set_exception(exc)

    threading.Thread(target=run, name="zkconsumer-start", daemon=True).start()
    while not concurrent.futures.wait([outcome], timeout=_START_POLL_S).done:
        if closing():
            raise ZkConsumerError("shut down while waiting for the step")
    return outcome.result()


class ZookeeperGroup:
    """The keyword arguments make the member's clients and its group membership; tests give
    stand-ins (the signatures are those of the defaults)."""

    wording = WORDING

    def __init__(self, config: ConsumerConfig, *,
                 connect_zookeeper: Callable[[ZookeeperSettings], KazooClient] = connect_for,
                 find_brokers: Callable[[KazooClient, float], Mapping[int, BrokerRegistration]]
                 = wait_for_brokers,
                 open_offset_store: Callable[..., OffsetStore] = open_offset_store,
                 open_topic_source: Callable[..., TopicSource] = open_topic_source,
                 join_group: Callable[..., ZookeeperMembership] = ZookeeperMembership) -> None:
        self._config = config
        self._find_brokers = find_brokers
        self._open_offset_store = open_offset_store
        self._open_topic_source = open_topic_source
        self._join_group = join_group
        self._zk = connect_zookeeper(config.zookeeper)
        self._refresher: MetadataRefresher | None = None  # topics from Kafka metadata only

    # -- what the connector reads -------------------------------------------------------------

    @property
    def fence_session(self) -> KazooClient:
        return self._zk

    @property
    def zookeeper_session(self) -> tuple[int, bytes]:
        return self._zk.client_id

    def first_term(self) -> Token | None:
        return current_session(self._zk)

    def bind(self, host: Host) -> None:
        """From now on: an expiry while starting must be known to the member's state too."""
        self._host = host
        self._member: MemberState = host._member
        self._lease_on_answers()
        self._zk.add_listener(self._on_session_state)

    # -- starting -----------------------------------------------------------------------------

    def _closing(self) -> bool:
        return self._member.closing

    def kafka_access(self) -> KafkaAccess:
        """`bootstrap.servers` when set: those brokers need not be in this ZooKeeper at all."""
        config = self._config
        return resolve_kafka_access(
            lambda: startup_retry(self._closing)(self._find_brokers, self._zk,
                                                 BROKER_WAIT_S).values(),
            config.kafka_client_properties.get("security.protocol", "PLAINTEXT"),
            config.kafka_api_version, config.bootstrap_servers)

    def open(self, opened: contextlib.ExitStack, registration: ConsumerRegistration,
             wildcard: bool) -> CommitRoute:
        """Every step that waits (for ZooKeeper, topic metadata) gives up once a shutdown
        began: its ZooKeeper calls fail on the closed session, its retries look for the
        shutdown between attempts, and the metadata read is waited for on the side."""
        config, host = self._config, self._host
        self._offset_store = self._open_offset_store(
            config, self._zk, *host._access, observe_commit=host._metrics.observe_commit)
        opened.callback(self._offset_store.close)
        topic_source = self._open_topic_source(
            self._zk, config.bootstrap_servers, host._access.api_version,
            kafka_client_options(config.kafka_client_properties), config.socket_timeout_ms)
        opened.callback(topic_source.close)
        if not topic_source.watched_in_zookeeper:
            # As a member waits for the broker registry: one that cannot learn which
            # topics exist fails now, before it joins the group, not in its first rebalance.
            unless_shut_down(topic_source.view, self._closing)
        self._topic_source = topic_source
        self._membership = self._join_group(self._zk, config.group_id, host.consumer_id,
                                            registration, topic_source,
                                            turn_ms=config.rebalance_turn_ms)
        return CommitRoute(self._offset_store, self._membership.owner_checks,
                           ("the ZooKeeper session cannot be trusted now",
                            "the ZooKeeper session is back"))

    def join(self, topics: set[str], wildcard: bool, stream_for: StreamFor,
             fenced: bool) -> None:
        config, host = self._config, self._host
        self._rebalancer = Rebalancer(
            consumer_id=host.consumer_id, strategy=config.partition_assignment_strategy,
            exclude_internal_topics=config.exclude_internal_topics,
            max_attempts=config.rebalance_max_retries, backoff_ms=config.rebalance_backoff_ms,
            crashed_owner_grace_ms=2 * config.zookeeper_session_timeout_ms,
            membership=self._membership, fetch_loop=host._fetch_loop,
            committer=host._committer, offset_store=self._offset_store, stream_for=stream_for,
            auto_commit=config.auto_commit_enable, callbacks=host._callbacks,
            member=self._member, observe=host._metrics.observe_rebalance)
        startup_retry(self._closing)(self._membership.register)
        startup_retry(self._closing)(self._membership.watch, self._group_changed, topics,
                                     wildcard)
        topic_source = self._topic_source
        if not topic_source.watched_in_zookeeper:
            self._refresher = MetadataRefresher(
                topic_source, config.topic_metadata_refresh_interval_ms / 1000.0,
                self._membership.interest, lambda: self._membership.last_view,
                self._group_changed)

    def start(self) -> None:
        if self._refresher is not None:
            self._refresher.start()

    # -- the worker ---------------------------------------------------------------------------

    def rebalance(self) -> bool:
        self._rebalancer.rebalance()
        return True

    def renew_term(self) -> None:
        """In a new session: forget what the lost one owned, register again, and only then let
        the member claim and deliver in it (until then its gate stays closed)."""
        self._rebalancer.forget_lost_session()
        fence = self._host._fence
        if fence is not None:  # the promise went with the session: made again first
            fence.declare()
        self._membership.register()
        if not self._member.rejoined(current_session(self._zk)) \
                and not self._member.leaving:
            self._host._log.info("the ZooKeeper session changed while registering; "
                                 "registering again")

    def commit_in_callback(self, in_hand: bool) -> bool:
        return False  # the user's callbacks run on the worker, which commits as any thread

    # -- leaving ------------------------------------------------------------------------------

    def leaving_steps(self, commit: bool, failed: bool, deadline: float) -> list[LeavingStep]:
        host = self._host
        steps: list[LeavingStep] = [
            ("the release of the owned partitions",
             lambda: self._rebalancer.release_all(commit=commit and not failed,
                                                  notify=not failed)),
            ("the deregistration", self._membership.deregister)]
        if commit and host.moved is not None:
            steps.insert(0, ("the commit to both offset storages", self._carry_offsets_over))
        if commit and self._config.auto_commit_enable:
            steps.insert(0, ("the final commit",
                             lambda: host._final_commit(retry=not failed, deadline=deadline)))
        return steps

    def _carry_offsets_over(self) -> bool:
        """A fenced member, its final commit made and its partitions still its own: what the
        group has committed for them (the larger of ZooKeeper's and Kafka's, whichever
        `offsets.storage` says) goes to both storages, Kafka's as a group with no Kafka-side
        members writes it (generation -1): the new coordination's members resume there.
        Never backwards, as it is the larger of the two already."""
        if not self._member.may_commit():
            return False
        host = self._host
        held = sorted(self._member.held())
        both = self._open_offset_store(
            dataclasses.replace(self._config, offsets_storage="kafka", dual_commit_enabled=True),
            self._zk, *host._access, observe_commit=host._metrics.observe_commit)
        try:
            committed = both.fetch(held)
            both.commit(committed)
        finally:
            both.close()
        host._log.info("drained: committed to both offset storages", partitions=len(committed))
        return True

    def fenced(self) -> None:
        return None

    def stop_watching(self) -> None:
        self._membership.stop_waiting()
        if self._refresher is not None:
            self._refresher.stop()

    def close_clients(self) -> None:
        self._offset_store.close()
        self._membership.topics.close()

    def disconnect(self) -> None:
        self._zk.remove_listener(self._on_session_state)  # closing reports LOST, not an expiry
        self._zk.stop()
        self._zk.close()

    # -- the session's reports ----------------------------------------------------------------

    def _lease_on_answers(self) -> None:
        """The gate's lease runs on what the session's answers prove (`Hearing.
        lease_deadline`: two thirds of the session timeout after the last moment an answer is
        proven to have come after), so the streams stop by themselves before the server can
        expire the session, whether or not kazoo's thread runs to notice (a frozen process).
        A client without the hearing handler (a test's stand-in) gives the gate no lease."""
        hearing = getattr(getattr(self._zk, "handler", None), "hearing", None)
        if hearing is None:
            return
        gate = self._member.gate
        hearing.on_renewed(gate.lease)
        gate.lease(hearing.lease_deadline())  # after: a renewal meanwhile is in it already

    def _group_changed(self) -> None:
        self._member.handle(Event.GROUP_CHANGED)

    def _on_session_state(self, state: KazooState) -> None:
        """Runs on kazoo's thread: hands the event and the session id to the member's state,
        which decides what follows, and says so; never blocks.

        A suspended connection may be a session expiring on the server, whose owner znodes
        then go to other members while we cannot hear of it: delivery and commits pause at
        once (the connection is given up after two thirds of the session timeout without
        hearing from the server, see `zkconsumer.zk.hearing`, so before the server can expire
        it) until the same session is back.
        """
        event: TermEvent = LeaseLost() if state is KazooState.SUSPENDED \
            else Revoked("ZooKeeper session expired") if state is KazooState.LOST \
            else Assigned(current_session(self._zk))
        applied = report(self._member, event)
        log = self._host._log
        if applied is Event.LEASE_LOST:
            log.warning("ZooKeeper connection lost; delivery and commits paused")
        elif applied is Event.TERM_ENDED:
            self._host._metrics.observe_session_expired()
            log.warning("ZooKeeper session expired; registration and owners are gone")
        elif applied is Event.NEW_TERM:
            log.info("new ZooKeeper session; registering again before delivering")
        else:
            log.info("ZooKeeper connection back in the same session; delivering again")

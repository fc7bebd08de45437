"""`ConsumerConnector`: the Python API of a group member, like the reference's connector.

It only wires the parts: ZooKeeper membership, the rebalancer, the fetch loop, the offset
committer, the streams and the metrics, each in its own module. Three threads run per connector:
the worker (registration and rebalances, one at a time, driven by the member's state), the fetch
loop and the auto-committer; a fourth serves `/metrics` and `/healthz` when `metrics.port` is set.
What more than one of them reads or writes (the lifecycle, the session, the claims, the delivery
gate) is one `MemberState`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kazoo.exceptions import KazooException, NoAuthError

from zkconsumer.assignment import TopicFilter, make_consumer_id
from zkconsumer.config import ConsumerConfig, ZookeeperSettings
from zkconsumer.errors import ZkConsumerError, describe_error
from zkconsumer.fetch import open_fetcher
from zkconsumer.fetch.fetcher import Fetcher
from zkconsumer.fetch.settings import poll_timeout_ms
from zkconsumer.logs import get_logger
from zkconsumer.member.committer import OffsetCommitter
from zkconsumer.member.coordination import Coordination, Fenced, LeavingStep
from zkconsumer.member.fence_decision import (
    FenceAction,
    GroupMoved,
    GroupMovedError,
    Stage,
    decide,
)
from zkconsumer.member.fence_watch import MemberFence
from zkconsumer.member.fetch_loop import FetchLoop
from zkconsumer.member.kafka_group import KafkaGroup
from zkconsumer.member.rebalancer import PartitionCallback, RebalanceCallbacks
from zkconsumer.member.state import Event, MemberState, State, Work
from zkconsumer.member.streams import KafkaStream
from zkconsumer.member.zk_group import ZookeeperGroup
from zkconsumer.member.zk_membership import ZookeeperMembership
from zkconsumer.metrics import MemberMetrics, MemberSources
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import OffsetStore, open_offset_store
from zkconsumer.throttled_log import RepeatedCondition
from zkconsumer.topology import TopicSource, open_topic_source
from zkconsumer.zk.registry import wait_for_brokers
from zkconsumer.zk.session import ZookeeperAccessDeniedError, connect_for, startup_retry
from zkconsumer.znodes.brokers import BrokerRegistration
from zkconsumer.znodes.consumers import ConsumerRegistration
from zkconsumer.znodes.fence import Fence, FenceAwareMember

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from zkconsumer.metrics.http_server import MetricsServer

log = get_logger(__name__)

# `shutdown` takes about this long at most, whatever ZooKeeper does: while the ensemble has no
# quorum every ZooKeeper call waits for it, so what is not done by then (the final commit, the
# release, the deregistration) is said in one line and left to the session's expiry, after which
# the next owners resume from the last commit. Of it, closing the clients gets the last second.
SHUTDOWN_TIMEOUT_S = 6.0
_CLOSING_S = 1.0
# A fenced member's streams end at once; whoever consumes them has this long to call
# `shutdown()` (which commits what the consuming threads finished) before the member drains
# by itself.
FENCED_SHUTDOWN_GRACE_S = 5.0


class ConsumerConnector:
    """A member of a consumer group, coordinated by ZooKeeper (the default) or, with
    `group.coordination=kafka`, by Kafka's group coordinator: the connector composes the
    coordination it is given (`coordination`), or the one its config names.

    Build it from a `ConsumerConfig` or a mapping of legacy keys, call `create_message_streams`
    or `create_message_streams_by_filter` once, iterate the streams, and `shutdown()` (or use it
    as a context manager) to commit, release the partitions and leave the group.
    """

    def __init__(self, config: ConsumerConfig | Mapping[str, str], *,
                 on_partitions_revoked: PartitionCallback | None = None,
                 on_partitions_assigned: PartitionCallback | None = None,
                 connect_zookeeper: Callable[[ZookeeperSettings], KazooClient] = connect_for,
                 find_brokers: Callable[[KazooClient, float], Mapping[int, BrokerRegistration]]
                 = wait_for_brokers,
                 open_fetcher: Callable[..., Fetcher] = open_fetcher,
                 open_offset_store: Callable[..., OffsetStore] = open_offset_store,
                 open_topic_source: Callable[..., TopicSource] = open_topic_source,
                 join_group: Callable[..., ZookeeperMembership] = ZookeeperMembership,
                 watch_fence: Callable[..., MemberFence] = MemberFence,
                 metrics: MemberMetrics | None = None,
                 coordination: Callable[[ConsumerConfig], Coordination] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """The keyword arguments after the callbacks make the member's clients and its group
        membership; tests give stand-ins (the signatures are those of the defaults; those of
        ZooKeeper's coordination are not used with Kafka's, `connect_zookeeper` there only
        with `zookeeper.connect`, for the fence). `coordination(config)`: the coordination to
        compose instead of the one the config names (a test's scripted one). `metrics`: the
        figures to go on counting in (a member that follows its group to another coordination
        keeps its counters); new ones when None. `clock`: the member's monotonic clock, which
        its lease is held on."""
        self.config = config if isinstance(config, ConsumerConfig) else \
            ConsumerConfig.from_mapping(config)
        self.consumer_id = make_consumer_id(self.config.group_id, self.config.consumer_id)
        self._callbacks = RebalanceCallbacks(on_partitions_revoked, on_partitions_assigned)
        self._open_fetcher = open_fetcher
        self._watch_fence = watch_fence
        self._streams: list[KafkaStream] = []
        self._stop_auto_commit = threading.Event()
        self._metrics = metrics or MemberMetrics()
        self._metrics_server: MetricsServer | None = None  # with metrics.port only
        # Set when `group cutover` fenced the group off this member's coordination: its
        # streams end, and this says where the group went and what the member does next.
        self.moved: GroupMoved | None = None
        self._fence: MemberFence | None = None  # made as the member starts
        self._log = log.bind(consumer_id=self.consumer_id, group=self.config.group_id)
        if coordination is not None:
            self._coordination = coordination(self.config)
        elif self.config.group_coordination == "kafka":
            self._coordination = KafkaGroup(self.config, connect_zookeeper=connect_zookeeper)
        else:
            self._coordination = ZookeeperGroup(
                self.config, connect_zookeeper=connect_zookeeper, find_brokers=find_brokers,
                open_offset_store=open_offset_store, open_topic_source=open_topic_source,
                join_group=join_group)
        self._member = MemberState(self._coordination.first_term(), clock)
        self._coordination.bind(self)

    # -- public API -------------------------------------------------------------------------

    def create_message_streams(self, topic_count: Mapping[str, int]) -> dict[str, list[KafkaStream]]:
        """Streams per topic: `{"t": 2}` gives two streams for t, one per consumer thread id."""
        if not topic_count or any(n < 1 for n in topic_count.values()):
            raise ValueError("give at least one topic, each with at least one stream")
        streams = {topic: [self._new_stream(f"{topic}-{i}") for i in range(n)]
                   for topic, n in topic_count.items()}
        registration = ConsumerRegistration.static(dict(topic_count), _now_ms())
        self._start(registration, set(topic_count), wildcard=False,
                    stream_for=lambda tp, thread: streams[tp.topic][_thread_index(thread)])
        return streams

    def create_message_streams_by_filter(self, topic_filter: TopicFilter,
                                         num_streams: int = 1) -> list[KafkaStream]:
        """Streams over every topic the whitelist/blacklist allows, now and as topics appear."""
        if num_streams < 1:
            raise ValueError("num_streams must be at least 1")
        streams = [self._new_stream(f"{topic_filter.regex}-{i}") for i in range(num_streams)]
        registration = ConsumerRegistration.wildcard(topic_filter.pattern_name, topic_filter.regex,
                                                     num_streams, _now_ms())
        self._start(registration, set(), wildcard=True,
                    stream_for=lambda tp, thread: streams[_thread_index(thread)])
        return streams

    def commit_offsets(self, in_hand: bool = True) -> dict[TopicPartition, int]:
        """Commit the positions delivered so far (last delivered offset + 1) for owned
        partitions, counting the message each stream handed out last as done with (with
        `in_hand=False`, only what each stream counts as consumed already). Inside
        `on_partitions_revoked` of a member on Kafka's coordinator (the generation has passed
        then) what was consumed goes with the parting commit the member sends before it joins
        again, and this returns nothing: the outcome is logged."""
        if self._coordination.commit_in_callback(in_hand):
            return {}
        return self._committer.commit(in_hand=in_hand)

    def owned_partitions(self) -> dict[TopicPartition, str]:
        """The partitions this member owns and delivers from, with their thread ids (see
        `MemberState.owned`)."""
        return self._member.owned()

    def metrics(self) -> dict:
        """The figures `/metrics` serves, as a plain dict: `{"messages_consumed": {topic: n},
        "partition_lag": {"t-0": n}, "max_lag": n, "rebalances": {"success": n, ...}, ...}`
        (see `MemberMetrics.snapshot`)."""
        return self._metrics.snapshot()

    @property
    def member_metrics(self) -> MemberMetrics:
        """The figures themselves, for a connector that takes over from this one (the member
        following its group to another coordination) to go on counting in."""
        return self._metrics

    @property
    def metrics_registry(self):
        """The member's own Prometheus `CollectorRegistry`, for an embedder serving it (e.g.
        `prometheus_client.generate_latest(connector.metrics_registry)`)."""
        return self._metrics.registry

    @property
    def zookeeper_session(self) -> tuple[int, bytes]:
        """(session id, password) of the member's ZooKeeper session, for fault-injection tools
        (ZkConsumerError for a member coordinated by Kafka, which has none)."""
        return self._coordination.zookeeper_session

    @property
    def _zk(self) -> KazooClient | None:
        """The ZooKeeper session the member has (its coordination's, or the fence's)."""
        return self._coordination.fence_session

    @property
    def state(self) -> State:
        return self._member.state

    def fetching_owned_partitions(self) -> bool:
        """True when the fetcher works on exactly the partitions owned now: a rebalance's routing
        reaches it between two polls, shortly after the rebalance itself is done."""
        return self._fetch_loop.caught_up()

    def wait_until_stable(self, timeout: float | None = None) -> bool:
        """Block until a rebalance finished (True), the member failed, or the timeout passed."""
        reached = self._member.wait_for({State.STABLE, State.FAILED, State.CLOSED}, timeout)
        if reached is State.FAILED:
            self._member.gate.raise_failure()
        return reached is State.STABLE

    def shutdown(self, commit: bool = True, timeout: float = SHUTDOWN_TIMEOUT_S) -> None:
        """Final commit (when auto commit is on), release every partition, leave the group;
        within about `timeout` seconds, whatever ZooKeeper does (see `SHUTDOWN_TIMEOUT_S`).

        `commit=False` skips every commit, for callers that could not process what was delivered.
        Called while `create_message_streams` is still starting (waiting for ZooKeeper, say),
        it closes the session and that call raises.
        """
        deadline = time.monotonic() + timeout
        if not self._member.begin_close():
            return
        if self._member.started:
            self._stop_auto_commit.set()
            self._stop_refresher()
            self._fetch_loop.stop()
            for stream in self._streams:
                stream.close()
            # A rebalance notices the stop between two attempts; one blocked on ZooKeeper does
            # not, and leaving must not wait for it all the time there is. (Started by now or
            # about to be, it then stops at once.)
            if self._worker.is_alive():
                self._worker.join(timeout=max(0.0, deadline - time.monotonic()) / 2)
            # After a session expiry the owners are gone and others may have moved on: a
            # commit now could rewind them.
            self._leave_group(commit and self._member.term is not None,
                              deadline - _CLOSING_S)
            self._close_clients()
        self._stop_metrics_server()
        self._disconnect()
        self._log.info("shut down")

    def _close_clients(self) -> None:
        """The clients opened when the member started."""
        self._fetcher.close()
        self._coordination.close_clients()

    def _disconnect(self) -> None:
        """The coordination's connections opened with the connector."""
        self._coordination.disconnect()

    def __enter__(self) -> ConsumerConnector:
        return self

    def __exit__(self, *_exc) -> None:
        self.shutdown()

    # -- wiring -----------------------------------------------------------------------------

    def _new_stream(self, name: str) -> KafkaStream:
        stream = KafkaStream(name, self.config.queued_max_message_chunks,
                             self.config.consumer_timeout_ms, self._member.claims,
                             self._member.gate)
        self._streams.append(stream)
        return stream

    def _start(self, registration: ConsumerRegistration, topics: set[str], wildcard: bool,
               stream_for) -> None:
        self._member.request_start()
        try:
            self._open_and_join(registration, topics, wildcard, stream_for)
        except Exception as exc:
            if self._member.start_failed():  # the shutdown is why, whatever the step said
                raise ZkConsumerError(
                    "the connector was shut down while it was starting") from exc
            raise

    def _open_and_join(self, registration: ConsumerRegistration, topics: set[str],
                       wildcard: bool, stream_for) -> None:
        """Every step that waits (for brokers, ZooKeeper, topic metadata) gives up once a
        shutdown began (see the coordination's `open`)."""
        config, coordination = self.config, self._coordination
        self._access = coordination.kafka_access()
        # Clients opened here are closed again if the start fails; once started, by shutdown.
        with contextlib.ExitStack() as opened:
            self._serve_metrics(opened)
            self._fetcher = self._open_fetcher(config, *self._access)
            opened.callback(self._fetcher.close)
            self._fetch_loop = FetchLoop(
                self._fetcher, poll_timeout_ms(config, self._fetcher.ends_polls_at_answers),
                self._fail, self._member)
            route = coordination.open(opened, registration, wildcard)
            self._committer = OffsetCommitter(
                route.store, lambda: self._streams, self._member,
                owner_checks=route.owner_checks, pause_words=route.pause_words)
            fence = None
            if coordination.fence_session is not None:
                fence = self._promise_to_honour_the_fence(coordination.fence_session)
            coordination.join(topics, wildcard, stream_for, fenced=fence is not None)
            self._watch_metrics()
            self._worker = threading.Thread(target=self._work, name="zkconsumer-member",
                                            daemon=True)
            self._member.start()  # from here on, a shutdown stops the threads and clients
            opened.pop_all()
        # Joining by now, and no partition claimed yet: a fence written since it was read is
        # seen here, before the first rebalance could hand out a message.
        if fence is not None:
            fence.watch(self._on_fence)
        coordination.start()
        self._fetch_loop.start()
        self._worker.start()
        if config.auto_commit_enable:
            threading.Thread(target=self._auto_commit, name="zkconsumer-autocommit",
                             daemon=True).start()

    def _serve_metrics(self, opened: contextlib.ExitStack) -> None:
        """With metrics.port, before anything else: a port in use fails the member before it
        joins the group."""
        config = self.config
        if config.metrics_port:
            from zkconsumer.metrics.http_server import MetricsServer

            self._metrics_server = MetricsServer(config.metrics_host, config.metrics_port,
                                                 self._metrics.registry, self._health)
            opened.callback(self._stop_metrics_server)

    def _watch_metrics(self) -> None:
        """Once the fetcher, the fetch loop and the committer exist: where a scrape reads."""
        self._metrics.watch(MemberSources(
            streams=lambda: self._streams, owned=self._member.owned,
            positions=self._committer.positions, high_watermark=self._fetcher.high_watermark,
            queued_bytes=self._fetch_loop.queued_bytes))
        self._fetcher.observe_fetch = self._metrics.observe_fetch

    def _leave_group(self, commit: bool, deadline: float, failed: bool = False) -> bool:
        """The one way to leave, on shutdown and after a failure: the final commit (with
        `commit`, when auto commit is on), the release of every partition and the
        deregistration, on a thread of its own that is given up on at `deadline`: during a
        quorum loss a ZooKeeper call waits for the ensemble, which may not come back. Closing
        the session then ends the wait; the znodes go when it expires. A `failed` member makes
        one attempt at the final commit and no other, and does not call the user's callback
        (it may be what failed). True if every step was done."""
        steps = self._leaving_steps(commit, failed, deadline)
        done: list[str] = []
        failures: list[BaseException] = []

        def leave() -> None:
            # Each step goes on whatever the one before did: releasing without the final
            # commit costs re-delivery from the last commit, holding on stalls the group.
            for name, step in steps:
                try:
                    if step() is not False:
                        done.append(name)
                except Exception as exc:  # noqa: BLE001 - reported below, in one line
                    failures.append(exc)

        leaving = threading.Thread(target=leave, name="zkconsumer-leave", daemon=True)
        leaving.start()
        leaving.join(timeout=max(0.0, deadline - time.monotonic()))
        missed = [name for name, _ in steps if name not in done]
        if not missed:
            return True
        report = self._log.error if failures else self._log.warning
        wording = self._coordination.wording
        report(f"stopped without finishing with {wording.coordinator}",
               not_done=", ".join(missed),
               cause=describe_error(failures[0]) if failures else
               f"{wording.coordinator} did not answer in time",
               then=wording.unfinished_leave)
        return False

    def _leaving_steps(self, commit: bool, failed: bool, deadline: float
                       ) -> list[LeavingStep]:
        """What leaving is made of, in order, each named for the log (see `_leave_group`):
        the coordination's steps, then the fence-aware znode's removal."""
        steps = self._coordination.leaving_steps(commit, failed, deadline)
        if self._fence is not None:
            steps.append(("the fence-aware znode's removal", self._fence.withdraw))
        return steps

    def _final_commit(self, retry: bool, deadline: float | None = None) -> bool:
        """False when no commit may be written (the term cannot be trusted, or its lease
        lapsed: `MemberState.may_commit`), so nothing was committed. With the leave's
        `deadline`, a suspended connection has half the time left to come back in the same
        session (the release and deregistration after it need the rest): a stop during a
        ZooKeeper blip still commits what was consumed, rather than leaving it to be delivered
        again."""
        if deadline is not None and not self._member.delivering:
            wait_s = max(0.0, deadline - time.monotonic()) / 2
            self._log.info("the final commit waits for the ZooKeeper connection "
                           "to come back in the same session", for_s=round(wait_s, 1))
            self._member.wait_until_trusted(wait_s)
        return self._committer.commit_final(retry=retry)

    # -- the cutover fence --------------------------------------------------------------------

    def _promise_to_honour_the_fence(self, zk: KazooClient) -> MemberFence:
        """Before the member registers (or joins Kafka's group): the fence read, and the
        fence-aware znode made, so that `group cutover` never sees this member in the group
        without its promise; returns the fence, to watch once the member is in. GroupMovedError
        when the fence says it must not start here."""
        fence = self._fence = self._watch_fence(
            zk, self.config.group_id, self.consumer_id,
            FenceAwareMember(self._coordination.wording.name, self.config.cutover_on_fence))
        startup_retry(lambda: self._member.closing)(self._check_fence_at_start)
        startup_retry(lambda: self._member.closing)(fence.declare)
        return fence

    def _check_fence_at_start(self) -> None:
        """Before the member registers: GroupMovedError if the fence says it must not start
        here (it waits, joins the other coordination, or refuses: the worker decides)."""
        assert self._fence is not None  # made before it is read
        fence = self._fence.read()
        decision = decide(Stage.STARTING, self._coordination.wording.name, fence,
                          self.config.cutover_on_fence)
        if decision.action is not FenceAction.CARRY_ON:
            raise GroupMovedError(GroupMoved(self.config.group_id, fence, decision,
                                             self._access))

    def _on_fence(self, fence: Fence | None) -> None:
        """On kazoo's thread: a fence that moves the group away ends the member's streams at
        once (nothing more is delivered), and the member drains (see `_fenced`)."""
        if self.moved is not None or self._member.leaving:
            return
        decision = decide(Stage.RUNNING, self._coordination.wording.name, fence,
                          self.config.cutover_on_fence)
        if decision.drains:
            self._fenced(Fenced(GroupMoved(self.config.group_id, fence, decision,
                                           self._access)))

    def _fenced(self, event: Fenced) -> None:
        """The fence, watched by the connector whatever coordinates the group, moved the
        group away: the coordination is told (`Coordination.fenced`), and delivery stops now;
        the drain itself is `shutdown()`'s (with `moved` set it commits to both storages),
        called by whoever consumes the streams once they ended (so what their threads finished
        is committed), or else by the member itself after `FENCED_SHUTDOWN_GRACE_S`."""
        self._coordination.fenced()
        self.moved = moved = event.moved
        fence = moved.fence
        self._log.info("fenced", to=fence.to if fence else None,
                       phase=fence.phase if fence else None, then=moved.decision.action.value)
        for stream in self._streams:
            stream.close()
        threading.Thread(target=self._drain_unless_shut_down, name="zkconsumer-fenced",
                         daemon=True).start()

    def _drain_unless_shut_down(self) -> None:
        if self._member.wait_for({State.CLOSED, State.FAILED}, FENCED_SHUTDOWN_GRACE_S) is None:
            self._log.info("fenced member's streams not shut down by their consumer; draining")
            self.shutdown()

    def _work(self) -> None:
        while True:
            work = self._member.next_work()
            if work is Work.STOP:
                if self._member.state is State.FAILED:
                    self._leave_after_failure()
                return
            try:
                if work is Work.REJOIN:
                    self._coordination.renew_term()
                    continue
                if self._coordination.rebalance():
                    self._member.handle(Event.REBALANCE_DONE)
            except NoAuthError:
                self._fail(ZookeeperAccessDeniedError.because(
                    f"a change to group {self.config.group_id}"))
            except KazooException as exc:
                # A dropped connection: the session listener reports expiry; otherwise retry.
                self._log.warning("rebalance interrupted by ZooKeeper", error=describe_error(exc))
                time.sleep(min(1.0, self.config.rebalance_backoff_ms / 1000.0))
                self._member.handle(Event.GROUP_CHANGED)
            except Exception as exc:  # noqa: BLE001 - any other failure ends the member loudly
                self._fail(exc)

    def _health(self) -> tuple[bool, str]:
        """For `/healthz`: healthy while registered in the group and not failed; otherwise
        one line saying why not."""
        state = self._member.state
        if state in (State.REBALANCING, State.STABLE):
            return True, (f"registered in group {self.config.group_id} as "
                          f"{self.consumer_id} ({state.value})")
        failure = self._member.gate.failure
        if state is State.FAILED and failure is not None:
            return False, f"failed: {_one_line(failure)}"
        return False, {State.NEW: "not registered yet", State.FAILED: "failed",
                       State.TERM_ENDED: self._coordination.wording.term_ended,
                       State.CLOSED: "shut down"}[state]

    def _stop_metrics_server(self) -> None:
        server, self._metrics_server = self._metrics_server, None
        if server is not None:
            server.stop()

    def _stop_refresher(self) -> None:
        self._coordination.stop_watching()

    def _auto_commit(self) -> None:
        interval = self.config.auto_commit_interval_ms / 1000.0
        failing = RepeatedCondition(self._log, "auto commit failed; retrying at each interval",
                                    "auto commit works again")
        while not self._stop_auto_commit.wait(interval):
            try:
                self._committer.commit(retry=False)
            except NoAuthError:
                self._fail(ZookeeperAccessDeniedError.because(
                    f"committing offsets of group {self.config.group_id}"))
                return
            except (ZkConsumerError, KazooException) as exc:
                failing.occurred(error=describe_error(exc))
                continue
            except Exception as exc:  # noqa: BLE001 - not transient: the member ends loudly
                self._fail(exc)
                return
            if not self._committer.paused:  # a paused commit wrote nothing: it proves nothing
                failing.cleared()

    def _fail(self, exc: BaseException) -> None:
        """Any thread may report the member's failure; the worker thread then leaves the
        group (see `_leave_after_failure`)."""
        if not self._member.fail(exc):
            return
        self._log.error("consumer failed", error=_one_line(exc))
        self._stop_auto_commit.set()

    def _leave_after_failure(self) -> None:
        """A failed member must not keep partitions its peers could consume, nor a
        registration that would get it partitions again: it leaves as a shutdown does,
        committing what was consumed, whatever the user's callbacks do (they are not told)."""
        self._stop_refresher()
        self._fetch_loop.stop()
        if self._leave_group(self._member.term is not None,
                             time.monotonic() + SHUTDOWN_TIMEOUT_S - _CLOSING_S, failed=True):
            self._log.info("left the group after the failure", group=self.config.group_id)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, ZkConsumerError):
        return " ".join(str(exc).split()) or type(exc).__name__
    return describe_error(exc)


def _thread_index(thread_id: str) -> int:
    return int(thread_id.rsplit("-", 1)[1])


def _now_ms() -> int:
    return int(time.time() * 1000)

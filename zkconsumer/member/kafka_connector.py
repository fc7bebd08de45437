"""`KafkaCoordinatedConnector`: a member whose group Kafka's group coordinator coordinates
(`group.coordination=kafka`), with no ZooKeeper for its coordination.

`ConsumerConnector(config)` makes one when the config says so. It shares the streams, the fetch
loop, the committer, the auto-committer and the member's state with the ZooKeeper member, and
has its own coordination: the coordination thread (`KafkaCoordination`) in place of the
ZooKeeper session and its watches, and a worker that claims what each generation assigns, its
committed offsets read through the coordinator. Offsets are always the coordinator's:
`offsets.storage` and `dual.commit.enabled` do not apply.

The user's `on_partitions_revoked` is called on the coordination thread as soon as the
generation passed (after delivery stopped, before the parting commit and the JoinGroup), as the
Java consumer calls its listener before it rejoins: what it does delays the member's rejoin, not
the group's other members. A wildcard subscription (`create_message_streams_by_filter`) is the
list of topics its filter allows among the cluster's, matched again every
`topic.metadata.refresh.interval.ms`; the member joins again when it changes, and each topic's
partitions are spread over all of its streams.

With `zookeeper.connect` the member also honours the cutover fence, as a ZooKeeper-coordinated
member does, so that `group cutover --to zookeeper` can move its group back: it makes its
fence-aware znode before it joins and marks its JoinGroup subscription with it (user data
`fence_marker(consumer id)`, which the command reads from DescribeGroups), and watches the
fence on a ZooKeeper session of its own. Fenced, it stops delivering, makes its final commit
in its generation, writes what Kafka holds for its partitions to the ZooKeeper offset znodes
(never moving one back), leaves (LeaveGroup) and withdraws its znode. Without
`zookeeper.connect` it has no ZooKeeper at all and cannot be fenced.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping

from kazoo.client import KazooClient

from zkconsumer.assignment import TopicFilter, topic_filter_for
from zkconsumer.config import ConsumerConfig, ZookeeperSettings
from zkconsumer.errors import ZkConsumerError, describe_error
from zkconsumer.fetch import KafkaAccess, open_fetcher
from zkconsumer.fetch.fetcher import Fetcher
from zkconsumer.fetch.kafka_client import kafka_client_options
from zkconsumer.fetch.log_offsets import LogOffsets
from zkconsumer.fetch.settings import kafka_consumer_settings
from zkconsumer.kafka.protocol.group_member import GroupMember
from zkconsumer.member.committer import OffsetCommitter
from zkconsumer.member.connector import ConsumerConnector
from zkconsumer.member.fence_decision import GroupMoved
from zkconsumer.member.fence_watch import MemberFence
from zkconsumer.member.fetch_loop import FetchLoop
from zkconsumer.member.kafka_coordination import GroupCommits, KafkaCoordination
from zkconsumer.member.rebalancer import PartitionCallback, RebalanceCallbacks, call_back
from zkconsumer.member.state import Event, MemberState, StaleClaimError
from zkconsumer.member.stream_threads import deal_to_stream_threads
from zkconsumer.metrics import MemberMetrics
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import open_offset_store
from zkconsumer.offsets.forward import carry_forward
from zkconsumer.offsets.metered_store import MeteredOffsetStore
from zkconsumer.offsets.store import OffsetStoreError
from zkconsumer.offsets.zookeeper_store import ZookeeperOffsetStore
from zkconsumer.topology import KafkaTopics
from zkconsumer.zk.session import connect_for
from zkconsumer.znodes.consumers import ConsumerRegistration
from zkconsumer.znodes.fence import fence_marker


class KafkaCoordinatedConnector(ConsumerConnector):
    """A member of a group on Kafka's group coordinator; see the module's docstring."""

    def __init__(self, config: ConsumerConfig | Mapping[str, str], *,
                 on_partitions_revoked: PartitionCallback | None = None,
                 on_partitions_assigned: PartitionCallback | None = None,
                 connect_zookeeper: Callable[[ZookeeperSettings], KazooClient] = connect_for,
                 open_fetcher: Callable[..., Fetcher] = open_fetcher,
                 watch_fence: Callable[..., MemberFence] = MemberFence,
                 metrics: MemberMetrics | None = None,
                 **_zookeeper_parts: object) -> None:
        """The ZooKeeper member's other keyword arguments are accepted and not used;
        `connect_zookeeper` and `watch_fence` only with `zookeeper.connect`, for the fence."""
        self._set_up(config, RebalanceCallbacks(on_partitions_revoked, on_partitions_assigned),
                     open_fetcher, metrics)
        self._watch_fence = watch_fence
        # The fence's session, and nothing else's: the group is coordinated by Kafka.
        self._zk: KazooClient | None = None
        if self.config.zookeeper_connect is not None:
            self._zk = connect_zookeeper(self.config.zookeeper)
        # The partitions the member held when fenced: those it carries to ZooKeeper.
        self._held_when_fenced: frozenset[TopicPartition] = frozenset()
        self._member = MemberState(None)  # no generation until the coordinator gives one
        self._topic_count: dict[str, int] = {}  # streams per topic, of a fixed subscription
        # A wildcard subscription's filter and streams: its topics are those the filter allows
        # among the cluster's, matched again as they come and go.
        self._topic_filter: TopicFilter | None = None
        self._wildcard_streams = 0
        # What on_partitions_assigned was told and on_partitions_revoked not yet: swapped under
        # the lock by the worker (assigning), the coordination thread (revoking) and a leave.
        self._told: dict[TopicPartition, str] = {}
        self._told_lock = threading.Lock()
        # Set by a commit asked from on_partitions_revoked: its offsets go with the parting one.
        self._parting_commit_asked = False

    # -- public API -------------------------------------------------------------------------

    def commit_offsets(self, in_hand: bool = True) -> dict[TopicPartition, int]:
        """As the ZooKeeper member's; inside `on_partitions_revoked` (the generation has passed
        then) what was consumed goes with the parting commit the member sends before it joins
        again, and this returns nothing: the outcome is logged."""
        coordination = getattr(self, "_coordination", None)  # made as the member starts
        if coordination is not None and coordination.on_its_thread():
            if in_hand:
                for stream in self._streams:
                    stream.mark_consumed()
            self._parting_commit_asked = True
            return {}
        return super().commit_offsets(in_hand)

    @property
    def zookeeper_session(self) -> tuple[int, bytes]:
        raise ZkConsumerError("a member coordinated by Kafka has no ZooKeeper session")

    # -- wiring -----------------------------------------------------------------------------

    def _open_and_join(self, registration: ConsumerRegistration, topics: set[str],
                       wildcard: bool, stream_for) -> None:
        config = self.config
        assert config.bootstrap_servers is not None  # required with group.coordination=kafka
        if wildcard:
            assert registration.filter_regex is not None  # a wildcard registration has one
            self._topic_filter = topic_filter_for(registration.pattern, registration.filter_regex)
            self._wildcard_streams = registration.subscription[registration.filter_regex]
        else:
            self._topic_count = dict(registration.subscription)
        self._stream_for = stream_for
        settings = kafka_consumer_settings(config, config.bootstrap_servers,
                                           config.kafka_api_version)
        self._access = KafkaAccess(config.bootstrap_servers, config.kafka_api_version)
        with contextlib.ExitStack() as opened:
            self._serve_metrics(opened)
            self._fetcher = self._open_fetcher(config, config.bootstrap_servers,
                                               config.kafka_api_version)
            opened.callback(self._fetcher.close)
            self._topics = KafkaTopics(LogOffsets(
                config.bootstrap_servers, config.kafka_api_version,
                kafka_client_options(config.kafka_client_properties), config.socket_timeout_ms))
            opened.callback(self._topics.close)
            # A member that cannot learn which topics its pattern matches fails now.
            subscribed = self._matched_topics() if wildcard else sorted(self._topic_count)
            fence, marker = None, None
            if self._zk is not None:
                fence = self._promise_to_honour_the_fence()
                marker = fence_marker(self.consumer_id)
            group = GroupMember(
                config.group_id, subscribed, (config.partition_assignment_strategy,),
                session_timeout_ms=config.session_timeout_ms,
                rebalance_timeout_ms=config.max_poll_interval_ms,
                heartbeat_interval_ms=config.heartbeat_interval_ms,
                request_timeout_ms=settings["request_timeout_ms"], user_data=marker)
            self._coordination = KafkaCoordination(group, self._member, settings,
                                                   self._partition_counts,
                                                   self._withdraw_revoked,
                                                   self._forget_revoked, self._fail,
                                                   config.topic_metadata_refresh_interval_ms
                                                   / 1000.0,
                                                   self._matched_topics if wildcard else None)
            commits = MeteredOffsetStore(GroupCommits(self._coordination),
                                         self._metrics.observe_commit, writes_refresh=True)
            self._committer = OffsetCommitter(
                commits, lambda: self._streams, self._member, owner_checks=dict,
                may_commit=self._may_commit,
                pause_words=("the member is between generations", "the member is in a generation"))
            self._fetch_loop = FetchLoop(self._fetcher, config.fetch_wait_max_ms, self._fail,
                                         self._member)
            self._watch_metrics()
            self._worker = threading.Thread(target=self._work, name="zkconsumer-member",
                                            daemon=True)
            self._member.start()  # from here on, a shutdown stops the threads and clients
            opened.pop_all()
        self._fetch_loop.start()
        self._worker.start()
        self._coordination.start()
        if config.auto_commit_enable:
            threading.Thread(target=self._auto_commit, name="zkconsumer-autocommit",
                             daemon=True).start()
        if fence is not None:  # joining by now: a fence written since it was read
            fence.watch(self._on_fence)

    def _allowed(self, topic: str) -> bool:
        """Whether the wildcard subscription's filter allows `topic`."""
        assert self._topic_filter is not None
        return self._topic_filter.allows(topic, self.config.exclude_internal_topics)

    def _matched_topics(self) -> list[str]:
        """The topics the wildcard subscription's filter allows among the cluster's."""
        return sorted(filter(self._allowed, self._topics.view().all_topics))

    def _streams_per_topic(self, partitions: frozenset[TopicPartition]) -> dict[str, int]:
        """Each assigned topic's streams: a fixed subscription's counts, or every stream of a
        wildcard subscription for each topic its filter allows."""
        if self._topic_filter is None:
            return self._topic_count
        return {tp.topic: self._wildcard_streams for tp in partitions if self._allowed(tp.topic)}

    def _partition_counts(self, topics: list[str]) -> dict[str, int]:
        """The leader's question, on the coordination thread: a topic missing has none."""
        view = self._topics.view()
        return {topic: len(view.partitions(topic) or ()) for topic in topics}

    def _withdraw_revoked(self) -> dict[TopicPartition, int]:
        """On the coordination thread, as the generation passes: the partitions delivered
        from stop being delivered at once, then the user's `on_partitions_revoked` is called;
        returns their consumed positions ahead of the last commit (when auto commit is on) for
        the parting commit. Claims still being made are left to fail on the session's end."""
        owned = self._member.owned()
        self._member.withdraw(owned)
        self._fetch_loop.routing_changed()
        self._parting_commit_asked = False
        self._tell_revoked()
        if not (self.config.auto_commit_enable or self._parting_commit_asked):
            return {}
        return self._committer.releasing_offsets(owned)

    def _forget_revoked(self) -> None:
        """On the coordination thread, once the generation passed and its claims went: what
        was fetched and consumed under them is forgotten, not committed."""
        self._fetch_loop.routing_changed()
        self._committer.released()

    # -- the worker -------------------------------------------------------------------------

    def _reregister(self) -> None:
        """A generation came as a new session: the member claims in it from now on."""
        assigned = self._coordination.assignment
        self._member.reregistered(None if assigned is None else assigned.generation)

    def _rebalance(self) -> bool:
        """Claim what the generation the member is in assigned, from the offsets committed
        for it; False when there is none, or it passed meanwhile (its claims went with it)."""
        assigned = self._coordination.assignment
        if assigned is None or assigned.generation != self._member.session:
            return False
        self._tell_revoked()
        held = self._member.held()
        streams = self._streams_per_topic(assigned.partitions)
        threads = {tp: thread for tp, thread in
                   deal_to_stream_threads(assigned.partitions, streams, self.consumer_id).items()
                   if tp not in held}
        generation = assigned.generation
        try:
            self._member.begin_claims(threads, self._stream_for)
            committed = self._coordination.fetch_offsets(threads, generation) if threads else {}
            self._member.claims_made(generation, threads, committed)
        except StaleClaimError as exc:
            self._member.drop(threads)
            self._metrics.observe_rebalance(False, self._coordination.rebalance_seconds())
            self._log.info("claims refused: the generation passed", reason=str(exc))
            return False
        except OffsetStoreError as exc:
            self._member.drop(threads)
            self._metrics.observe_rebalance(False, self._coordination.rebalance_seconds())
            self._log.warning("committed offsets unreadable; claiming again",
                              error=describe_error(exc))
            time.sleep(self.config.refresh_leader_backoff_ms / 1000.0)
            self._member.handle(Event.GROUP_CHANGED)
            return False
        except BaseException:
            self._member.drop(threads)
            raise
        self._fetch_loop.routing_changed()
        held = self._member.held()
        call_back("on_partitions_assigned", self._callbacks.after_assign, held)
        # Told of the revocation once and after the assignment: by the coordination thread
        # when the generation passes from now on, else (it passed already) here.
        with self._told_lock:
            current = self._coordination.assignment
            still_current = current is not None and current.generation == generation
            if still_current:
                self._told = held
        if not still_current:
            call_back("on_partitions_revoked", self._callbacks.before_release, held)
        took = self._coordination.rebalance_seconds()
        self._metrics.observe_rebalance(True, took)
        # The same event as the ZooKeeper member's, so that logs are read alike.
        self._log.info("rebalanced", coordinator="kafka", generation=generation.generation_id,
                       member_id=generation.member_id, owned=len(held), ms=round(took * 1000))
        return True

    def _tell_revoked(self) -> None:
        """`on_partitions_revoked` with what `on_partitions_assigned` was told, once: by the
        coordination thread as the generation passes, or else by whoever comes next (the
        worker's next assignment, when the generation passed while it was claiming; a leave)."""
        with self._told_lock:
            told, self._told = self._told, {}
        if told:
            call_back("on_partitions_revoked", self._callbacks.before_release, told)

    # -- leaving ----------------------------------------------------------------------------

    _coordinator_name = "the group coordinator"
    _coordination_name = "kafka"
    _expired_health = "the generation passed; joining the group again"
    _unfinished_leave = ("the next owners resume from the last commit; the group rebalances "
                         "without this member once its session times out")

    def _leaving_steps(self, commit: bool, failed: bool, deadline: float
                       ) -> list[tuple[str, Callable[[], object]]]:
        """The final commit (with `commit`, when auto commit is on) in the generation, the
        user's revocation callback (not for a `failed` member: it may be what failed), then
        LeaveGroup, so the group rebalances at once rather than after a session."""
        steps: list[tuple[str, Callable[[], object]]] = []
        if failed:
            with self._told_lock:  # not told: the callbacks may be what failed
                self._told = {}
        if commit and self.config.auto_commit_enable:
            steps.append(("the final commit", lambda: self._final_commit(retry=False)))
        if not failed:
            steps.append(("the revocation callback", self._tell_revoked))
        if commit and self.moved is not None:
            steps.append(("the commit to both offset storages", self._carry_offsets_over))
        steps.append(("the LeaveGroup", lambda: self._coordination.close(
            max(0.0, deadline - time.monotonic()))))
        if self._fence is not None:
            steps.append(("the fence-aware znode's removal", self._fence.withdraw))
        return steps

    def _carry_offsets_over(self) -> bool:
        """A fenced member, its final commit (and any its revocation callback made) done in
        its generation: what Kafka holds for the partitions it had when fenced, and has now,
        goes to the ZooKeeper offset znodes too, where the group's ZooKeeper-coordinated
        members resume; a znode ahead already is left as it is. Kafka is read as a tool reads
        it, outside the generation, so a generation that passed meanwhile (its parting commit
        made for it) changes nothing."""
        assert self._zk is not None  # only a member watching the fence is fenced
        partitions = self._held_when_fenced | self._member.held().keys()
        kafka = open_offset_store(self.config, None, *self._access)
        try:
            written = carry_forward(kafka, ZookeeperOffsetStore(self._zk, self.config.group_id),
                                    partitions)
        finally:
            kafka.close()
        self._log.info("drained: committed to both offset storages",
                       partitions=len(partitions), written_to_zookeeper=len(written))
        return True

    def _fenced(self, moved: GroupMoved) -> None:
        self._held_when_fenced = frozenset(self._member.held())
        super()._fenced(moved)

    def _close_clients(self) -> None:
        self._fetcher.close()
        self._topics.close()

    def _disconnect(self) -> None:
        """The fence's ZooKeeper session, when the member has one."""
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()

"""`KafkaGroup`: the coordination of a group on Kafka's group coordinator
(`group.coordination=kafka`), with no ZooKeeper for its coordination, as a `ConsumerConnector`
composes it (see `coordination`).

`ConsumerConnector(config)` composes one when the config says so. The member has the same
streams, fetch loop, committer, auto-committer and member state as a ZooKeeper-coordinated
one; what differs is here: the coordination thread (`KafkaCoordination`) in place of the
ZooKeeper session and its watches, a generation as the member's term, and a worker that claims
what each generation assigns, its committed offsets read through the coordinator. Offsets are always the coordinator's:
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

import time
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, cast

from zkconsumer.assignment import TopicFilter, topic_filter_for
from zkconsumer.config import ConsumerConfig, ZookeeperSettings
from zkconsumer.errors import ZkConsumerError, describe_error
from zkconsumer.fetch import KafkaAccess
from zkconsumer.fetch.kafka_client import kafka_client_options
from zkconsumer.fetch.log_offsets import LogOffsets
from zkconsumer.fetch.settings import kafka_consumer_settings
from zkconsumer.kafka.protocol.group_member import Generation, GroupMember
from zkconsumer.member.claims import Token
from zkconsumer.member.coordination import (
    CommitRoute,
    Host,
    LeavingStep,
    StreamFor,
    Wording,
    claim_assigned,
)
from zkconsumer.member.kafka_coordination import GroupCommits, KafkaCoordination
from zkconsumer.member.rebalancer import call_back
from zkconsumer.member.release import Release, Told
from zkconsumer.member.state import Event, MemberState, StaleClaimError
from zkconsumer.member.stream_threads import deal_to_stream_threads
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

if TYPE_CHECKING:
    from kazoo.client import KazooClient

WORDING = Wording(
    coordinator="the group coordinator", name="kafka",
    term_ended="the generation passed; joining the group again",
    unfinished_leave=("the next owners resume from the last commit; the group rebalances "
                      "without this member once its session times out"))


class KafkaGroup:
    """The coordination of a group on Kafka's group coordinator; see the module's docstring.
    `connect_zookeeper` only with `zookeeper.connect`, for the fence."""

    wording = WORDING

    def __init__(self, config: ConsumerConfig, *,
                 connect_zookeeper: Callable[[ZookeeperSettings], KazooClient] = connect_for
                 ) -> None:
        assert config.bootstrap_servers is not None  # required with group.coordination=kafka
        self._config = config
        # The fence's session, and nothing else's: the group is coordinated by Kafka.
        self._zk: KazooClient | None = None
        if config.zookeeper_connect is not None:
            self._zk = connect_zookeeper(config.zookeeper)
        # The partitions the member held when fenced: those it carries to ZooKeeper.
        self._held_when_fenced: frozenset[TopicPartition] = frozenset()
        self._topic_count: dict[str, int] = {}  # streams per topic, of a fixed subscription
        # A wildcard subscription's filter and streams: its topics are those the filter allows
        # among the cluster's, matched again as they come and go.
        self._topic_filter: TopicFilter | None = None
        self._wildcard_streams = 0
        # What on_partitions_assigned was told and on_partitions_revoked not yet: kept by the
        # worker (assigning), taken by the coordination thread (revoking) and a leave.
        self._told = Told()
        # Set by a commit asked from on_partitions_revoked: its offsets go with the parting one.
        self._parting_commit_asked = False
        self._coordination: KafkaCoordination | None = None  # made as the member joins

    # -- what the connector reads -------------------------------------------------------------

    @property
    def fence_session(self) -> KazooClient | None:
        return self._zk

    @property
    def zookeeper_session(self) -> tuple[int, bytes]:
        raise ZkConsumerError("a member coordinated by Kafka has no ZooKeeper session")

    def first_term(self) -> Token | None:
        return None  # no generation until the coordinator gives one

    def bind(self, host: Host) -> None:
        self._host = host
        self._member: MemberState = host._member

    def commit_in_callback(self, in_hand: bool) -> bool:
        """Inside `on_partitions_revoked` (the generation has passed then) what was consumed
        goes with the parting commit the member sends before it joins again."""
        coordination = self._coordination
        if coordination is None or not coordination.on_its_thread():
            return False
        if in_hand:
            for stream in self._host._streams:
                stream.mark_consumed()
        self._parting_commit_asked = True
        return True

    # -- starting -----------------------------------------------------------------------------

    def kafka_access(self) -> KafkaAccess:
        config = self._config
        assert config.bootstrap_servers is not None  # required with group.coordination=kafka
        return KafkaAccess(config.bootstrap_servers, config.kafka_api_version)

    def open(self, opened, registration: ConsumerRegistration, wildcard: bool) -> CommitRoute:
        config = self._config
        assert config.bootstrap_servers is not None  # required with group.coordination=kafka
        if wildcard:
            assert registration.filter_regex is not None  # a wildcard registration has one
            self._topic_filter = topic_filter_for(registration.pattern, registration.filter_regex)
            self._wildcard_streams = registration.subscription[registration.filter_regex]
        else:
            self._topic_count = dict(registration.subscription)
        self._topics = KafkaTopics(LogOffsets(
            config.bootstrap_servers, config.kafka_api_version,
            kafka_client_options(config.kafka_client_properties), config.socket_timeout_ms))
        opened.callback(self._topics.close)
        # A member that cannot learn which topics its pattern matches fails now.
        self._subscribed = self._matched_topics() if wildcard else sorted(self._topic_count)
        commits = MeteredOffsetStore(GroupCommits(self), self._host._metrics.observe_commit,
                                     writes_refresh=True)
        return CommitRoute(commits, dict, ("the member is between generations",
                                           "the member is in a generation"))

    def join(self, topics: set[str], wildcard: bool, stream_for: StreamFor,
             fenced: bool) -> None:
        config = self._config
        assert config.bootstrap_servers is not None  # required with group.coordination=kafka
        self._stream_for = stream_for
        self._release_sequence = Release(self._member, self._host._fetch_loop)
        settings = kafka_consumer_settings(config, config.bootstrap_servers,
                                           config.kafka_api_version)
        group = GroupMember(
            config.group_id, self._subscribed, (config.partition_assignment_strategy,),
            session_timeout_ms=config.session_timeout_ms,
            rebalance_timeout_ms=config.max_poll_interval_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            request_timeout_ms=settings["request_timeout_ms"],
            user_data=fence_marker(self._host.consumer_id) if fenced else None)
        self._coordination = KafkaCoordination(
            group, self._member, settings, self._partition_counts, self._withdraw_revoked,
            self._forget_revoked, self._host._fail,
            config.topic_metadata_refresh_interval_ms / 1000.0,
            self._matched_topics if wildcard else None)

    def start(self) -> None:
        assert self._coordination is not None  # made as the member joined
        self._coordination.start()

    def _allowed(self, topic: str) -> bool:
        """Whether the wildcard subscription's filter allows `topic`."""
        assert self._topic_filter is not None
        return self._topic_filter.allows(topic, self._config.exclude_internal_topics)

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

    # -- the committer's store (`GroupCommits`) -----------------------------------------------

    @property
    def generation(self) -> Generation | None:
        """The generation whose assignment the member's state holds, as its `Assigned`
        carried it; None before the first and from the moment one passes."""
        assigned = self._member.assignment
        return None if assigned is None else cast(Generation, assigned.term)

    def fetch_offsets(self, partitions: Collection[TopicPartition], generation: Generation
                      ) -> dict[TopicPartition, int]:
        assert self._coordination is not None  # a store is used once the member joined
        return self._coordination.fetch_offsets(partitions, generation)

    def commit(self, offsets: Mapping[TopicPartition, int],
               tokens: Mapping[TopicPartition, Token]) -> None:
        assert self._coordination is not None  # a store is used once the member joined
        self._coordination.commit(offsets, tokens)

    # -- the coordination thread's reports ----------------------------------------------------

    def _withdraw_revoked(self) -> dict[TopicPartition, int]:
        """On the coordination thread, as the generation passes: the partitions delivered
        from stop being delivered at once, then the user's `on_partitions_revoked` is called;
        returns their consumed positions ahead of the last commit (when auto commit is on) for
        the parting commit. Claims still being made are left to fail on the session's end."""
        host = self._host
        owned = self._member.owned()
        self._release_sequence.stop_delivery(owned)
        self._parting_commit_asked = False
        self._tell_revoked()
        if not (self._config.auto_commit_enable or self._parting_commit_asked):
            return {}
        return host._committer.releasing_offsets(owned)

    def _forget_revoked(self) -> None:
        """On the coordination thread, once the generation passed and its claims went: what
        was fetched and consumed under them is forgotten, not committed."""
        self._release_sequence.forget()

    # -- the worker -------------------------------------------------------------------------

    def renew_term(self) -> None:
        """A generation came as a new session: the member claims in it from now on."""
        self._member.rejoined(self.generation)

    def rebalance(self) -> bool:
        """Claim what the generation the member is in assigned, from the offsets committed
        for it; False when there is none, or it passed meanwhile (its claims went with it)."""
        coordination, host = self._coordination, self._host
        assert coordination is not None  # made as the member joined
        current = self.generation
        if current is None or current != self._member.term:
            return False
        self._tell_revoked()
        try:
            claimed = claim_assigned(
                self._member, self._deal,
                lambda threads, term: coordination.fetch_offsets(threads, cast(Generation, term)),
                self._stream_for)
            if claimed is None:  # the generation began to pass since
                raise StaleClaimError(f"generation {current} is passing")
        except StaleClaimError as exc:
            host._metrics.observe_rebalance(False, coordination.rebalance_seconds())
            host._log.info("claims refused: the generation passed", reason=str(exc))
            return False
        except OffsetStoreError as exc:
            host._metrics.observe_rebalance(False, coordination.rebalance_seconds())
            host._log.warning("committed offsets unreadable; claiming again",
                              error=describe_error(exc))
            time.sleep(self._config.refresh_leader_backoff_ms / 1000.0)
            self._member.handle(Event.GROUP_CHANGED)
            return False
        generation = cast(Generation, claimed.term)
        host._fetch_loop.routing_changed()
        held = self._member.held()
        call_back("on_partitions_assigned", host._callbacks.after_assign, held)
        # Told of the revocation once and after the assignment: by the coordination thread
        # when the generation passes from now on, else (it passed already) here.
        if not self._told.keep(held, lambda: self.generation == generation):
            call_back("on_partitions_revoked", host._callbacks.before_release, held)
        took = coordination.rebalance_seconds()
        host._metrics.observe_rebalance(True, took)
        # The same event as the ZooKeeper member's, so that logs are read alike.
        host._log.info("rebalanced", coordinator="kafka", generation=generation.generation_id,
                       member_id=generation.member_id, owned=len(held), ms=round(took * 1000))
        return True

    def _deal(self, partitions: frozenset[TopicPartition]) -> dict[TopicPartition, str]:
        """The generation's partitions dealt to the member's stream threads."""
        return deal_to_stream_threads(partitions, self._streams_per_topic(partitions),
                                      self._host.consumer_id)

    def _tell_revoked(self) -> None:
        """`on_partitions_revoked` with what `on_partitions_assigned` was told, once: by the
        coordination thread as the generation passes, or else by whoever comes next (the
        worker's next assignment, when the generation passed while it was claiming; a leave)."""
        told = self._told.take()
        if told:
            call_back("on_partitions_revoked", self._host._callbacks.before_release, told)

    # -- leaving ----------------------------------------------------------------------------

    def leaving_steps(self, commit: bool, failed: bool, deadline: float) -> list[LeavingStep]:
        """The final commit (with `commit`, when auto commit is on) in the generation, the
        user's revocation callback (not for a `failed` member: it may be what failed), then
        LeaveGroup, so the group rebalances at once rather than after a session."""
        host = self._host
        steps: list[LeavingStep] = []
        if failed:
            self._told.take()  # not told: the callbacks may be what failed
        if commit and self._config.auto_commit_enable:
            steps.append(("the final commit", lambda: host._final_commit(retry=False)))
        if not failed:
            steps.append(("the revocation callback", self._tell_revoked))
        if commit and host.moved is not None:
            steps.append(("the commit to both offset storages", self._carry_offsets_over))
        steps.append(("the LeaveGroup", self._leave_within(deadline)))
        return steps

    def _leave_within(self, deadline: float) -> Callable[[], object]:
        coordination = self._coordination
        assert coordination is not None  # a member leaves once it joined
        return lambda: coordination.close(max(0.0, deadline - time.monotonic()))

    def _carry_offsets_over(self) -> bool:
        """A fenced member, its final commit (and any its revocation callback made) done in
        its generation: what Kafka holds for the partitions it had when fenced, and has now,
        goes to the ZooKeeper offset znodes too, where the group's ZooKeeper-coordinated
        members resume; a znode ahead already is left as it is. Kafka is read as a tool reads
        it, outside the generation, so a generation that passed meanwhile (its parting commit
        made for it) changes nothing."""
        assert self._zk is not None  # only a member watching the fence is fenced
        partitions = self._held_when_fenced | self._member.held().keys()
        kafka = open_offset_store(self._config, None, *self._host._access)
        try:
            written = carry_forward(kafka,
                                    ZookeeperOffsetStore(self._zk, self._config.group_id),
                                    partitions)
        finally:
            kafka.close()
        self._host._log.info("drained: committed to both offset storages",
                             partitions=len(partitions), written_to_zookeeper=len(written))
        return True

    def fenced(self) -> None:
        self._held_when_fenced = frozenset(self._member.held())

    def stop_watching(self) -> None:
        return None  # the coordination thread matches the pattern; it stops as it leaves

    def close_clients(self) -> None:
        self._topics.close()

    def disconnect(self) -> None:
        """The fence's ZooKeeper session, when the member has one."""
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()

"""Following a group that `group cutover` moves: after a connector drained for the fence, wait
until the move is done (or rolled back) and open a connector on the coordination the group is
on now, in the same process, with the same handler and the same metrics.

A connector only drains (see `ConsumerConnector.moved`); going on is the worker's, since only
it knows how to make the member again (its subscription, its callbacks). `FenceFollower` is
given that as `open_member` and does the rest: what to wait for and where to join is
`fence_decision`'s, the configuration for the other coordination is `config_for`'s.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from zkconsumer.config import ConsumerConfig
from zkconsumer.fetch.brokers import KafkaAccess
from zkconsumer.logs import get_logger
from zkconsumer.member.connector import ConsumerConnector
from zkconsumer.member.fence_decision import (
    FenceAction,
    GroupMoved,
    GroupMovedError,
    Stage,
    decide,
)
from zkconsumer.member.fence_watch import wait_for_fence
from zkconsumer.member.streams import KafkaStream
from zkconsumer.metrics import MemberMetrics
from zkconsumer.zk.session import connect_for
from zkconsumer.znodes.fence import other_coordination

log = get_logger(__name__)

Member = tuple[ConsumerConnector, list[KafkaStream]]
OpenMember = Callable[[ConsumerConfig, MemberMetrics | None], Member]


def config_for(started: ConsumerConfig, coordination: str,
               kafka: KafkaAccess | None) -> ConsumerConfig:
    """The member's settings with `group.coordination=coordination`: those it was started with,
    and for Kafka's coordinator the brokers it found in ZooKeeper when it has no
    `bootstrap.servers` of its own. Checked as any config is."""
    if coordination == started.group_coordination:
        return started
    settings = started.to_properties()
    settings["group.coordination"] = coordination
    if coordination == "kafka" and started.bootstrap_servers is None and kafka is not None:
        settings["bootstrap.servers"] = kafka.bootstrap_servers
        if started.kafka_api_version is None and kafka.api_version is not None:
            settings["kafka.api.version"] = ".".join(map(str, kafka.api_version))
    return ConsumerConfig.from_mapping(settings, "the configuration of the member it follows")


class FenceFollower:
    """Opens the member, and again wherever its group goes; None when it should end."""

    def __init__(self, started: ConsumerConfig, open_member: OpenMember,
                 stop_requested: threading.Event) -> None:
        self._started = started
        self._open_member = open_member
        self._stop = stop_requested
        self._kafka: KafkaAccess | None = None  # how the first member reached Kafka

    def start(self) -> Member | None:
        """The member on its configured coordination, or where the fence says it is to start
        instead; GroupMovedError when it refuses to (cutover.on.fence=exit)."""
        return self._open(self._started, None)

    def after(self, moved: GroupMoved, metrics: MemberMetrics) -> Member | None:
        """The member again once `moved`'s connector drained: None when it is to end (it exits
        on a fence, or a stop was asked for while it waited)."""
        self._kafka = moved.kafka or self._kafka
        action = moved.decision.action
        if action is FenceAction.DRAIN_AND_EXIT:
            log.info("left the group for its cutover; exiting (cutover.on.fence=exit)",
                     group=moved.group, to=moved.fence.to if moved.fence else None)
            return None
        assert moved.fence is not None  # only a fence drains a member
        drained_from = other_coordination(moved.fence.to)
        if action is FenceAction.DRAIN_AND_JOIN and moved.decision.join:
            return self._open(config_for(self._started, moved.decision.join, self._kafka),
                              metrics)
        return self._wait_then_open(Stage.WAITING, drained_from, metrics)

    def _open(self, config: ConsumerConfig, metrics: MemberMetrics | None) -> Member | None:
        while True:
            try:
                member = self._open_member(config, metrics)
            except GroupMovedError as exc:
                if exc.moved.decision.action is FenceAction.REFUSE_START:
                    raise
                self._kafka = exc.moved.kafka or self._kafka
                if exc.moved.decision.action is FenceAction.JOIN_TARGET:
                    assert exc.moved.decision.join is not None  # a target is joined
                    config = config_for(self._started, exc.moved.decision.join, self._kafka)
                    continue
                return self._wait_then_open(Stage.STARTING, config.group_coordination, metrics)
            if config.group_coordination != self._started.group_coordination:
                log.info("joined the group through its new coordination",
                         group=config.group_id, coordination=config.group_coordination)
            return member

    def _wait_then_open(self, stage: Stage, on: str,
                        metrics: MemberMetrics | None) -> Member | None:
        """Wait until the fence says something other than "wait" to a member at `stage` on
        `on`, then open the member where it says."""
        started = self._started
        on_fence = started.cutover_on_fence

        def settled(fence) -> bool:
            return decide(stage, on, fence, on_fence).action is not FenceAction.WAIT

        log.info("waiting for the group's cutover to be switched", group=started.group_id)
        zk = connect_for(started.zookeeper)
        try:
            fence = wait_for_fence(zk, started.group_id, settled, self._stop)
        finally:
            zk.stop()
            zk.close()
        if self._stop.is_set():
            return None
        decision = decide(stage, on, fence, on_fence)
        if decision.join is None:  # the fence moved on to one this member refuses
            raise GroupMovedError(GroupMoved(started.group_id, fence, decision, self._kafka))
        if decision.action is FenceAction.ROLLBACK:
            log.info("the group's cutover was rolled back; rejoining",
                     group=started.group_id, coordination=decision.join)
        return self._open(config_for(started, decision.join, self._kafka), metrics)

"""Kafka's member tells `on_partitions_revoked` once per generation, and never in the next one,
whenever the generation passes: while the worker is in `on_partitions_assigned` (the race the
term-ending step closes) or after. Driven on one thread with the member's real state, release
sequence and `Told` record; `pass_generation` runs the coordination thread's steps in the order
`KafkaCoordination._revoked` runs them."""

from __future__ import annotations

from zkconsumer.kafka.protocol.group_member import Generation
from zkconsumer.member.connector import ConsumerConnector
from zkconsumer.member.coordination import Assigned, Revoked, Revoking, report
from zkconsumer.member.release import Release
from zkconsumer.model import TopicPartition

KAFKA = {"group.id": "g", "group.coordination": "kafka", "bootstrap.servers": "b1:9092",
         "auto.commit.enable": "false"}
A, B = TopicPartition("t", 0), TopicPartition("t", 1)


def no_zookeeper(_settings):
    raise AssertionError("a Kafka-coordinated member has no ZooKeeper here")


class FetchLoop:
    def routing_changed(self) -> None:
        return None


class Coordination:
    """What `KafkaGroup.rebalance` asks of the coordination thread: offsets read in the
    generation (none committed) and how long the rebalance took."""

    def fetch_offsets(self, partitions, generation):
        return {}

    def rebalance_seconds(self) -> float:
        return 0.0


class Member:
    """A Kafka-coordinated connector's group, its coordination thread scripted."""

    def __init__(self, on_assigned=lambda: None) -> None:
        self.calls: list[tuple[str, list[str], int]] = []
        self.generation = 0
        self._on_assigned = on_assigned
        connector = ConsumerConnector(
            KAFKA, connect_zookeeper=no_zookeeper,
            on_partitions_assigned=lambda held: self._told("assigned", held,
                                                            self._on_assigned),
            on_partitions_revoked=lambda held: self._told("revoked", held))
        connector._fetch_loop = FetchLoop()
        self.state = connector._member
        self.group = connector._coordination
        self.group._coordination = Coordination()
        self.group._stream_for = lambda tp, thread: None
        self.group._topic_count = {"t": 1}
        self.group._release_sequence = Release(self.state, connector._fetch_loop)
        self.state.start()

    def _told(self, what: str, held, then=None) -> None:
        self.calls.append((what, sorted(map(str, held)), self.generation))
        if then is not None:
            then()

    def assign(self, partitions: set[TopicPartition]) -> bool:
        """A generation assigns `partitions`; the worker rejoins in it and rebalances."""
        self.generation += 1
        report(self.state, Assigned(Generation(self.generation, "m-1"), frozenset(partitions)))
        self.group.renew_term()
        return self.group.rebalance()

    def begin_passing(self) -> None:
        """The coordination thread's first steps as the generation passes: the assignment
        taken back, delivery stopped and the revocation told (`_withdraw_revoked`)."""
        report(self.state, Revoking())
        self.group._withdraw_revoked()

    def end_passing(self) -> None:
        """Its last steps: the term ended, what was fetched under it forgotten."""
        report(self.state, Revoked("a rebalance"))
        self.group._forget_revoked()


def test_a_generation_passing_after_the_claims_is_told_by_the_coordination_thread_once():
    member = Member()
    assert member.assign({A, B})
    member.begin_passing()
    member.end_passing()
    assert member.assign({A})
    assert member.calls == [("assigned", ["t-0", "t-1"], 1), ("revoked", ["t-0", "t-1"], 1),
                            ("assigned", ["t-0"], 2)]


def test_a_generation_that_begins_to_pass_inside_the_assigned_callback_is_told_in_it():
    """The coordination thread takes the generation back while the worker is still in
    `on_partitions_assigned`: it finds nothing told yet, and the generation has not ended
    (its term and claims stay until `Revoked`). The worker must hear that the generation is
    no longer current and tell the revocation itself, in generation 1, not at generation 2's
    assignment."""
    member = Member()
    member._on_assigned = member.begin_passing
    first = member.assign({A, B})
    member._on_assigned = lambda: None
    member.end_passing()
    assert first, "the claims were made before the generation began to pass"
    assert member.calls[:2] == [("assigned", ["t-0", "t-1"], 1),
                                ("revoked", ["t-0", "t-1"], 1)]
    assert member.assign({A})
    assert member.calls[2:] == [("assigned", ["t-0"], 2)], "nothing told late"

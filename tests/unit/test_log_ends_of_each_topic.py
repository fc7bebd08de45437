"""Log ends read topic by topic when reading them all at once fails: one topic without a leader
costs only its own partitions their lag (group list, group describe and the exporter)."""

from __future__ import annotations

import pytest

from zkconsumer.fetch.log_offsets import (
    LogEnds,
    LogOffsets,
    LogOffsetsError,
    log_ends_of_each_topic,
)
from zkconsumer.kafka.errors import KafkaConnectionError
from zkconsumer.model import TopicPartition

A0, A1, B0, C0 = (TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0),
                  TopicPartition("c", 0))


class Brokers:
    """`LogOffsets.latest` over brokers that know no leader for `leaderless` topics."""

    def __init__(self, *leaderless: str) -> None:
        self.leaderless = set(leaderless)
        self.questions: list[list[TopicPartition]] = []

    def latest(self, partitions):
        self.questions.append(list(partitions))
        for tp in partitions:
            if tp.topic in self.leaderless:
                raise LogOffsetsError(f"no leader for {tp}")
        return {tp: 100 + tp.partition for tp in partitions}


def test_all_log_ends_are_asked_for_at_once_when_every_topic_answers():
    brokers = Brokers()
    assert log_ends_of_each_topic(brokers.latest, [A0, A1, B0]) == LogEnds(
        {A0: 100, A1: 101, B0: 100})
    assert brokers.questions == [[A0, A1, B0]]


def test_a_topic_without_a_leader_is_left_out_and_named_and_the_others_are_read():
    brokers = Brokers("b")
    ends = log_ends_of_each_topic(brokers.latest, [A0, B0, A1, C0])
    assert ends.found == {A0: 100, A1: 101, C0: 100}
    assert ends.unread_topics == ("b",)
    assert ends.error == f"no leader for {B0}"
    assert brokers.questions[1:] == [[A0, A1], [B0], [C0]]


def test_when_no_topic_answers_the_failure_is_raised():
    with pytest.raises(LogOffsetsError, match="no leader"):
        log_ends_of_each_topic(Brokers("a", "b").latest, [A0, B0])


def test_unreachable_brokers_are_given_up_on_after_two_topics_not_one_timeout_per_topic():
    brokers = Brokers("a", "b", "c", "d")
    with pytest.raises(LogOffsetsError):
        log_ends_of_each_topic(brokers.latest, [A0, B0, C0, TopicPartition("d", 0)])
    assert brokers.questions == [[A0, B0, C0, TopicPartition("d", 0)], [A0], [B0]]


def test_a_topic_failing_after_another_answered_does_not_stop_the_others():
    brokers = Brokers("b", "c")
    ends = log_ends_of_each_topic(brokers.latest, [A0, B0, C0, TopicPartition("d", 0)])
    assert ends.found == {A0: 100, TopicPartition("d", 0): 100}
    assert ends.unread_topics == ("b", "c")


class LeaderlessLog:
    """The cluster client behind `LogOffsets` when a partition found no leader within the
    request timeout (a broker restarting)."""

    def offsets(self, partitions, time_ms, by_time=False):
        raise KafkaConnectionError(f"no offsets for 1 partitions after 30s: no leader known "
                                   f"for {partitions[0]}")


class Client:
    def __init__(self, log) -> None:
        self.log = log

    def get(self):
        return self.log


def test_a_partition_without_a_leader_is_a_named_log_offsets_error():
    offsets = LogOffsets("k:9092", (0, 9))
    offsets._client = Client(LeaderlessLog())
    with pytest.raises(LogOffsetsError, match="log-end offsets from k:9092: no offsets for 1 "
                                              "partitions after 30s: no leader known"):
        offsets.latest([TopicPartition("orders", 3)])


def test_partitions_that_ran_out_of_time_are_not_asked_again_topic_by_topic():
    """A question that waited the whole timeout for a leader of B0 brings the others' log ends
    with it: B's topic is left unread at once, not after a second timeout."""
    questions = []

    def latest(partitions):
        questions.append(list(partitions))
        raise LogOffsetsError("no offsets for 1 partitions after 30s: no leader known for b-0",
                              found={A0: 100, A1: 101, TopicPartition("b", 1): 7, C0: None},
                              missing=(B0,))

    ends = log_ends_of_each_topic(latest, [A0, A1, B0, TopicPartition("b", 1), C0])
    assert ends == LogEnds({A0: 100, A1: 101}, ("b",),
                           "no offsets for 1 partitions after 30s: no leader known for b-0")
    assert questions == [[A0, A1, B0, TopicPartition("b", 1), C0]]

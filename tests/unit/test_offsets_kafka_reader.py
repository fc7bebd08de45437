"""The one reader of Kafka-stored offsets, around a fake admin client: kafka-python's answer as
ours, failing groups isolated, and a client dropped after a transient failure so that the next
read finds coordinators anew. Against the real broker: tests/integration (offset stores, the
exporter)."""

from __future__ import annotations

import pytest
from kafka import OffsetAndMetadata
from kafka import TopicPartition as KafkaTopicPartition
from kafka.errors import (
    GroupAuthorizationFailedError,
    KafkaConnectionError,
    NotCoordinatorError,
)

from zkconsumer.fetch import FetchError, KafkaAccess
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import (
    GroupOffsetsReader,
    KafkaReadError,
    OffsetStoreError,
    RetryPolicy,
    read_committed,
)

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
COMMITTED = {T0: 7, T1: -1}  # -1: Kafka's "none committed", as 0.9 answers for T1
REFUSED = {"denied": GroupAuthorizationFailedError("denied")}


class FakeAdmin:
    """Answers as kafka-python's admin client does: everything or, at the first group that
    fails, nothing; `failures` are raised for the groups named."""

    def __init__(self, failures: dict[str, Exception]) -> None:
        self.failures = failures
        self.asked: list[list[str]] = []
        self.closed = False

    def list_group_offsets(self, specs):
        self.asked.append(sorted(specs))
        for group in specs:
            if group in self.failures:
                raise self.failures[group]
        return {group: {KafkaTopicPartition(topic, partition):
                        OffsetAndMetadata(COMMITTED.get(TopicPartition(topic, partition), 3),
                                          "", -1)
                        for topic, partition in partitions}
                for group, partitions in specs.items()}

    def close(self) -> None:
        self.closed = True


class Opener:
    """Opens a new fake admin client each time the reader asks for one; with `once`, only
    the first fails (as a client that remembers a coordinator that moved does)."""

    def __init__(self, failures: dict[str, Exception] | None = None, once: bool = False,
                 refuse: Exception | None = None) -> None:
        self.failures = failures or {}
        self.once = once
        self.refuse = refuse
        self.opened: list[FakeAdmin] = []

    def __call__(self, settings) -> FakeAdmin:
        assert settings["bootstrap_servers"] == "fake:9092"
        if self.refuse is not None:
            raise self.refuse
        self.opened.append(FakeAdmin({} if self.once and self.opened else self.failures))
        return self.opened[-1]


def _reader(opener: Opener) -> GroupOffsetsReader:
    return GroupOffsetsReader(KafkaAccess("fake:9092", (0, 9)), {}, connect=opener)


def test_a_group_kafka_refuses_is_left_out_and_the_others_are_read():
    opener = Opener(REFUSED)
    answer = _reader(opener).read({"ok": [T0, T1, T2], "denied": [T0], "none": []})
    assert answer.found == {"ok": {T0: 7, T2: 3}}, "-1 is no offset; a group asked for none"
    assert answer.failed == {"denied": "[Error 30] GroupAuthorizationFailedError: denied"}
    [admin] = opener.opened
    assert admin.asked == [["denied", "ok"], ["ok"], ["denied"]]
    assert not admin.closed, "a refusal is no reason to forget the coordinators"


def test_one_group_is_asked_once_and_a_batch_that_works_once():
    opener = Opener(REFUSED)
    reader = _reader(opener)
    assert reader.read({"denied": [T0]}).failed.keys() == {"denied"}
    assert reader.read({"a": [T0], "b": [T2]}).found == {"a": {T0: 7}, "b": {T2: 3}}
    assert opener.opened[0].asked == [["denied"], ["a", "b"]]


def test_a_coordinator_that_moved_costs_one_read_and_the_client():
    """kafka-python's admin client never forgets a coordinator: a new client finds it anew."""
    opener = Opener({"moved": NotCoordinatorError()}, once=True)
    reader = _reader(opener)
    first = reader.read({"moved": [T0], "stays": [T0]})
    assert first.found == {"stays": {T0: 7}} and list(first.failed) == ["moved"]
    assert opener.opened[0].closed
    assert reader.read({"moved": [T0], "stays": [T0]}).found == {"moved": {T0: 7},
                                                                "stays": {T0: 7}}
    assert len(opener.opened) == 2


def test_kafka_out_of_reach_is_one_error_for_every_group_and_a_new_try_at_the_next_read():
    opener = Opener(refuse=KafkaConnectionError("no bootstrap broker accepts connections"))
    reader = _reader(opener)
    with pytest.raises(KafkaReadError) as caught:
        reader.read({"a": [T0], "b": [T0]})
    assert str(caught.value) == ("cannot reach Kafka at fake:9092: KafkaConnectionError: no "
                                 "bootstrap broker accepts connections")
    opener.refuse = None
    assert reader.read({"a": [T0]}).found == {"a": {T0: 7}}


def test_one_groups_read_raises_for_its_caller_to_retry_and_drops_a_client_gone_stale():
    opener = Opener({"g": KafkaConnectionError("lost")}, once=True)
    reader = _reader(opener)
    with pytest.raises(KafkaConnectionError):
        reader.read_group("g", [T0])
    assert reader.read_group("g", [T0, T1]) == {T0: 7}
    assert [admin.closed for admin in opener.opened] == [True, False]
    assert reader.read_group("g", []) == {}


def test_a_refusal_no_retry_changes_is_raised_and_keeps_the_client():
    opener = Opener(REFUSED)
    reader = _reader(opener)
    with pytest.raises(GroupAuthorizationFailedError):
        reader.read_group("denied", [T0])
    assert len(opener.opened) == 1 and not opener.opened[0].closed
    reader.close()
    assert opener.opened[0].closed


def test_a_refused_login_found_at_first_contact_is_raised_as_it_is():
    reader = _reader(Opener(refuse=FetchError("SASL login refused by fake:9092")))
    with pytest.raises(FetchError, match="SASL login refused"):
        reader.read_group("g", [T0])
    with pytest.raises(KafkaReadError, match="^SASL login refused by fake:9092$"):
        reader.read({"g": [T0]})


def test_a_read_after_close_opens_nothing():
    """A scan that outlives its service's stop must not leave a client nobody closes."""
    opener = Opener()
    reader = _reader(opener)
    assert reader.read({"ok": [T0]}).found == {"ok": {T0: 7}}
    reader.close()
    with pytest.raises(KafkaReadError, match="closed"):
        reader.read({"ok": [T0]})
    with pytest.raises(KafkaReadError, match="closed"):
        reader.read_group("ok", [T0])
    assert len(opener.opened) == 1 and opener.opened[0].closed


def test_a_transient_failure_is_retried_by_policy_and_the_answer_read_from_a_new_client():
    opener = Opener({"g": NotCoordinatorError("moved")}, once=True)
    pauses: list[float] = []
    found = read_committed(_reader(opener), "g", [T0, T1], RetryPolicy(2, 100),
                           what="reading g", sleep=pauses.append)
    assert found == {T0: 7}
    assert pauses == [0.1] and len(opener.opened) == 2 and opener.opened[0].closed


def test_a_failure_that_outlasts_the_retries_is_one_offset_store_error():
    opener = Opener({"g": NotCoordinatorError("moved")})
    with pytest.raises(OffsetStoreError, match="reading g failed after 3 attempts"):
        read_committed(_reader(opener), "g", [T0], RetryPolicy(2, 100), what="reading g",
                       sleep=lambda _s: None)


def test_a_group_described_by_a_broker_no_longer_its_coordinator_is_found_at_the_next_read():
    """0.9 answers DescribeGroups from a broker that stayed up after the group's coordinator
    moved away with an error in the group's entry, which kafka-python does not raise: the
    reader forgets the coordinators it knows, so the next read asks the new one."""
    from zkconsumer.offsets.coordinator_groups import CoordinatorGroup, read_coordinator_group

    moved = CoordinatorGroup("g", error="DescribeGroups error 16", coordinator_moved=True)
    found = CoordinatorGroup("g", state="Stable")
    answers = iter([moved, found])

    class DescribingAdmin(FakeAdmin):
        def describe_groups(self, names):
            return {name: next(answers) for name in names}

    opened: list[DescribingAdmin] = []

    def open_admin(_settings):
        opened.append(DescribingAdmin({}))
        return opened[-1]

    reader = GroupOffsetsReader(KafkaAccess("fake:9092", (0, 9)), {}, connect=open_admin)
    assert read_coordinator_group(reader, "g") == moved
    assert opened[0].closed
    assert read_coordinator_group(reader, "g") == found
    assert len(opened) == 2 and not opened[1].closed

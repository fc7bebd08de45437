"""The one reader of Kafka-stored offsets, around a fake cluster client (`GroupsWire`): failing
groups isolated, a group whose coordinator moved asked again at once, Kafka out of reach one
error, and the kafka-python admin client `ask` uses dropped after a transient failure so that
the next question finds coordinators anew. Against the real broker: tests/integration (offset
stores, the exporter); the requests' bytes: tests/unit/test_cluster_codec.py."""

from __future__ import annotations

import pytest

from zkconsumer.fetch import FetchError, KafkaAccess
from zkconsumer.kafka.errors import BrokerError, KafkaConnectionError
from zkconsumer.kafka.protocol.versions import NoCommonVersion
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import (
    GroupOffsetsReader,
    KafkaReadError,
    OffsetStoreError,
    RetryPolicy,
    read_committed,
)
from zkconsumer.offsets.kafka_reader import with_retries

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
COMMITTED = {T0: 7}  # T1 has none; every other partition asked has 3


def refused(group: str) -> BrokerError:
    return BrokerError(f"reading the offsets of group {group}: Kafka error 30 "
                       "GROUP_AUTHORIZATION_FAILED", 30, retriable=False)


def moved(group: str) -> BrokerError:
    return BrokerError(f"reading the offsets of group {group}: Kafka error 16 "
                       "NOT_COORDINATOR", 16, retriable=True)


class FakeWire:
    """Answers as `WireGroups` does, per group; `failures` are each group's errors, one used
    up per read of it (an exhausted list: the group is read). `refuse`: Kafka cannot be asked
    at all. `names_only`: a 0.9 broker, which cannot be asked for every partition."""

    def __init__(self, failures: dict[str, list[Exception]] | None = None,
                 refuse: Exception | None = None, names_only: bool = False) -> None:
        self.failures = failures or {}
        self.refuse = refuse
        self.names_only = names_only
        self.asked: list[list[str]] = []
        self.closed = False

    def fetch(self, specs):
        if self.refuse is not None:
            raise self.refuse
        if self.names_only and None in specs.values():
            raise NoCommonVersion("broker fake:9092 speaks OffsetFetch v1")
        self.asked.append(sorted(specs))
        found, errors = {}, {}
        for group, partitions in specs.items():
            if self.failures.get(group):
                errors[group] = self.failures[group].pop(0)
                continue
            found[group] = {tp: COMMITTED.get(tp, 3) for tp in partitions or [T2]
                            if tp != T1}
        return found, errors

    def commit(self, group, offsets):
        raise AssertionError("not asked here")

    def list_groups(self):
        if self.refuse is not None:
            raise self.refuse
        return []

    def close(self):
        self.closed = True


class Opener:
    """Opens the fake wire, counting."""

    def __init__(self, wire: FakeWire) -> None:
        self.wire = wire
        self.opened = 0

    def __call__(self) -> FakeWire:
        self.opened += 1
        return self.wire


def _reader(wire: FakeWire) -> tuple[GroupOffsetsReader, Opener]:
    opener = Opener(wire)
    return GroupOffsetsReader(KafkaAccess("fake:9092", (0, 9)), {}, wire=opener), opener


def test_a_group_kafka_refuses_is_left_out_and_the_others_are_read():
    wire = FakeWire({"denied": [refused("denied")]})
    reader, _ = _reader(wire)
    answer = reader.read({"ok": [T0, T1, T2], "denied": [T0], "none": []})
    assert answer.found == {"ok": {T0: 7, T2: 3}}, "no offset for T1; a group asked for none"
    assert answer.failed == {"denied": "BrokerError: reading the offsets of group denied: "
                                       "Kafka error 30 GROUP_AUTHORIZATION_FAILED"}
    assert wire.asked == [["denied", "ok"]], "a refusal is not asked again"


def test_a_group_whose_coordinator_moved_is_asked_again_in_the_same_read():
    wire = FakeWire({"moved": [moved("moved")]})
    reader, _ = _reader(wire)
    first = reader.read({"moved": [T0], "stays": [T0]})
    assert first.found == {"moved": {T0: 7}, "stays": {T0: 7}} and first.failed == {}
    assert wire.asked == [["moved", "stays"], ["moved"]]


def test_only_a_coordinator_to_find_anew_is_asked_again_in_the_same_read():
    """A coordinator still loading its offsets is asked again at the next read, not at once;
    one whose connection failed is forgotten, and found anew within the read."""
    loading = BrokerError("reading the offsets of group loading: Kafka error 14 "
                          "COORDINATOR_LOAD_IN_PROGRESS", 14, retriable=True)
    wire = FakeWire({"loading": [loading], "lost": [KafkaConnectionError("reset")]})
    reader, _ = _reader(wire)
    answer = reader.read({"loading": [T0], "lost": [T0]})
    assert answer.found == {"lost": {T0: 7}} and list(answer.failed) == ["loading"]
    assert wire.asked == [["loading", "lost"], ["lost"]]


def test_a_coordinator_moving_twice_in_one_read_fails_that_group_only():
    wire = FakeWire({"moved": [moved("moved"), moved("moved")]})
    reader, _ = _reader(wire)
    answer = reader.read({"moved": [T0], "stays": [T0]})
    assert answer.found == {"stays": {T0: 7}} and list(answer.failed) == ["moved"]
    assert reader.read({"moved": [T0]}).found == {"moved": {T0: 7}}, "the next read finds it"


def test_kafka_out_of_reach_is_one_error_for_every_group_and_a_new_try_at_the_next_read():
    wire = FakeWire(refuse=KafkaConnectionError("no bootstrap broker accepts connections"))
    reader, _ = _reader(wire)
    with pytest.raises(KafkaReadError) as caught:
        reader.read({"a": [T0], "b": [T0]})
    assert str(caught.value) == ("cannot reach Kafka at fake:9092: KafkaConnectionError: no "
                                 "bootstrap broker accepts connections")
    wire.refuse = None
    assert reader.read({"a": [T0]}).found == {"a": {T0: 7}}


def test_kafka_out_of_reach_is_said_one_way_by_every_question():
    """`KafkaConnectionError.line`, which the log-offsets client says too: each broker's
    failure when none could be connected to; a broker that answered in a form no Kafka does
    is named as such, never as out of reach; a connection lost under a question is the
    caller's to retry."""
    failures = ["cannot connect to a:1: refused", "cannot connect to b:1: refused"]
    nobody = KafkaConnectionError("no bootstrap broker accepts connections", failures=failures)
    assert nobody.line("a:1,b:1") == ("cannot reach Kafka at a:1,b:1: cannot connect to a:1: "
                                      "refused; cannot connect to b:1: refused")
    garbled = KafkaConnectionError("no broker at a:1 answered as Kafka does: x", reached=True,
                                   failures=["x"])
    assert garbled.line("a:1") == "no broker at a:1 answered as Kafka does: x"
    wire = FakeWire(refuse=nobody)
    reader, _ = _reader(wire)
    for question in (reader.list_groups, lambda: reader.read({"g": [T0]})):
        with pytest.raises(KafkaReadError) as caught:
            question()
        assert str(caught.value) == nobody.line("fake:9092")
    wire.refuse = KafkaConnectionError("reset")
    with pytest.raises(KafkaConnectionError, match="^reset$"):
        reader.list_groups()


def test_one_groups_read_raises_for_its_caller_to_retry():
    wire = FakeWire({"g": [KafkaConnectionError("lost")]})
    reader, opener = _reader(wire)
    with pytest.raises(KafkaConnectionError):
        reader.read_group("g", [T0])
    assert reader.read_group("g", [T0, T1]) == {T0: 7}
    assert reader.read_group("g", []) == {}
    assert opener.opened == 1, "connections are kept between reads"


def test_a_refusal_no_retry_changes_is_raised():
    reader, _ = _reader(FakeWire({"denied": [refused("denied")]}))
    with pytest.raises(BrokerError, match="GROUP_AUTHORIZATION_FAILED"):
        reader.read_group("denied", [T0])


def test_a_refused_login_is_raised_as_it_is():
    reader, _ = _reader(FakeWire(refuse=FetchError("SASL login refused by fake:9092")))
    with pytest.raises(FetchError, match="SASL login refused"):
        reader.read_group("g", [T0])
    with pytest.raises(KafkaReadError, match="^SASL login refused by fake:9092$"):
        reader.read({"g": [T0]})
    with pytest.raises(OffsetStoreError, match="^reading g failed: SASL login refused"):
        read_committed(reader, "g", [T0], RetryPolicy(3, 100), what="reading g",
                       sleep=lambda _s: None)


def test_a_read_after_close_opens_nothing():
    """A scan that outlives its service's stop must not leave a client nobody closes."""
    wire = FakeWire()
    reader, opener = _reader(wire)
    assert reader.read({"ok": [T0]}).found == {"ok": {T0: 7}}
    reader.close()
    with pytest.raises(KafkaReadError, match="closed"):
        reader.read({"ok": [T0]})
    with pytest.raises(KafkaReadError, match="closed"):
        reader.read_group("ok", [T0])
    assert opener.opened == 1 and wire.closed


def test_every_offset_is_asked_by_naming_partitions_of_a_broker_that_needs_them():
    wire = FakeWire(names_only=True)
    reader, _ = _reader(wire)
    assert reader.read_every(["a"], [T0, T1]).found == {"a": {T0: 7}}
    assert reader.read_every(["b"], [T0]).found == {"b": {T0: 7}}
    assert wire.asked == [["a"], ["b"]], "the broker's answer is remembered"


def test_a_transient_failure_is_retried_by_policy():
    wire = FakeWire({"g": [moved("g")]})
    pauses: list[float] = []
    found = read_committed(_reader(wire)[0], "g", [T0, T1], RetryPolicy(2, 100),
                           what="reading g", sleep=pauses.append)
    assert found == {T0: 7}
    assert pauses == [0.1]


def test_a_failure_that_outlasts_the_retries_is_one_offset_store_error():
    wire = FakeWire({"g": [moved("g")] * 3})
    with pytest.raises(OffsetStoreError, match="reading g failed after 3 attempts: "
                                               "BrokerError: .*NOT_COORDINATOR"):
        read_committed(_reader(wire)[0], "g", [T0], RetryPolicy(2, 100), what="reading g",
                       sleep=lambda _s: None)


def test_groups_whose_failure_is_retriable_are_read_again_after_each_pause():
    """`with_retries`: a coordinator still loading (the offsets topic of a new cluster) is
    asked again after the policy's pause; a refusal is not; what outlasts the pauses stays
    failed."""
    loading = BrokerError("reading the offsets of group loading: Kafka error 14 "
                          "COORDINATOR_LOAD_IN_PROGRESS", 14, retriable=True)
    wire = FakeWire({"loading": [loading, loading], "denied": [refused("denied")],
                     "stuck": [loading] * 5})
    reader, _ = _reader(wire)
    pauses: list[float] = []
    answer = with_retries(lambda groups: reader.read(dict.fromkeys(groups, [T0])),
                          ["loading", "denied", "stuck", "ok"],
                          RetryPolicy(retries=3, backoff_ms=100), sleep=pauses.append)
    assert answer.found == {"loading": {T0: 7}, "ok": {T0: 7}}
    assert sorted(answer.failed) == ["denied", "stuck"] and answer.retriable == {"stuck"}
    assert pauses == [0.1, 0.2, 0.4]
    assert wire.asked == [["denied", "loading", "ok", "stuck"], ["loading", "stuck"],
                          ["loading", "stuck"], ["stuck"]]


def test_one_group_described_with_an_error_of_its_own_is_the_cluster_clients_error():
    """A coordinator still loading answers DescribeGroups with an error in the group's entry:
    raised for the caller's retries, never a group shown as unknown for want of an answer."""
    from types import SimpleNamespace

    from zkconsumer.offsets.coordinator_groups import read_coordinator_group

    class Describer:
        def __init__(self, codes):
            self.codes = list(codes)

        def describe_groups(self, names):
            return {name: SimpleNamespace(group_id=name, error_code=self.codes.pop(0),
                                          group_state="Dead", members=[], protocol_type="",
                                          protocol_data="") for name in names}

    with pytest.raises(BrokerError) as raised:
        read_coordinator_group(Describer([15]), "g")
    assert raised.value.retriable and "COORDINATOR_NOT_AVAILABLE" in str(raised.value)
    assert read_coordinator_group(Describer([0]), "g") is None  # Dead: not known

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.errors import ZnodeDataError
from zkconsumer.znodes.topics import NO_LEADER, PartitionState, TopicPartitions

TOPIC = "/brokers/topics/orders"
STATE = "/brokers/topics/orders/partitions/0/state"


def test_v1_partitions_order_as_integers() -> None:
    topic = TopicPartitions.decode(
        TOPIC, b'{"version":1,"partitions":{"1":[1,2],"0":[2,1],"10":[1],"2":[2]}}'
    )
    assert topic == TopicPartitions(version=1, partitions={0: (2, 1), 1: (1, 2), 2: (2,), 10: (1,)})
    assert topic.partition_numbers() == [0, 1, 2, 10]
    assert (topic.topic_id, topic.adding_replicas, topic.removing_replicas) == (None, {}, {})


def test_v1_encodes_in_the_compact_form_kafka_writes() -> None:
    topic = TopicPartitions(version=1, partitions={1: (0,), 0: (0,)})
    assert topic.encode() == b'{"version":1,"partitions":{"0":[0],"1":[0]}}'
    many = TopicPartitions(version=1, partitions={p: (0, 1) for p in (10, 2, 0, 1)})
    assert many.encode() == (
        b'{"version":1,"partitions":{"0":[0,1],"1":[0,1],"2":[0,1],"10":[0,1]}}'
    )


def test_v2_carries_reassignment_progress() -> None:
    data = (
        b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{"0":[2]},"removing_replicas":{}}'
    )
    topic = TopicPartitions.decode(TOPIC, data)
    assert topic.adding_replicas == {0: (2,)}
    assert topic.removing_replicas == {}
    assert topic.encode() == data


def test_v3_adds_the_topic_id() -> None:
    topic = TopicPartitions.decode(
        TOPIC,
        b'{"removing_replicas":{"0":[3]},"partitions":{"0":[1,2,3],"1":[2,3,1]},'
        b'"topic_id":"u4D0W8XlRJ2Q6wTpKxC0Aw","adding_replicas":{"0":[2]},"version":3}',
    )
    assert topic == TopicPartitions(
        version=3,
        partitions={0: (1, 2, 3), 1: (2, 3, 1)},
        topic_id="u4D0W8XlRJ2Q6wTpKxC0Aw",
        adding_replicas={0: (2,)},
        removing_replicas={0: (3,)},
    )
    assert topic.partition_numbers() == [0, 1]
    assert TopicPartitions.decode(TOPIC, topic.encode()) == topic


def test_a_topic_with_no_partitions_yet() -> None:
    assert TopicPartitions.decode(TOPIC, b'{"version":1,"partitions":{}}').partition_numbers() == []


MALFORMED_TOPICS = [
    (b"", "no data"),
    (b"{", "not valid JSON"),
    (b"[]", "expected a JSON object"),
    (b'{"partitions":{"0":[1]}}', "'version' is missing"),
    (b'{"version":0,"partitions":{"0":[1]}}', "'version' must be between"),
    (b'{"version":1}', "'partitions' is missing"),
    (b'{"version":1,"partitions":[[1]]}', "'partitions' must be an object"),
    (b'{"version":1,"partitions":{"a":[1]}}', "'a' is not a partition number"),
    (b'{"version":1,"partitions":{"-1":[1]}}', "'-1' is not a partition number"),
    (b'{"version":1,"partitions":{"01":[1]}}', "'01' is not a partition number"),
    (b'{"version":1,"partitions":{"0":1}}', "'partitions.0' must be an array"),
    (b'{"version":1,"partitions":{"0":["1"]}}', "'partitions.0' must be an integer"),
    (b'{"version":1,"partitions":{"0":[1.5]}}', "'partitions.0' must be an integer"),
    (b'{"version":1,"partitions":{"0":[-1]}}', "'partitions.0' must be between"),
    (b'{"version":2,"partitions":{},"adding_replicas":[]}', "'adding_replicas' must be an object"),
    (
        b'{"version":2,"partitions":{},"removing_replicas":{"0":[null]}}',
        "'removing_replicas.0' must be an integer",
    ),
    (b'{"version":3,"partitions":{},"topic_id":5}', "'topic_id' must be a string"),
]


@pytest.mark.parametrize(("data", "reason"), MALFORMED_TOPICS)
def test_malformed_topics_raise_with_the_path(data: bytes, reason: str) -> None:
    with pytest.raises(ZnodeDataError) as error:
        TopicPartitions.decode(TOPIC, data)
    assert str(error.value).startswith(f"malformed data in znode {TOPIC}: ")
    assert reason in error.value.reason


KAFKA_STATE = b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0]}'


def test_partition_state_encodes_as_the_controller_writes_it() -> None:
    state = PartitionState.decode(STATE, KAFKA_STATE)
    assert state == PartitionState(
        version=1, leader=0, leader_epoch=0, isr=(0,), controller_epoch=1
    )
    assert state.encode() == KAFKA_STATE


def test_partition_state_without_leader_and_newer_fields() -> None:
    state = PartitionState.decode(
        STATE,
        b'{"controller_epoch":3,"leader":-1,"version":1,"leader_epoch":5,"isr":[2],'
        b'"leader_recovery_state":1,"partition_epoch":9}',
    )
    assert state.leader == NO_LEADER
    assert (state.leader_epoch, state.isr, state.controller_epoch) == (5, (2,), 3)


MALFORMED_STATES = [
    (b"", "no data"),
    (b"0", "expected a JSON object, got number"),
    (b'{"controller_epoch":1,"version":1,"leader_epoch":0,"isr":[0]}', "'leader' is missing"),
    (
        b'{"controller_epoch":1,"leader":-2,"version":1,"leader_epoch":0,"isr":[0]}',
        "'leader' must be between",
    ),
    (
        b'{"controller_epoch":1,"leader":"0","version":1,"leader_epoch":0,"isr":[0]}',
        "'leader' must be an integer",
    ),
    (
        b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":null,"isr":[0]}',
        "'leader_epoch' is missing",
    ),
    (
        b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":"0"}',
        "'isr' must be an array",
    ),
    (
        b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[true]}',
        "'isr' must be an integer",
    ),
    (
        b'{"controller_epoch":"1","leader":0,"version":1,"leader_epoch":0,"isr":[0]}',
        "'controller_epoch' must be an integer",
    ),
    (b'{"controller_epoch":1,"leader":0,"leader_epoch":0,"isr":[0]}', "'version' is missing"),
]


@pytest.mark.parametrize(("data", "reason"), MALFORMED_STATES)
def test_malformed_partition_states_raise_with_the_path(data: bytes, reason: str) -> None:
    with pytest.raises(ZnodeDataError) as error:
        PartitionState.decode(STATE, data)
    assert str(error.value).startswith(f"malformed data in znode {STATE}: ")
    assert reason in error.value.reason


broker_ids = st.integers(min_value=0, max_value=2**31 - 1)
replica_maps = st.dictionaries(
    st.integers(min_value=0, max_value=2**31 - 1),
    st.lists(broker_ids, max_size=5).map(tuple),
    max_size=20,
)


@given(
    st.integers(min_value=1, max_value=3),
    replica_maps,
    st.none() | st.text(),
    replica_maps,
    replica_maps,
)
def test_topics_round_trip(
    version: int,
    partitions: dict[int, tuple[int, ...]],
    topic_id: str | None,
    adding: dict[int, tuple[int, ...]],
    removing: dict[int, tuple[int, ...]],
) -> None:
    topic = TopicPartitions(version, partitions, topic_id, adding, removing)
    decoded = TopicPartitions.decode(TOPIC, topic.encode())
    assert decoded == topic
    assert decoded.partition_numbers() == sorted(partitions)


@given(
    st.integers(min_value=1, max_value=2**31 - 1),
    st.integers(min_value=-1, max_value=2**31 - 1),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.lists(broker_ids, max_size=5).map(tuple),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
)
def test_partition_states_round_trip(
    version: int, leader: int, leader_epoch: int, isr: tuple[int, ...], controller_epoch: int
) -> None:
    state = PartitionState(version, leader, leader_epoch, isr, controller_epoch)
    assert PartitionState.decode(STATE, state.encode()) == state

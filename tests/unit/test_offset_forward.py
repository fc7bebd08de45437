"""Carrying offsets from one storage to another: only what is ahead is written, nothing moves
back, and a storage that fails writes nothing it was not asked to."""

from __future__ import annotations

import pytest
from support.memory_store import MemoryStore

from zkconsumer.model import TopicPartition
from zkconsumer.offsets import OffsetStoreError
from zkconsumer.offsets.forward import ahead_of, carry_forward

A, B, C, D = (TopicPartition("t", p) for p in range(4))


def test_ahead_of_keeps_what_is_further_or_missing_and_never_what_is_behind_or_equal():
    assert ahead_of({A: 10, B: 5, C: 7, D: 0}, {A: 4, B: 9, C: 7}) == {A: 10, D: 0}


def test_carry_forward_writes_only_the_partitions_asked_for_whose_source_is_ahead():
    kafka = MemoryStore("kafka", offsets={A: 10, B: 5, C: 7, D: 3})
    zookeeper = MemoryStore("zookeeper", offsets={A: 4, B: 9})
    assert carry_forward(kafka, zookeeper, [A, B, C, C]) == {A: 10, C: 7}
    assert zookeeper.commits == [{A: 10, C: 7}]
    assert zookeeper.offsets == {A: 10, B: 9, C: 7}, "B stays ahead, D was not asked for"


def test_nothing_ahead_or_nothing_asked_writes_nothing():
    kafka = MemoryStore("kafka", offsets={A: 3})
    zookeeper = MemoryStore("zookeeper", offsets={A: 3})
    assert carry_forward(kafka, zookeeper, [A]) == {}
    assert carry_forward(kafka, zookeeper, []) == {}
    assert zookeeper.commits == [] and kafka.journal == []


@pytest.mark.parametrize("failing", ["source", "target"])
def test_a_read_that_fails_raises_and_writes_nothing(failing):
    kafka = MemoryStore("kafka", offsets={A: 10}, fail_fetch=failing == "source")
    zookeeper = MemoryStore("zookeeper", offsets={A: 4}, fail_fetch=failing == "target")
    with pytest.raises(OffsetStoreError):
        carry_forward(kafka, zookeeper, [A])
    assert zookeeper.commits == [] and zookeeper.offsets == {A: 4}

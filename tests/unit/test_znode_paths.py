from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.errors import ZnodeDataError
from zkconsumer.znodes.paths import (
    BROKER_IDS,
    BROKER_TOPICS,
    CONSUMERS,
    GroupPaths,
    broker_path,
    check_name,
    parse_broker_id,
    parse_partition_number,
    partition_state_path,
    topic_config_path,
    topic_path,
)


def test_cluster_paths() -> None:
    assert (BROKER_IDS, BROKER_TOPICS, CONSUMERS) == (
        "/brokers/ids",
        "/brokers/topics",
        "/consumers",
    )
    assert broker_path(0) == "/brokers/ids/0"
    assert broker_path(1001) == "/brokers/ids/1001"
    assert topic_path("orders.v1") == "/brokers/topics/orders.v1"
    assert topic_config_path("orders") == "/config/topics/orders"
    assert partition_state_path("orders", 12) == "/brokers/topics/orders/partitions/12/state"


def test_group_paths() -> None:
    group = GroupPaths("billing")
    assert group.root == "/consumers/billing"
    assert group.ids == "/consumers/billing/ids"
    assert group.owners == "/consumers/billing/owners"
    assert group.offsets == "/consumers/billing/offsets"
    assert group.member("billing_h-1-abcd1234") == "/consumers/billing/ids/billing_h-1-abcd1234"
    assert group.owners_topic("t") == "/consumers/billing/owners/t"
    assert group.owner("t", 3) == "/consumers/billing/owners/t/3"
    assert group.offsets_topic("t") == "/consumers/billing/offsets/t"
    assert group.offset("t", 10) == "/consumers/billing/offsets/t/10"


def test_group_paths_is_a_frozen_value() -> None:
    assert GroupPaths("g") == GroupPaths("g")
    with pytest.raises(AttributeError):
        GroupPaths("g").group = "h"  # type: ignore[misc]


BAD_NAMES = [
    "",
    "a/b",
    "/",
    ".",
    "..",
    "nul\x00",
    "tab\t",
    "del\x7f",
    "\ud800",
    "\ufff0",
    "\U0001f600",
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_names_that_would_break_a_path_are_refused(name: str) -> None:
    with pytest.raises(ValueError):
        check_name("topic", name)
    with pytest.raises(ValueError):
        topic_path(name)
    with pytest.raises(ValueError):
        GroupPaths(name)
    with pytest.raises(ValueError):
        GroupPaths("g").member(name)
    with pytest.raises(ValueError):
        GroupPaths("g").offset(name, 0)


def test_names_with_dots_dashes_and_unicode_are_fine() -> None:
    for name in ["...", "a.b", "_-.", "grüppe", "x" * 300]:
        assert check_name("group", name) == name


@pytest.mark.parametrize("number", [-1, 2**31, True, 1.0, "1"])
def test_bad_partition_and_broker_numbers_are_refused(number: object) -> None:
    with pytest.raises(ValueError):
        broker_path(number)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        GroupPaths("g").owner("t", number)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        partition_state_path("t", number)  # type: ignore[arg-type]


def test_child_names_parse_as_integers() -> None:
    assert parse_broker_id("1001", "/brokers/ids/1001") == 1001
    assert parse_partition_number("0", "/p") == 0
    assert parse_partition_number("2147483647", "/p") == 2**31 - 1


@pytest.mark.parametrize(
    "name", ["", "abc", "-1", "01", "+1", " 1", "1 ", "1.0", "1e3", "2147483648", "\u0661"]
)
def test_bad_child_names_raise_with_the_path(name: str) -> None:
    with pytest.raises(ZnodeDataError, match="/brokers/ids/x") as broker:
        parse_broker_id(name, "/brokers/ids/x")
    assert "broker id" in str(broker.value)
    with pytest.raises(ZnodeDataError, match="/consumers/g/offsets/t") as partition:
        parse_partition_number(name, "/consumers/g/offsets/t")
    assert "partition number" in str(partition.value)


@given(st.integers(min_value=0, max_value=2**31 - 1))
def test_partition_numbers_round_trip_through_paths(partition: int) -> None:
    path = GroupPaths("g").offset("t", partition)
    assert parse_partition_number(path.rsplit("/", 1)[1], path) == partition

"""Assignment as pure functions: ids, topic filters, and the range and roundrobin strategies."""

from zkconsumer.assignment.assignors import (
    MemberSubscription,
    assign,
    partitions_owned_by,
    range_assign,
    resolve_member_subscription,
    roundrobin_assign,
)
from zkconsumer.assignment.identity import (
    consumer_of_thread,
    java_string_sort_key,
    make_consumer_id,
    thread_id,
    thread_ids,
)
from zkconsumer.assignment.java_hash import java_string_hash
from zkconsumer.assignment.topic_filter import (
    INTERNAL_TOPICS,
    Blacklist,
    TopicFilter,
    Whitelist,
    normalize_filter_regex,
    topic_filter_for,
    wildcard_filter,
)

__all__ = [
    "INTERNAL_TOPICS",
    "Blacklist",
    "MemberSubscription",
    "TopicFilter",
    "Whitelist",
    "assign",
    "consumer_of_thread",
    "java_string_hash",
    "java_string_sort_key",
    "make_consumer_id",
    "normalize_filter_regex",
    "partitions_owned_by",
    "range_assign",
    "resolve_member_subscription",
    "roundrobin_assign",
    "thread_id",
    "thread_ids",
    "topic_filter_for",
    "wildcard_filter",
]

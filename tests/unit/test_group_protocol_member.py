"""A member of a Kafka-coordinated group, driven step by step on an injected clock: no sockets,
the coordinator's answers made by kafka-python's encoders of Kafka's message specs."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse

from zkconsumer.errors import ConfigError
from zkconsumer.kafka.errors import (
    GroupAuthorizationError,
    GroupConfigError,
    GroupError,
    GroupMetadataError,
    InconsistentGroupProtocolError,
    ProtocolRefusedError,
    UnexpectedGroupEvent,
)
from zkconsumer.kafka.protocol import codec as protocol
from zkconsumer.kafka.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from zkconsumer.kafka.protocol.group_codec import (
    LEGACY_GROUP_VERSIONS,
    DescribedGroup,
    GroupVersions,
)
from zkconsumer.kafka.protocol.group_member import (
    LEASE_MARGIN_SHARE,
    Assigned,
    CommitFailed,
    Committed,
    Coordinator,
    Generation,
    GroupMember,
    OffsetsFetched,
    Request,
    Revoked,
    State,
)
from zkconsumer.model import TopicPartition as TP
from zkconsumer.znodes.fence import fence_marker, marked_consumer_id

A, B, C = TP("t", 0), TP("t", 1), TP("t", 2)
NEWEST = GroupVersions(3, 7, 5, 4, 4, 8, 7)
SESSION_S, HEARTBEAT_S, BACKOFF_S = 10.0, 3.0, 0.1
FIND, JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT, FETCH = (
    protocol.FIND_COORDINATOR, protocol.JOIN_GROUP, protocol.SYNC_GROUP, protocol.HEARTBEAT,
    protocol.LEAVE_GROUP, protocol.OFFSET_COMMIT, protocol.OFFSET_FETCH)


def new_member(strategies=("range", "roundrobin")) -> GroupMember:
    return GroupMember("g", ["t"], strategies, session_timeout_ms=10000,
                       rebalance_timeout_ms=60000, heartbeat_interval_ms=3000,
                       request_timeout_ms=30000, retry_backoff_ms=100, retry_backoff_max_ms=1000)


def sent(member: GroupMember, api_key: int, now: float,
         versions: GroupVersions = LEGACY_GROUP_VERSIONS) -> Request:
    request = member.next_request(versions, now)
    assert request is not None and request.api_key == api_key, request
    return request


def answer(member: GroupMember, request: Request, response, now: float) -> None:
    response.with_header(correlation_id=1)
    member.receive(request, bytes(response.encode(header=True)), now)


def coordinator_found(member, request, now, node=1, error=0):
    answer(member, request, FindCoordinatorResponse[request.version](
        throttle_time_ms=0, error_code=error, error_message=None, node_id=node,
        host=f"broker{node}", port=9092), now)


def joined(member, request, now, error=0, member_id="m-1", leader="m-0", generation=1,
           members=(), protocol_name="range"):
    answer(member, request, JoinGroupResponse[request.version](
        throttle_time_ms=0, error_code=error, generation_id=generation,
        protocol_type="consumer", protocol_name=protocol_name, leader=leader,
        member_id=member_id, members=[
            JoinGroupResponse.JoinGroupResponseMember(member_id=m, group_instance_id=None,
                                                      metadata=metadata)
            for m, metadata in members]), now)


def synced(member, request, now, partitions=(A, B), error=0, raw=None):
    assignment = raw if raw is not None else encode_assignment(Assignment(0, tuple(partitions)))
    answer(member, request, SyncGroupResponse[request.version](
        throttle_time_ms=0, error_code=error, protocol_type="consumer", protocol_name="range",
        assignment=assignment), now)


def beat(member, request, now, error=0):
    answer(member, request, HeartbeatResponse[request.version](throttle_time_ms=0,
                                                               error_code=error), now)


def commit_answered(member, request, now, error=0):
    topic = OffsetCommitResponse.OffsetCommitResponseTopic
    answer(member, request, OffsetCommitResponse[request.version](throttle_time_ms=0, topics=[
        topic(name=tp.topic, partitions=[topic.OffsetCommitResponsePartition(
            partition_index=tp.partition, error_code=error)]) for tp in request.offsets]), now)


def in_group(now: float = 0.0, versions=LEGACY_GROUP_VERSIONS) -> GroupMember:
    """A member that found its coordinator and sent its JoinGroup (at `now`)."""
    member = new_member()
    member.start(now)
    coordinator_found(member, sent(member, FIND, now, versions), now)
    return member


def stable(now: float = 0.0, partitions=(A, B), versions=LEGACY_GROUP_VERSIONS) -> GroupMember:
    """A follower in generation 1 as m-1, owning `partitions`, synced at `now`."""
    member = in_group(now, versions)
    joined(member, sent(member, JOIN, now, versions), now)
    synced(member, sent(member, SYNC, now, versions), now, partitions)
    member.next_events()
    return member


# -- joining ----------------------------------------------------------------------------------

def test_a_follower_finds_its_coordinator_joins_syncs_and_delivers_its_partitions():
    member = new_member()
    member.start(0.0)
    assert member.coordinator is None
    find = sent(member, FIND, 0.0)
    assert find.coordinator is None  # to any broker
    coordinator_found(member, find, 0.1, node=2)
    assert member.coordinator == Coordinator(2, "broker2", 9092)
    join = sent(member, JOIN, 0.1)
    assert member.next_request(LEGACY_GROUP_VERSIONS, 0.1) is None  # one JoinGroup at a time
    joined(member, join, 0.5)
    assert member.state is State.SYNCING and not member.may_deliver(A, 0.5)
    sync = sent(member, SYNC, 0.5)
    assert SyncGroupRequest.decode(sync.body, version=0).assignments == []  # a follower's
    synced(member, sync, 0.6)
    assert member.state is State.STABLE
    assert member.generation == Generation(1, "m-1")
    assert member.next_events() == [Assigned(Generation(1, "m-1"), frozenset({A, B}))]
    assert member.may_deliver(A, 0.6) and member.may_deliver(B, 0.6)
    assert not member.may_deliver(C, 0.6)


@pytest.mark.parametrize("strategies", [("range", "roundrobin"), ("roundrobin", "range")])
def test_join_group_offers_the_assignors_in_strategy_order_with_the_subscription(strategies):
    member = new_member(strategies)
    member.start(0.0)
    coordinator_found(member, sent(member, FIND, 0.0), 0.0)
    request = JoinGroupRequest.decode(sent(member, JOIN, 0.0).body, version=0)
    assert (request.group_id, request.member_id, request.protocol_type) == ("g", "", "consumer")
    assert request.session_timeout_ms == 10000
    assert [p.name for p in request.protocols] == list(strategies)
    assert {decode_subscription(p.metadata, "me").topics for p in request.protocols} == {("t",)}


def join_subscriptions(member: GroupMember, now: float) -> list[Subscription]:
    """The subscription of each protocol the member's next JoinGroup offers."""
    body = JoinGroupRequest.decode(sent(member, JOIN, now).body, version=0)
    return [decode_subscription(p.metadata, "me") for p in body.protocols]


def test_a_fence_aware_member_marks_every_join_group_with_its_consumer_id():
    """What `group cutover` reads from DescribeGroups to tell a member that honours the fence;
    a member told of no user data sends none, as before."""
    member = GroupMember("g", ["t"], user_data=fence_marker("g_host-1-abc"))
    member.start(0.0)
    coordinator_found(member, sent(member, FIND, 0.0), 0.0)
    join = sent(member, JOIN, 0.0)
    first = [decode_subscription(p.metadata, "me") for p in
             JoinGroupRequest.decode(join.body, version=0).protocols]
    assert [s.user_data for s in first] == [b"zkconsumer-fence-aware:g_host-1-abc"] * 2
    assert {marked_consumer_id(s.user_data) for s in first} == {"g_host-1-abc"}
    joined(member, join, 0.1)
    synced(member, sent(member, SYNC, 0.1), 0.2)
    member.subscribe(["t", "u"], 0.3)  # joins again with the new topics: marked still
    assert [(s.topics, s.user_data) for s in join_subscriptions(member, 0.3)] == \
        [(("t", "u"), b"zkconsumer-fence-aware:g_host-1-abc")] * 2

    unmarked = in_group()
    assert [s.user_data for s in join_subscriptions(unmarked, 0.0)] == [None, None]


def test_the_leader_counts_the_groups_topics_and_sends_every_members_range_share():
    member = in_group()
    others = [("m-1", encode_subscription(Subscription(0, ("t",)))),
              ("m-2", encode_subscription(Subscription(1, ("t", "u"), b"x", (A,))))]
    joined(member, sent(member, JOIN, 0.0), 0.1, member_id="m-1", leader="m-1", members=others)
    assert member.state is State.ASSIGNING
    assert member.next_request(LEGACY_GROUP_VERSIONS, 0.1) is None
    assert member.topics_to_count() == ["t", "u"]
    member.assign({"t": 3, "u": 2}, 0.2)
    sync = SyncGroupRequest.decode(sent(member, SYNC, 0.2).body, version=0)
    shares = {item.member_id: decode_assignment(item.assignment, "group leader 'm-1'").partitions
              for item in sync.assignments}
    assert shares == {"m-1": (A, B), "m-2": (C, TP("u", 0), TP("u", 1))}


def leader_stable(counts: dict[str, int]) -> GroupMember:
    """The leader m-1, alone in generation 1, its assignment computed from `counts`."""
    member = in_group()
    mine = [("m-1", encode_subscription(Subscription(0, ("t",))))]
    joined(member, sent(member, JOIN, 0.0), 0.1, member_id="m-1", leader="m-1", members=mine)
    member.assign(counts, 0.2)
    synced(member, sent(member, SYNC, 0.2), 0.3,
           partitions=[TP("t", p) for p in range(counts.get("t", 0))])
    member.next_events()
    return member


def test_the_leader_joins_again_when_a_topic_it_assigned_gains_partitions():
    member = leader_stable({"t": 2})
    assert member.topics_to_watch() == ["t"] and not member.watched_topic_missing()
    member.partition_counts_seen({"t": 2}, 1.0)
    assert member.state is State.STABLE and member.next_events() == []
    member.partition_counts_seen({"t": 3}, 1.1)
    [revoked] = member.next_events()
    assert revoked.partitions == {A, B} and "t 2 -> 3" in revoked.reason
    assert revoked.parting == Generation(1, "m-1")  # its consumed offsets go first
    assert member.state is State.JOINING and member.topics_to_watch() == []


def test_a_topic_not_created_when_the_leader_assigned_is_watched_until_it_is():
    member = leader_stable({})
    assert member.assignment == frozenset() and member.watched_topic_missing()
    member.partition_counts_seen({"t": 0}, 1.0)
    assert member.state is State.STABLE
    member.partition_counts_seen({"t": 2}, 2.0)
    [revoked] = member.next_events()
    assert "t 0 -> 2" in revoked.reason and member.state is State.JOINING


def test_a_follower_watches_no_partition_counts():
    member = stable()
    assert member.topics_to_watch() == []
    member.partition_counts_seen({"t": 9}, 1.0)
    assert member.state is State.STABLE and member.next_events() == []


def test_member_id_required_has_the_member_join_again_with_the_given_id():
    """JoinGroup v4+: the coordinator hands out the id first, and expects it back."""
    member = in_group(versions=NEWEST)
    joined(member, sent(member, JOIN, 0.0, NEWEST), 0.1, error=79, member_id="m-given")
    request = sent(member, JOIN, 0.1, NEWEST)
    assert request.version == 7
    assert JoinGroupRequest.decode(request.body, version=7).member_id == "m-given"


def test_a_join_waits_for_the_rebalance_timeout_and_more():
    member = in_group()
    assert sent(member, JOIN, 0.0, NEWEST).deadline == 65.0  # rebalance.timeout.ms + 5 s
    member = in_group()
    assert sent(member, JOIN, 0.0).deadline == 30.0  # v0: the session timeout; request's larger


# -- heartbeats and the session ---------------------------------------------------------------

def test_heartbeats_go_every_interval_one_at_a_time():
    member = stable(now=0.0)
    assert member.next_request(LEGACY_GROUP_VERSIONS, 2.9) is None
    assert member.wait_until(2.9) == pytest.approx(HEARTBEAT_S)
    request = sent(member, HEARTBEAT, 3.0)
    assert member.next_request(LEGACY_GROUP_VERSIONS, 6.5) is None  # still awaiting its answer
    assert member.wait_until(6.5) > 6.5, "nothing is due: a driver waiting until now would spin"
    beat(member, request, 6.5)
    assert sent(member, HEARTBEAT, 6.5).sent_at == 6.5  # overdue: at once


def test_a_session_without_an_answered_heartbeat_closes_the_gate_on_the_clock():
    member = stable(now=0.0)
    sent(member, HEARTBEAT, 3.0)  # never answered
    assert member.may_deliver(A, SESSION_S - 0.01)
    assert not member.may_deliver(A, SESSION_S)  # without any other call
    assert member.next_request(LEGACY_GROUP_VERSIONS, SESSION_S) is None  # backing off
    assert member.state is State.FINDING and member.generation is None
    assert member.next_events() == [Revoked(frozenset({A, B}), "no heartbeat answered for "
                                                               "session.timeout.ms (10000 ms)")]
    sent(member, FIND, SESSION_S + BACKOFF_S)


def test_an_answered_heartbeat_extends_the_session_from_when_it_was_sent():
    member = stable(now=0.0)
    beat(member, sent(member, HEARTBEAT, 3.0), 3.5)
    assert member.may_deliver(A, 3.0 + SESSION_S - 0.01)
    assert not member.may_deliver(A, 3.0 + SESSION_S)


def test_the_lease_runs_from_the_last_answered_request_s_sending_less_a_margin():
    """The member's lease: a session after the last JoinGroup, SyncGroup, Heartbeat or
    OffsetCommit the coordinator answered was sent, less a tenth of it; none before the first
    answer. An answer read late (a frozen process) extends it only from when
    its request was sent."""
    assert in_group().lease_deadline == float("-inf")
    member = stable(now=0.0)
    assert member.lease_deadline == pytest.approx(SESSION_S * (1 - LEASE_MARGIN_SHARE))
    beat(member, sent(member, HEARTBEAT, 3.0), 30.0)  # read after a freeze
    assert member.lease_deadline == pytest.approx(3.0 + SESSION_S * (1 - LEASE_MARGIN_SHARE))
    assert member.commit({A: 1}, 4.0) == []
    commit_answered(member, sent(member, COMMIT, 4.0), 4.1)
    assert member.lease_deadline == pytest.approx(4.0 + SESSION_S * (1 - LEASE_MARGIN_SHARE))
    assert member.lease_deadline < 4.0 + SESSION_S, "it lapses before the session may"


def test_a_refused_commit_does_not_renew_the_lease():
    member = stable(now=0.0)
    assert member.commit({A: 1}, 1.0) == []
    commit_answered(member, sent(member, COMMIT, 1.0), 1.1, error=12)  # metadata too large
    assert member.lease_deadline == pytest.approx(SESSION_S * (1 - LEASE_MARGIN_SHARE))


# -- error codes ------------------------------------------------------------------------------

def at_request(api_key: int) -> tuple[GroupMember, Request, bool]:
    """A member with a request of this kind awaiting its answer, and whether it was in a
    generation (owning A and B) when it sent it."""
    if api_key == JOIN:
        member = in_group()
        return member, sent(member, JOIN, 1.0), False
    if api_key == SYNC:
        member = in_group()
        joined(member, sent(member, JOIN, 0.0), 0.5)
        return member, sent(member, SYNC, 1.0), False
    member = stable(now=0.0)
    if api_key == HEARTBEAT:
        return member, sent(member, HEARTBEAT, 3.0), True
    assert member.commit({A: 5}, 1.0) == []
    return member, sent(member, COMMIT, 1.0), True


def answer_with(member, api_key, request, error, now=1.5):
    if api_key == JOIN:
        joined(member, request, now, error=error, member_id="")
    elif api_key == SYNC:
        synced(member, request, now, error=error, raw=b"")
    elif api_key == HEARTBEAT:
        beat(member, request, now, error=error)
    else:
        commit_answered(member, request, now, error=error)


def assert_generation_passed(member, owned: bool) -> None:
    assert member.generation is None and not member.may_deliver(A, 1.5)
    events = member.next_events()
    revoked = [event.partitions for event in events if isinstance(event, Revoked)]
    assert revoked == ([frozenset({A, B})] if owned else [])
    assert all(not isinstance(event, Assigned) for event in events)


APIS = [pytest.param(api, id=name) for api, name in [
    (JOIN, "JoinGroup"), (SYNC, "SyncGroup"), (HEARTBEAT, "Heartbeat"), (COMMIT, "OffsetCommit")]]


@pytest.mark.parametrize("api_key", APIS)
def test_rebalance_in_progress_rejoins_keeping_the_member_id(api_key):
    member, request, owned = at_request(api_key)
    answer_with(member, api_key, request, 27)
    assert member.state is State.JOINING
    assert_generation_passed(member, owned)
    kept = "" if api_key == JOIN else "m-1"  # a first join has no id yet to keep
    assert JoinGroupRequest.decode(sent(member, JOIN, 1.5).body, version=0).member_id == kept


@pytest.mark.parametrize("api_key", APIS)
@pytest.mark.parametrize("error", [22, 25])
def test_an_unknown_generation_or_member_rejoins_under_a_fresh_member_id(api_key, error):
    member, request, owned = at_request(api_key)
    answer_with(member, api_key, request, error)
    assert member.state is State.JOINING and member.member_id == ""
    assert_generation_passed(member, owned)
    assert JoinGroupRequest.decode(sent(member, JOIN, 1.5).body, version=0).member_id == ""


JOINING_APIS = APIS[:2]
GENERATION_APIS = APIS[2:]


@pytest.mark.parametrize("api_key", JOINING_APIS)
@pytest.mark.parametrize("error", [14, 15, 16, 7, -1])
def test_coordinator_trouble_while_joining_looks_the_coordinator_up_again_after_a_backoff(
        api_key, error):
    member, request, owned = at_request(api_key)
    answer_with(member, api_key, request, error)
    assert member.state is State.FINDING and member.coordinator is None
    assert_generation_passed(member, owned)
    assert member.next_request(LEGACY_GROUP_VERSIONS, 1.5 + BACKOFF_S / 2) is None
    coordinator_found(member, sent(member, FIND, 1.5 + BACKOFF_S), 2.0, node=3)
    assert member.coordinator == Coordinator(3, "broker3", 9092)
    expected_id = "" if api_key == JOIN else "m-1"
    assert JoinGroupRequest.decode(sent(member, JOIN, 2.0).body,
                                   version=0).member_id == expected_id


@pytest.mark.parametrize("api_key", GENERATION_APIS)
@pytest.mark.parametrize("error", [14, 15, 16, 7, -1, 6])
def test_a_coordinator_moving_in_a_generation_is_found_again_keeping_it(api_key, error):
    """As Java's consumer: the coordinator marked dead and looked up again after a backoff,
    then a heartbeat to the new one in the same generation, under the same member id; no
    JoinGroup, no revocation."""
    member, request, _ = at_request(api_key)
    answer_with(member, api_key, request, error)
    assert member.state is State.RELOCATING and member.coordinator is None
    assert member.generation == Generation(1, "m-1")
    assert not any(isinstance(event, Revoked) for event in member.next_events())
    assert member.next_request(LEGACY_GROUP_VERSIONS, 1.5 + BACKOFF_S / 2) is None
    coordinator_found(member, sent(member, FIND, 1.5 + BACKOFF_S), 2.0, node=3)
    assert member.state is State.STABLE
    assert member.coordinator == Coordinator(3, "broker3", 9092)
    heartbeat = sent(member, HEARTBEAT, 2.0)
    assert heartbeat.coordinator == Coordinator(3, "broker3", 9092)
    body = HeartbeatRequest.decode(heartbeat.body, version=heartbeat.version)
    assert (body.generation_id, body.member_id) == (1, "m-1")
    beat(member, heartbeat, 2.1)
    assert member.lease_deadline == 2.0 + SESSION_S * (1 - LEASE_MARGIN_SHARE)
    assert member.may_deliver(A, 2.1) and member.next_events() == []


def test_a_coordinator_that_fails_every_sync_is_asked_again_less_and_less_often():
    """Found and joined each time, then the same trouble: the backoff grows until a
    generation is reached, not from each coordinator found."""
    member = in_group()
    now = 0.0
    for delay in (0.1, 0.2, 0.4, 0.8, 1.0, 1.0):
        joined(member, sent(member, JOIN, now), now)
        synced(member, sent(member, SYNC, now), now, error=15)
        assert member.next_request(LEGACY_GROUP_VERSIONS, now + delay - 0.01) is None
        now += delay
        coordinator_found(member, sent(member, FIND, now), now)
    joined(member, sent(member, JOIN, now), now)
    synced(member, sent(member, SYNC, now), now)
    member.next_events()
    beat(member, sent(member, HEARTBEAT, now + HEARTBEAT_S), now + HEARTBEAT_S, error=15)
    now += HEARTBEAT_S
    assert member.next_request(LEGACY_GROUP_VERSIONS, now + BACKOFF_S - 0.01) is None
    assert sent(member, FIND, now + BACKOFF_S) is not None


@pytest.mark.parametrize("api_key", APIS)
@pytest.mark.parametrize("error, kind, message", [
    (23, InconsistentGroupProtocolError, "it offers protocol type 'consumer' with assignors "
                                         "range, roundrobin, and the group's members speak "
                                         "another protocol type or none of these assignors"),
    (30, GroupAuthorizationError, "the brokers refuse this client group 'g'"),
    (26, GroupConfigError, "session.timeout.ms=10000 is outside the range the brokers allow"),
    (24, GroupConfigError, "the brokers refuse group.id 'g'"),
    (81, GroupConfigError, "group 'g' already has the brokers' group.max.size members"),
    (29, GroupAuthorizationError, "the brokers refuse this client group 'g' or its topics"),
    (82, GroupError, "^the group coordinator answered Kafka error 82 FENCED_INSTANCE_ID"),
    (35, GroupError, "^the group coordinator answered Kafka error 35 UNSUPPORTED_VERSION"),
    (42, GroupError, "^the group coordinator answered Kafka error 42 INVALID_REQUEST answering "),
])
def test_errors_no_retry_can_fix_fail_the_member_with_one_named_line(api_key, error, kind,
                                                                      message):
    member, request, owned = at_request(api_key)
    with pytest.raises(kind, match=message):
        answer_with(member, api_key, request, error)
    assert member.state is State.FAILED
    assert_generation_passed(member, owned)


@pytest.mark.parametrize("api_key", [JOIN, SYNC, HEARTBEAT])
@pytest.mark.parametrize("error", [3, 6, 19, 20])
def test_a_0_9_coordinator_failing_to_store_the_group_is_looked_up_again(api_key, error):
    """A 0.9 coordinator answers its offsets partition's write errors as they are (later ones
    say COORDINATOR_NOT_AVAILABLE): no reason to fail the member, seen with a replica down."""
    member, request, owned = at_request(api_key)
    answer_with(member, api_key, request, error)
    if owned:  # in a generation, which the coordinator looked up again may still know
        assert member.state is State.RELOCATING and member.generation is not None
        return
    assert member.state is State.FINDING
    assert_generation_passed(member, owned)


@pytest.mark.parametrize("error", [3, 12, 28, 19, 20])
def test_a_commit_error_of_the_commit_alone_leaves_the_generation_be(error):
    member, request, _ = at_request(COMMIT)
    commit_answered(member, request, 1.5, error=error)
    assert member.state is State.STABLE and member.may_deliver(A, 1.5)
    [failed] = member.next_events()
    assert isinstance(failed, CommitFailed) and failed.offsets == {A: 5}
    assert f"Kafka error {error} " in failed.reason


def test_a_commit_failing_with_a_rebalance_reports_the_commit_failed_and_revokes():
    member, request, _ = at_request(COMMIT)
    commit_answered(member, request, 1.5, error=27)
    events = member.next_events()
    assert events[0] == CommitFailed({A: 5}, "Kafka error 27 REBALANCE_IN_PROGRESS answering "
                                             "OffsetCommit")
    assert events[1] == Revoked(frozenset({A, B}), "Kafka error 27 REBALANCE_IN_PROGRESS "
                                                   "answering OffsetCommit", Generation(1, "m-1"))


def test_a_rebalance_takes_the_revoked_partitions_last_commit_before_the_member_rejoins():
    member = stable()
    beat(member, sent(member, HEARTBEAT, 3.0), 3.1, error=27)
    [revoked] = member.next_events()
    assert revoked.parting == Generation(1, "m-1") and not member.may_deliver(A, 3.1)
    assert member.commit_parting({A: 7, B: 9}, 3.1) == []
    request = sent(member, COMMIT, 3.1)
    body = OffsetCommitRequest.decode(request.body, version=request.version)
    assert (body.generation_id_or_member_epoch, body.member_id) == (1, "m-1")
    assert member.next_request(LEGACY_GROUP_VERSIONS, 3.1) is None  # the join waits
    commit_answered(member, request, 3.2)
    assert member.next_events() == [Committed({A: 7, B: 9})]
    sent(member, JOIN, 3.2)
    assert member.commit_parting({A: 8}, 3.3) == [A]  # the old generation is over


@pytest.mark.parametrize("error", [22, 25])
def test_a_generation_the_coordinator_forgot_takes_no_parting_commit(error):
    member = stable()
    beat(member, sent(member, HEARTBEAT, 3.0), 3.1, error=error)
    [revoked] = member.next_events()
    assert revoked.parting is None
    assert member.commit_parting({A: 7}, 3.1) == [A]
    assert sent(member, JOIN, 3.1)


def test_a_parting_commit_not_sent_when_the_coordinator_is_lost_fails():
    member = stable()
    beat(member, sent(member, HEARTBEAT, 3.0), 3.1, error=27)
    member.next_events()
    assert member.commit_parting({A: 7}, 3.1) == []
    member.failed(sent(member, COMMIT, 3.1), "connection reset", 3.2)
    events = member.next_events()
    assert [type(event) for event in events] == [CommitFailed]
    assert member.state is State.FINDING


REFUSED = ("group 'g' refused this member (Kafka error 23 INCONSISTENT_GROUP_PROTOCOL answering "
           "JoinGroup): it offers protocol type 'consumer' with assignors range, roundrobin")


@pytest.mark.parametrize("theirs, said", [
    (DescribedGroup(0, "Stable", "consumer", "cooperative-sticky", 1),
     "; the group's member uses protocol type 'consumer' with assignor 'cooperative-sticky': "
     "set partition.assignment.strategy to one they use"),
    (DescribedGroup(0, "PreparingRebalance", "consumer", "", 3),
     "; the group's 3 members use protocol type 'consumer' with no assignor chosen yet "
     "(state PreparingRebalance): set partition.assignment.strategy to one they use"),
    (DescribedGroup(0, "Stable", "connect", "default", 2),
     "; the group's 2 members use protocol type 'connect' with assignor 'default': it is "
     "another kind of group: use another group.id"),
    (DescribedGroup(0, "Dead", "", "", 0),
     "; the group has no members now (state Dead): they left meanwhile"),
    (DescribedGroup(16, "", "", "", 0),
     ", and the group's members speak another protocol type or none of these assignors "
     "(DescribeGroups could not say which: Kafka error 16 NOT_COORDINATOR answering "
     "DescribeGroups); set partition.assignment.strategy to one they use"),
    ("timed out after 5.0 s",
     ", and the group's members speak another protocol type or none of these assignors "
     "(DescribeGroups could not say which: timed out after 5.0 s); set "
     "partition.assignment.strategy to one they use"),
])
def test_a_refusal_of_the_members_protocol_names_what_the_group_uses_in_one_line(theirs, said):
    """The driver asks the coordinator (DescribeGroups) once the JoinGroup was refused; the
    core words what it learnt, or why it learnt nothing."""
    member = in_group()
    with pytest.raises(ProtocolRefusedError) as refused:
        joined(member, sent(member, JOIN, 0.0), 0.1, error=23)
    assert member.state is State.FAILED
    assert str(refused.value) == REFUSED + ", and the group's members speak another protocol " \
        "type or none of these assignors; set partition.assignment.strategy to one they use"
    worded = member.refusal(theirs)
    assert isinstance(worded, InconsistentGroupProtocolError)
    assert str(worded) == REFUSED + said and "\n" not in str(worded)


def test_the_coordinator_choosing_an_assignor_not_offered_fails_naming_both():
    member = in_group()
    with pytest.raises(InconsistentGroupProtocolError,
                       match="chose assignor 'sticky' for group 'g'; this member offers "
                             "protocol type 'consumer' with assignors range, roundrobin"):
        joined(member, sent(member, JOIN, 0.0), 0.1, protocol_name="sticky")


def test_a_members_subscription_that_does_not_parse_fails_the_leader_naming_the_member():
    member = in_group()
    with pytest.raises(GroupMetadataError, match="^the subscription of group member 'm-9'"):
        joined(member, sent(member, JOIN, 0.0), 0.1, member_id="m-1", leader="m-1",
               members=[("m-9", b"\x00\x00\x7f\xff\xff\xff")])
    assert member.state is State.FAILED


def test_an_assignment_that_does_not_parse_fails_the_member_naming_the_leader():
    member = in_group()
    joined(member, sent(member, JOIN, 0.0), 0.1, leader="m-0")
    with pytest.raises(GroupMetadataError, match="^the assignment written by group leader "
                                                 "'m-0' does not parse"):
        synced(member, sent(member, SYNC, 0.1), 0.2, raw=b"\x00")


def test_an_answer_that_does_not_parse_fails_the_member_naming_the_request():
    member = stable()
    request = sent(member, HEARTBEAT, 3.0)
    with pytest.raises(GroupError, match="^the group coordinator's Heartbeat v0 answer does "
                                         "not parse: response ends early"):
        member.receive(request, b"\x00\x00\x00\x01\x00", 3.1)


# -- the coordinator moving, connections failing ----------------------------------------------

def test_the_coordinator_lookup_backs_off_doubling_up_to_the_maximum():
    member = new_member()
    member.start(0.0)
    now, delays = 0.0, []
    for _ in range(6):
        coordinator_found(member, sent(member, FIND, now), now, error=15)
        delays.append(round(member.wait_until(now) - now, 3))
        now = member.wait_until(now)
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    coordinator_found(member, sent(member, FIND, now), now)
    assert member.state is State.JOINING


def test_a_connection_lost_to_the_coordinator_looks_it_up_again_in_the_generation():
    member = stable()
    request = sent(member, HEARTBEAT, 3.0)
    member.failed(request, "connection reset", 3.2)
    assert member.state is State.RELOCATING and member.may_deliver(A, 3.2)
    assert member.next_events() == []
    member.receive(request, b"late", 3.3)  # an answer no longer awaited changes nothing
    assert member.state is State.RELOCATING
    assert sent(member, FIND, 3.2 + BACKOFF_S).coordinator is None


def test_a_coordinator_that_cannot_be_connected_to_is_looked_up_again():
    member = stable()
    member.unreachable("connection refused", 3.0)
    assert member.state is State.RELOCATING and member.generation == Generation(1, "m-1")
    joining = in_group()
    joining.unreachable("connection refused", 0.5)
    assert joining.state is State.FINDING


def test_the_lease_lapses_while_no_coordinator_answers_and_the_session_ends_the_generation():
    """Found again or not, nothing renews the lease but an answer in the generation: delivery
    stops when it runs out, and the session passing ends the generation as ever."""
    member = stable()
    beat(member, sent(member, HEARTBEAT, 3.0), 3.1, error=16)
    lease = member.lease_deadline
    assert lease == SESSION_S * (1 - LEASE_MARGIN_SHARE)  # from the sync at 0.0
    now, looked_up = 3.1 + BACKOFF_S, 0
    while member.wait_until(now) < SESSION_S:  # the new coordinator not ready for a while
        coordinator_found(member, sent(member, FIND, now), now, error=15)
        looked_up += 1
        assert member.state is State.RELOCATING and member.lease_deadline == lease
        now = member.wait_until(now)
    assert looked_up > 5 and now == SESSION_S > lease
    member.expire(now)
    assert member.state is State.FINDING
    [revoked] = member.next_events()
    assert revoked.partitions == {A, B} and "session.timeout.ms" in revoked.reason
    assert member.generation is None and not member.may_deliver(A, now)


def test_a_generation_the_new_coordinator_does_not_know_is_joined_again():
    member = stable()
    beat(member, sent(member, HEARTBEAT, 3.0), 3.1, error=16)
    coordinator_found(member, sent(member, FIND, 3.2), 3.2, node=2)
    beat(member, sent(member, HEARTBEAT, 3.2), 3.3, error=25)
    assert member.state is State.JOINING and member.member_id == ""
    assert [type(event) for event in member.next_events()] == [Revoked]
    assert sent(member, JOIN, 3.3).coordinator == Coordinator(2, "broker2", 9092)


def test_a_commit_pending_across_the_move_is_sent_to_the_new_coordinator():
    member = stable()
    assert member.commit({A: 5}, 1.0) == []
    commit_answered(member, sent(member, COMMIT, 1.0), 1.1, error=16)
    assert member.state is State.RELOCATING and member.next_events() == []
    assert member.commit({B: 7}, 1.2) == []  # queued while the coordinator is looked up
    coordinator_found(member, sent(member, FIND, 1.1 + BACKOFF_S), 1.3, node=2)
    beat(member, sent(member, HEARTBEAT, 1.3), 1.4)  # the heartbeat first
    retried = sent(member, COMMIT, 1.4)
    assert retried.coordinator == Coordinator(2, "broker2", 9092)
    body = OffsetCommitRequest.decode(retried.body, version=retried.version)
    assert (body.generation_id_or_member_epoch, body.member_id) == (1, "m-1")
    commit_answered(member, retried, 1.5)
    commit_answered(member, sent(member, COMMIT, 1.5), 1.6)
    assert member.next_events() == [Committed({A: 5}), Committed({B: 7})]


def test_a_commit_pending_across_the_move_fails_when_the_generation_is_gone():
    member = stable()
    assert member.commit({A: 5}, 1.0) == []
    member.failed(sent(member, COMMIT, 1.0), "connection reset", 1.1)
    assert member.state is State.RELOCATING and member.next_events() == []
    coordinator_found(member, sent(member, FIND, 1.1 + BACKOFF_S), 1.3, node=2)
    beat(member, sent(member, HEARTBEAT, 1.3), 1.4, error=22)
    events = member.next_events()
    assert [type(event) for event in events] == [Revoked, CommitFailed]
    assert events[1].offsets == {A: 5} and "ILLEGAL_GENERATION" in events[1].reason
    assert member.state is State.JOINING


def test_an_overdue_answer_counts_as_lost():
    member = in_group()
    join = sent(member, JOIN, 0.0)
    member.expire(30.0 - 0.01)
    assert member.state is State.JOINING
    member.expire(30.0)
    assert member.state is State.FINDING
    joined(member, join, 30.5)  # too late: dropped
    assert member.state is State.FINDING


def test_an_answer_from_before_a_rejoin_changes_nothing():
    member = stable()
    heartbeat = sent(member, HEARTBEAT, 3.0)
    assert member.commit({A: 1}, 3.0) == []
    commit_answered(member, sent(member, COMMIT, 3.0), 3.1, error=27)  # a rebalance began
    beat(member, heartbeat, 3.2)  # its heartbeat was sent in the passed generation
    assert member.state is State.JOINING and member.generation is None


# -- the gate after each passing, until the partitions are given again -------------------------

def test_the_gate_stays_closed_until_the_member_is_given_the_partition_again():
    member = stable()
    beat(member, sent(member, HEARTBEAT, 3.0), 3.1, error=27)
    assert not member.may_deliver(A, 3.1)
    join = sent(member, JOIN, 3.1)
    assert not member.may_deliver(A, 3.2)
    joined(member, join, 3.3, generation=2)
    assert not member.may_deliver(A, 3.3)
    synced(member, sent(member, SYNC, 3.3), 3.4, partitions=(B, C))
    assert member.generation == Generation(2, "m-1")
    assert not member.may_deliver(A, 3.4)  # given to another member this time
    assert member.may_deliver(B, 3.4) and member.may_deliver(C, 3.4)


# -- commits, committed offsets, leaving ------------------------------------------------------

def test_commits_carry_the_generation_and_only_partitions_the_member_may_commit():
    member = stable(versions=NEWEST)
    assert member.commit({A: 10, C: 3}, 1.0) == [C]
    request = sent(member, COMMIT, 1.0, NEWEST)
    assert request.version == 8 and dict(request.offsets) == {A: 10}
    body = OffsetCommitRequest.decode(request.body, version=8)
    assert (body.generation_id_or_member_epoch, body.member_id) == (1, "m-1")
    commit_answered(member, request, 1.1)
    assert member.next_events() == [Committed({A: 10})]


def test_a_commit_outside_a_generation_is_refused_whole():
    member = in_group()
    assert member.commit({A: 1}, 0.0) == [A]
    assert member.next_request(LEGACY_GROUP_VERSIONS, 0.0).api_key == JOIN


def test_committed_offsets_are_fetched_and_a_partition_without_one_has_none():
    member = stable()
    member.fetch_offsets([A, B], 0.5)
    request = sent(member, FETCH, 0.5)
    assert request.version == 1  # v0 would read ZooKeeper
    topic = OffsetFetchResponse.OffsetFetchResponseTopic
    partition = topic.OffsetFetchResponsePartition
    answer(member, request, OffsetFetchResponse[1](topics=[topic(name="t", partitions=[
        partition(partition_index=0, committed_offset=42, metadata="", error_code=0),
        partition(partition_index=1, committed_offset=-1, metadata="", error_code=0)])]), 0.6)
    assert member.next_events() == [OffsetsFetched({A: 42, B: None})]


def test_offsets_of_a_transaction_not_decided_yet_are_asked_again_after_the_backoff():
    member = stable(versions=NEWEST)
    member.fetch_offsets([A], 0.5)
    request = sent(member, FETCH, 0.5, NEWEST)
    topic = OffsetFetchResponse.OffsetFetchResponseTopic
    answer(member, request, OffsetFetchResponse[7](throttle_time_ms=0, error_code=0, topics=[
        topic(name="t", partitions=[topic.OffsetFetchResponsePartition(
            partition_index=0, committed_offset=-1, committed_leader_epoch=-1, metadata="",
            error_code=88)])]), 0.6)
    assert member.next_events() == []
    assert member.next_request(NEWEST, 0.65) is None
    assert sent(member, FETCH, 0.6 + BACKOFF_S, NEWEST).partitions == {A}


def test_a_clean_stop_leaves_the_group_under_the_member_id():
    member = stable()
    member.close(1.0)
    assert not member.may_deliver(A, 1.0)
    assert member.next_events() == [Revoked(frozenset({A, B}), "the member is leaving the "
                                                               "group")]
    request = sent(member, LEAVE, 1.0)
    assert LeaveGroupRequest.decode(request.body, version=0).member_id == "m-1"
    answer(member, request, LeaveGroupResponse[0](error_code=0), 1.1)
    assert member.state is State.CLOSED


def test_a_member_not_in_the_group_closes_at_once():
    member = new_member()
    member.start(0.0)
    member.close(0.0)
    assert member.state is State.CLOSED


# -- events the table does not list ------------------------------------------------------------

def test_an_event_the_state_does_not_take_raises_a_named_error():
    member = stable()
    with pytest.raises(UnexpectedGroupEvent, match="event assignment_computed is not one "
                                                   "state stable takes"):
        member.assign({"t": 3}, 1.0)
    with pytest.raises(UnexpectedGroupEvent, match="event start is not one state stable"):
        member.start(1.0)
    member.close(1.0)
    answer(member, sent(member, LEAVE, 1.0), LeaveGroupResponse[0](error_code=0), 1.1)
    with pytest.raises(UnexpectedGroupEvent, match="event commit is not one state closed"):
        member.commit({A: 1}, 2.0)


def test_a_commit_sent_before_leaving_still_reports_its_outcome():
    member = stable()
    assert member.commit({A: 7}, 1.0) == []
    commit = sent(member, COMMIT, 1.0)
    member.close(1.0)
    leave = sent(member, LEAVE, 1.0)
    commit_answered(member, commit, 1.1)
    answer(member, leave, LeaveGroupResponse[0](error_code=0), 1.2)
    assert member.next_events()[-1] == Committed({A: 7})
    assert member.state is State.CLOSED


def test_an_answer_arriving_after_the_close_is_dropped():
    member = new_member()
    member.start(0.0)
    find = sent(member, FIND, 0.0)
    member.close(0.1)
    coordinator_found(member, find, 0.2)
    assert member.state is State.CLOSED


def test_the_driver_waits_for_answers_not_for_what_is_already_asked():
    member = new_member()
    member.start(0.0)
    assert member.wait_until(0.0) == 0.0  # FindCoordinator due
    sent(member, FIND, 0.0)
    assert member.wait_until(0.0) == 30.0  # its answer, or its timeout


def test_a_heartbeat_interval_not_below_the_session_timeout_is_refused():
    with pytest.raises(ConfigError, match="heartbeat.interval.ms=10000.*lower than "
                                          "session.timeout.ms \\(10000\\)"):
        GroupMember("g", ["t"], session_timeout_ms=10000, heartbeat_interval_ms=10000)


# -- a pattern subscription -------------------------------------------------------------------

def subscription_sent(request: Request) -> tuple[str, ...]:
    body = JoinGroupRequest.decode(request.body, version=request.version)
    return decode_subscription(body.protocols[0].metadata, "me").topics


def test_a_pattern_subscription_that_changes_rejoins_with_the_new_topics():
    member = stable()
    member.subscribe(["t"], 1.0)
    assert member.state is State.STABLE and member.next_events() == []
    member.subscribe(["t", "u"], 1.1)
    [revoked] = member.next_events()
    assert "subscription changed: + u" in revoked.reason and revoked.parting is not None
    assert subscription_sent(sent(member, JOIN, 1.1)) == ("t", "u")


def test_a_subscription_changed_during_a_join_is_sent_once_that_generation_comes():
    member = in_group()
    join = sent(member, JOIN, 0.0)
    assert subscription_sent(join) == ("t",)
    member.subscribe(["t", "u"], 0.05)  # the JoinGroup with ("t",) is under way
    assert member.state is State.JOINING and member.next_events() == []
    joined(member, join, 0.1)
    synced(member, sent(member, SYNC, 0.1), 0.2)
    assigned, revoked = member.next_events()
    assert isinstance(assigned, Assigned) and "+ u" in revoked.reason
    assert subscription_sent(sent(member, JOIN, 0.2)) == ("t", "u")

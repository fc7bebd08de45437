"""One scan from ZooKeeper's and Kafka's numbers to reports and metric families, and the service
around it (fakes for the cache and the brokers); Burrow's JSON is test_exporter_burrow_api's."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.core import GaugeMetricFamily

from zkconsumer.exporter.prometheus_view import exposition, group_families
from zkconsumer.exporter.service import ExporterSettings, LagExporter
from zkconsumer.fetch import LogOffsetsError
from zkconsumer.lag.history import OffsetHistory
from zkconsumer.lag.report import (
    GroupState,
    ScanInputs,
    ZookeeperOffset,
    group_partitions,
    resume_offset,
    scan,
)
from zkconsumer.lag.status import Status, WindowRules
from zkconsumer.model import TopicPartition
from zkconsumer.offsets import GroupOffsets, KafkaReadError
from zkconsumer.znodes.consumers import ConsumerRegistration

RULES = WindowRules(samples=3, span_s=30)
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
PARTITIONS = {"t": [0, 1], "other": [0], "logs-a": [0], "logs-b": [0]}


def static_member(*topics: str) -> ConsumerRegistration:
    return ConsumerRegistration.static(dict.fromkeys(topics, 1), 0)


def test_group_topics_take_offsets_owners_static_and_wildcard_subscriptions():
    state = GroupState("g", members={
        "a": static_member("t"),
        "b": ConsumerRegistration.wildcard("white_list", "logs-.*", 1, 0)},
        owners={TopicPartition("other", 0): "a-0"})
    assert state.topics(sorted(PARTITIONS)) == {"t", "other", "logs-a", "logs-b"}


def test_group_partitions_keep_an_offset_for_a_partition_no_longer_listed():
    state = GroupState("g", zookeeper_offsets={TopicPartition("gone", 3): ZookeeperOffset(1, 0)})
    assert group_partitions(state, [], PARTITIONS.get) == [TopicPartition("gone", 3)]


def test_lag_is_counted_from_the_larger_offset_and_dated_only_by_zookeeper():
    assert resume_offset(ZookeeperOffset(10, 5.0), 8) == (10, 5.0)
    assert resume_offset(ZookeeperOffset(10, 5.0), 12) == (12, None)
    assert resume_offset(None, 12) == (12, None)
    assert resume_offset(None, None) is None


def one_scan(states, log_ends, kafka=None, history=None, now=1000.0):
    history = history or OffsetHistory(RULES)
    layout = {state.name: group_partitions(state, [], PARTITIONS.get) for state in states}
    return scan(ScanInputs(states, layout, log_ends, kafka or {}), history, now)


def two_scans(states, log_ends):
    """STOP needs two observations at least."""
    history = OffsetHistory(RULES)
    one_scan(states, log_ends, history=history, now=990.0)
    return one_scan(states, log_ends, history=history)


def test_a_group_with_no_member_has_lag_for_every_partition_with_an_offset():
    state = GroupState("g", members={}, zookeeper_offsets={
        T0: ZookeeperOffset(3, 999.0), T1: ZookeeperOffset(0, 999.0)})
    [report] = one_scan([state], {T0: 10, T1: 4})
    assert [(p.partition, p.lag, p.owner) for p in report.partitions] == [
        (0, 7, None), (1, 4, None)]
    assert report.total_lag == 11 and report.members == 0


def test_a_partition_without_offset_has_no_lag_and_no_status():
    state = GroupState("g", members={"a": static_member("t")},
                       zookeeper_offsets={T0: ZookeeperOffset(3, 999.0)})
    [report] = one_scan([state], {T0: 3, T1: 4})
    by_partition = {p.partition: p for p in report.partitions}
    assert by_partition[1].lag is None and by_partition[1].status == Status.NOTFOUND
    assert report.status == Status.OK


def test_a_scan_that_could_not_read_an_offset_reports_no_lag_and_keeps_the_window():
    """The middle scan met a malformed offset znode (left out of the group's state): no lag
    then, the verdict its window gives (before, NOTFOUND, which turned the group OK for one
    scan), and the lower offset after it is a rewind."""
    history = OffsetHistory(RULES)
    member = {"a": static_member("t")}
    one_scan([GroupState("g", member, zookeeper_offsets={T0: ZookeeperOffset(12, 990.0)})],
             {T0: 20, T1: 20}, history=history, now=990.0)
    [unread] = one_scan([GroupState("g", member)], {T0: 20, T1: 20}, history=history,
                        now=1000.0)
    assert (unread.partitions[0].lag, unread.partitions[0].status) == (None, Status.OK)
    [after] = one_scan([GroupState("g", member, zookeeper_offsets={T0: ZookeeperOffset(
        8, 1005.0)})], {T0: 20, T1: 20}, history=history, now=1010.0)
    assert after.partitions[0].status == Status.REWIND
    assert [o.offset for o in after.partitions[0].window] == [12, 8]


def test_a_stopped_group_stays_stopped_through_a_scan_that_read_no_log_end():
    """One scan without a log end (the topic's leader gone for a moment) kept the partition's
    window but judged it NOTFOUND, so the group read OK for a scan: a recovery notice, a new
    alert at the next scan, and Prometheus' `for:` timers reset."""
    history = OffsetHistory(RULES)
    state = GroupState("g", zookeeper_offsets={T0: ZookeeperOffset(4, 900.0)})
    for now in (900.0, 910.0, 920.0, 930.0, 940.0):
        [stopped] = one_scan([state], {T0: 20}, history=history, now=now)
    assert stopped.status == Status.STOP
    [unread] = one_scan([state], {}, history=history, now=950.0)
    assert (unread.status, unread.partitions[0].lag) == (Status.STOP, None)
    [again] = one_scan([state], {T0: 20}, history=history, now=960.0)
    assert again.status == Status.STOP


def test_kafka_offsets_are_used_where_zookeeper_has_none():
    state = GroupState("g", members={"a": static_member("t")})
    [report] = one_scan([state], {T0: 10, T1: 10}, kafka={"g": {T0: 6}})
    by_partition = {p.partition: p for p in report.partitions}
    assert (by_partition[0].kafka_offset, by_partition[0].lag) == (6, 4)
    assert by_partition[1].lag is None


def stopped_and_orphaned() -> GroupState:
    """A member registered, partition 0 owned and moving, partition 1 owned by nobody with an
    offset written long ago."""
    return GroupState("g", members={"a": static_member("t")}, owners={T0: "a-0"},
                      zookeeper_offsets={T0: ZookeeperOffset(5, 999.0),
                                         T1: ZookeeperOffset(2, 1.0)})


def test_families_publish_every_name_with_kafka_exporters_lag_beside_ours():
    [report] = two_scans([stopped_and_orphaned()], {T0: 5, T1: 9})
    exporter = exporter_with([report])
    text = exporter.metrics_text().decode()
    for line in ('zkconsumer_group_lag{group="g",partition="1",topic="t"} 7.0',
                 ('kafka_consumergroupzookeeper_lag_zookeeper{consumergroup="g",partition="1",'
                  'topic="t"} 7.0'),
                 ('zkconsumer_group_offset{group="g",partition="0",storage="zookeeper",'
                  'topic="t"} 5.0'),
                 'zkconsumer_group_members{group="g"} 1.0',
                 'zkconsumer_partition_owned{group="g",partition="0",topic="t"} 1.0',
                 'zkconsumer_partition_owned{group="g",partition="1",topic="t"} 0.0',
                 'zkconsumer_group_total_lag{group="g"} 7.0',
                 'zkconsumer_group_status{group="g",status="STOP"} 1.0',
                 'zkconsumer_group_status{group="g",status="OK"} 0.0'):
        assert line in text


def test_the_text_written_once_per_scan_is_prometheus_clients_line_for_line():
    """Escaped label values, exponents as Go writes them, a family without labels or samples."""
    tricky = GaugeMetricFamily("tricky", "a \\ and a\nnewline", labels=["z", "a"])
    tricky.add_metric(['quote " backslash \\ newline \n', "é"], 12345678)
    tricky.add_metric(["", "x"], -3)
    tricky.add_metric(["", "y"], 0.5)
    plain = GaugeMetricFamily("plain", "no labels")
    plain.add_metric([], 1)
    empty = GaugeMetricFamily("empty", "no samples", labels=["a"])
    [report] = two_scans([stopped_and_orphaned()], {T0: 5, T1: 9})
    families = [*group_families([report]), tricky, plain, empty]
    assert exposition(families) == generate_latest(_Collected(families))


class _Collected:
    def __init__(self, families) -> None:
        self._families = families

    def collect(self):
        return self._families


def exporter_with(reports) -> LagExporter:
    """A service that publishes exactly these reports at its first scan."""
    exporter = LagExporter(_Groups(), _Reads(), ExporterSettings(10, RULES), clock=lambda: 1000.0)
    exporter._scan = lambda now: reports
    assert exporter.scan_once()
    return exporter


class _Reads:
    def __init__(self, fail_log_ends=False, fail_kafka=False):
        self.fail_log_ends = fail_log_ends
        self.fail_kafka = fail_kafka
        self.log_end = 10
        self.kafka_questions = 0
        self.kafka_offset = 4
        self.failing_topics: set[str] = set()

    def topics(self):
        class View:
            all_topics = ("t",)

            def partitions(self, topic):
                return PARTITIONS.get(topic)
        return View()

    def log_ends(self, partitions):
        if self.fail_log_ends:
            raise LogOffsetsError("brokers down")
        for tp in partitions:  # as kafka-python does for a partition it has no metadata for
            if tp.partition not in PARTITIONS.get(tp.topic, ()):
                raise KeyError(tp)
            if tp.topic in self.failing_topics:
                raise LogOffsetsError(f"no leader for {tp.topic}")
        return dict.fromkeys(partitions, self.log_end)

    def kafka_offsets(self, wanted):
        self.kafka_questions += 1
        if self.fail_kafka:
            raise KafkaReadError("offsets denied")
        return GroupOffsets({"g": {T1: self.kafka_offset}}, {})


class _Groups:
    """The groups source of a scan: always these groups."""

    def __init__(self, *groups: GroupState) -> None:
        self._groups = list(groups)

    def groups(self) -> list[GroupState]:
        return self._groups


def _owned_group() -> _Groups:
    return _Groups(GroupState("g", members={"a": static_member("t")}, owners={T0: "a-0"},
                              zookeeper_offsets={T0: ZookeeperOffset(5, 999.0)}))


def test_a_failed_scan_keeps_the_previous_one_and_health_goes_bad_when_it_is_stale():
    clock = [1000.0]
    reads = _Reads()
    exporter = LagExporter(_owned_group(), reads, ExporterSettings(10, RULES),
                           clock=lambda: clock[0])
    assert exporter.health() == (False, "no scan has finished yet")
    assert exporter.scan_once()
    assert exporter.reports()["g"].total_lag == 5 + 6
    reads.fail_log_ends = True
    reads.log_end = 50
    clock[0] += 10
    assert not exporter.scan_once()
    assert exporter.reports()["g"].total_lag == 11
    assert exporter.health()[0] is True
    clock[0] += 21
    healthy, why = exporter.health()
    assert not healthy and "31 s old" in why
    text = generate_latest(exporter.registry).decode()
    assert 'zkconsumer_exporter_scans_total{result="failure"} 1.0' in text


def test_kafka_offsets_failing_still_publishes_zookeepers():
    exporter = LagExporter(_owned_group(), _Reads(fail_kafka=True), ExporterSettings(10, RULES),
                           clock=lambda: 1000.0)
    assert exporter.scan_once()
    by_partition = {p.partition: p for p in exporter.reports()["g"].partitions}
    assert by_partition[0].lag == 5 and by_partition[1].lag is None


def test_kafka_offsets_are_not_asked_when_turned_off():
    reads = _Reads()
    exporter = LagExporter(_owned_group(), reads, ExporterSettings(10, RULES, kafka_offsets=False),
                           clock=lambda: 1000.0)
    assert exporter.scan_once()
    assert reads.kafka_questions == 0
    assert {p.partition: p.kafka_offset for p in exporter.reports()["g"].partitions} == {
        0: None, 1: None}


def test_an_offset_of_a_deleted_topic_does_not_stop_the_scan():
    with_deleted_topic = _Groups(GroupState("g", zookeeper_offsets={
        T0: ZookeeperOffset(5, 999.0), TopicPartition("deleted", 0): ZookeeperOffset(3, 999.0)}))
    exporter = LagExporter(with_deleted_topic, _Reads(), ExporterSettings(10, RULES),
                           clock=lambda: 1000.0)
    assert exporter.scan_once()
    lags = {(p.topic, p.partition): p.lag for p in exporter.reports()["g"].partitions}
    assert lags == {("deleted", 0): None, ("t", 0): 5, ("t", 1): 6}


def test_a_scan_kafka_cannot_answer_keeps_its_last_offsets_so_nothing_looks_rewound():
    """Dual commit: ZooKeeper's copy (5) lags Kafka's (12). Falling back to it for one scan
    would be a rewind, and a lag jump."""
    reads = _Reads()
    reads.kafka_offset = 12
    dual = _Groups(GroupState("g", members={"a": static_member("t")}, owners={T1: "a-0"},
                              zookeeper_offsets={T1: ZookeeperOffset(5, 999.0)}))
    exporter = LagExporter(dual, reads, ExporterSettings(10, RULES), clock=lambda: 1000.0)
    assert exporter.scan_once()
    reads.fail_kafka = True
    assert exporter.scan_once()
    partition = {p.partition: p for p in exporter.reports()["g"].partitions}[1]
    assert (partition.kafka_offset, partition.lag, partition.status) == (12, -2, Status.OK)
    assert [o.offset for o in partition.window] == [12, 12]


def test_one_topic_without_a_log_end_leaves_the_others_published():
    two_topics = _Groups(GroupState("g", zookeeper_offsets={
        T0: ZookeeperOffset(5, 999.0), TopicPartition("other", 0): ZookeeperOffset(1, 999.0)}))

    reads = _Reads()
    reads.failing_topics = {"other"}
    exporter = LagExporter(two_topics, reads, ExporterSettings(10, RULES), clock=lambda: 1000.0)
    assert exporter.scan_once()
    lags = {(p.topic, p.partition): p.lag for p in exporter.reports()["g"].partitions}
    assert lags[("t", 0)] == 5 and lags[("other", 0)] is None


def test_completeness_as_burrow_counts_it():
    state = GroupState("g", zookeeper_offsets={T0: ZookeeperOffset(5, 999.0),
                                               T1: ZookeeperOffset(5, 999.0)})
    history = OffsetHistory(RULES)
    one_scan([state], {T0: 9, T1: 9}, history=history, now=980.0)
    one_scan([state], {T0: 9, T1: 9}, history=history, now=990.0)
    [report] = one_scan([state], {T0: 9, T1: 9}, history=history)
    assert report.completeness == 1.0
    history = OffsetHistory(RULES)
    [report] = one_scan([state], {T0: 9, T1: 9}, history=history)
    assert report.completeness == 0.0

"""A scan's reports as Prometheus metric families (pure).

Families are built and written out in the text format once per scan (`exposition`), and that
text is handed out unchanged to every scrape, so a scrape costs no formatting and no request
to ZooKeeper or Kafka.

Besides zkconsumer's own names, the lag is also published as kafka_exporter publishes a
ZooKeeper group's lag (`kafka_consumergroupzookeeper_lag_zookeeper`, labels consumergroup,
topic, partition), and, for every partition with an offset in Kafka and every group Kafka's
group coordinator knows, as it publishes a Kafka group's (`kafka_consumergroup_*`), so
dashboards and alerts written for it work unchanged; unlike it, a partition whose committed
offset is 0 is kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from zkconsumer.lag.report import GroupReport
from zkconsumer.lag.status import PARTITION_STATUSES

PARTITION_LABELS = ["group", "topic", "partition"]
KAFKA_EXPORTER_LABELS = ["consumergroup", "topic", "partition"]


def group_families(reports: Iterable[GroupReport]) -> list[Metric]:
    lag = GaugeMetricFamily(
        "zkconsumer_group_lag", "Log end minus the group's committed offset (the larger of "
        "ZooKeeper's and Kafka's).", labels=PARTITION_LABELS)
    offset = GaugeMetricFamily(
        "zkconsumer_group_offset", "The group's committed offset, per storage.",
        labels=[*PARTITION_LABELS, "storage"])
    members = GaugeMetricFamily(
        "zkconsumer_group_members", "Members registered under /consumers/<group>/ids or on "
        "Kafka's group coordinator.",
        labels=["group"])
    owned = GaugeMetricFamily(
        "zkconsumer_partition_owned", "1 if a member owns the partition, 0 if nobody does "
        "(orphaned, when the group has members).", labels=PARTITION_LABELS)
    total = GaugeMetricFamily(
        "zkconsumer_group_total_lag", "The group's lag summed over its partitions.",
        labels=["group"])
    status = GaugeMetricFamily(
        "zkconsumer_group_status", "1 for the group's status over the window (the worst of "
        "its partitions, as Burrow judges them), 0 for the others.", labels=["group", "status"])
    compatible = GaugeMetricFamily(
        "kafka_consumergroupzookeeper_lag_zookeeper", "Current approximate lag of a "
        "ZooKeeper consumer group at topic/partition (kafka_exporter's name).",
        labels=["consumergroup", "topic", "partition"])
    reports = list(reports)
    for report in reports:
        members.add_metric([report.group], report.members)
        total.add_metric([report.group], report.total_lag)
        for candidate in PARTITION_STATUSES:
            status.add_metric([report.group, candidate.name], int(candidate == report.status))
        for partition in report.partitions:
            labels = [report.group, partition.topic, str(partition.partition)]
            owned.add_metric(labels, int(partition.owner is not None))
            if partition.lag is not None:
                lag.add_metric(labels, partition.lag)
                compatible.add_metric(labels, partition.lag)
            for storage, value in (("zookeeper", partition.zookeeper_offset),
                                   ("kafka", partition.kafka_offset)):
                if value is not None:
                    offset.add_metric([*labels, storage], value)
    return [lag, offset, members, owned, total, status, compatible,
            *kafka_exporter_families(reports)]


def kafka_exporter_families(reports: Iterable[GroupReport]) -> list[Metric]:
    """kafka_exporter's consumer-group families: the offset committed in Kafka and the lag of
    each partition that has one, their sums per topic, and the members of each group on
    Kafka's group coordinator."""
    offset = GaugeMetricFamily(
        "kafka_consumergroup_current_offset", "Current offset of a consumer group at "
        "topic/partition, as committed in Kafka (kafka_exporter's name).",
        labels=KAFKA_EXPORTER_LABELS)
    offset_sum = GaugeMetricFamily(
        "kafka_consumergroup_current_offset_sum", "Current offset of a consumer group at a "
        "topic, summed over its partitions (kafka_exporter's name).",
        labels=["consumergroup", "topic"])
    lag = GaugeMetricFamily(
        "kafka_consumergroup_lag", "Current approximate lag of a consumer group at "
        "topic/partition (kafka_exporter's name).", labels=KAFKA_EXPORTER_LABELS)
    lag_sum = GaugeMetricFamily(
        "kafka_consumergroup_lag_sum", "Current approximate lag of a consumer group at a "
        "topic, summed over its partitions (kafka_exporter's name).",
        labels=["consumergroup", "topic"])
    members = GaugeMetricFamily(
        "kafka_consumergroup_members", "Members of a consumer group on Kafka's group "
        "coordinator (kafka_exporter's name).", labels=["consumergroup"])
    for report in reports:
        if report.coordinator_members is not None:
            members.add_metric([report.group], report.coordinator_members)
        offsets: Counter[str] = Counter()
        lags: Counter[str] = Counter()
        for partition in report.partitions:
            if partition.kafka_offset is None:
                continue
            labels = [report.group, partition.topic, str(partition.partition)]
            offset.add_metric(labels, partition.kafka_offset)
            offsets[partition.topic] += partition.kafka_offset
            if partition.lag is not None:
                lag.add_metric(labels, partition.lag)
                lags[partition.topic] += partition.lag
        for topic, total in sorted(offsets.items()):
            offset_sum.add_metric([report.group, topic], total)
        for topic, total in sorted(lags.items()):
            lag_sum.add_metric([report.group, topic], total)
    return [offset, offset_sum, lag, lag_sum, members]


def exposition(families: Iterable[Metric]) -> bytes:
    """Gauge families in Prometheus's text format, line for line as prometheus_client's
    `generate_latest` writes them (labels sorted by name, values as Go prints floats), at a
    fraction of its cost: a scan's families are hundreds of thousands of samples at thousands
    of groups, and `generate_latest` takes seconds over them where a scrape must take less than
    one. Each label value is escaped once however many samples share it."""
    escaped: dict[str, str] = {}
    values: dict[float, str] = {}
    lines = []
    for family in families:
        if family.type != "gauge":
            raise ValueError(f"{family.name} is a {family.type}; only gauges are written here")
        documentation = family.documentation.replace("\\", r"\\").replace("\n", r"\n")
        lines.append(f"# HELP {family.name} {documentation}\n# TYPE {family.name} gauge\n")
        if not family.samples:
            continue
        names = sorted(family.samples[0].labels)
        for sample in family.samples:
            labels = sample.labels
            text = []
            for name in names:
                value = labels[name]
                if (quoted := escaped.get(value)) is None:
                    quoted = escaped[value] = (value.replace("\\", r"\\").replace("\n", r"\n")
                                               .replace('"', r"\""))
                text.append(f'{name}="{quoted}"')
            if (number := values.get(sample.value)) is None:
                number = values[sample.value] = floatToGoString(sample.value)
            lines.append(f"{sample.name}{{{','.join(text)}}} {number}\n" if text
                         else f"{sample.name} {number}\n")
    return "".join(lines).encode()

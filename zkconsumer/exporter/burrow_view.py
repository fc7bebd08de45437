"""Burrow's HTTP read API from a scan's reports and the exporter's setup (pure), so Burrow's UI,
dashboards, alerting and clients (burrow-exporter, Telegraf's burrow input) can point at the
exporter.

Burrow 1.2's read paths, answered with its JSON (field names and types as it writes them; the
exporter adds `observedAt` to each offset and nothing else):
  /burrow/admin                                    GOOD while scans work (503 and why if not)
  /v3/kafka                                        the cluster list
  /v3/kafka/<cluster>                              the cluster's module: brokers, refresh
  /v3/kafka/<cluster>/consumer                     the group list
  /v3/kafka/<cluster>/consumer/<group>             the offsets behind the status, per partition
  /v3/kafka/<cluster>/consumer/<group>/status      status, with only the partitions not OK
  /v3/kafka/<cluster>/consumer/<group>/lag         the same with every partition
  /v3/kafka/<cluster>/topic[/<topic>]              the topics the groups read, their log ends
  /v3/kafka/<cluster>/topic/<topic>/consumers      the groups with an offset for the topic
  /v3/config[/<coordinator>[/<module>]]            what is watched and how (`burrow_config`)
  /v3/admin/loglevel                               the log level
The group's `status` is Burrow's own (OK, WARN, or ERR for anything worse); each partition's
says which trouble it is. A group or cluster not watched gets Burrow's answers too: 404 with a
NOTFOUND status for /status and /lag, 404 with an error message elsewhere, and any other path
under /v3 Burrow's "invalid request type".
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Mapping
from typing import TypeVar
from urllib.parse import unquote

from zkconsumer.exporter.burrow_config import (
    BurrowSetup,
    cluster_module,
    consumer_modules,
    evaluator_modules,
    main_config,
    notifier_modules,
    storage_modules,
)
from zkconsumer.lag.report import GroupReport, PartitionReport
from zkconsumer.lag.status import Observation, Status, burrow_group_status
from zkconsumer.metrics.http_server import Reply

PREFIX = "/v3/kafka"


def served_paths(cluster: str) -> list[str]:
    """The Burrow paths answered (the module's list), as the exporter's start line names
    them, with the cluster's name in them."""
    return [path.replace("<cluster>", cluster) for path in _SERVED]


_SERVED = ("/burrow/admin", PREFIX, f"{PREFIX}/<cluster>", f"{PREFIX}/<cluster>/consumer",
           f"{PREFIX}/<cluster>/consumer/<group>", f"{PREFIX}/<cluster>/consumer/<group>/status",
           f"{PREFIX}/<cluster>/consumer/<group>/lag", f"{PREFIX}/<cluster>/topic[/<topic>]",
           f"{PREFIX}/<cluster>/topic/<topic>/consumers", "/v3/config[/<coordinator>[/<module>]]",
           "/v3/admin/loglevel")

# More partitions than any Kafka topic has (a cluster holds some hundreds of thousands in all).
MOST_PARTITIONS = 100_000
T = TypeVar("T")
_ROOTS = ("v3", "burrow")
_HOST = socket.gethostname()  # Burrow names the host that answered
_TEXT = "text/plain; charset=utf-8"
# (healthy, why), as the service says it
Health = tuple[bool, str]

# Burrow's configuration coordinators and the modules each lists.
_COORDINATORS: dict[str, Callable[[BurrowSetup], Mapping[str, dict]]] = {
    "cluster": lambda setup: {setup.cluster: cluster_module(setup)},
    "consumer": consumer_modules,
    "storage": storage_modules,
    "evaluator": evaluator_modules,
    "notifier": notifier_modules,
}


def burrow_reply(path: str, setup: BurrowSetup, reports: Mapping[str, GroupReport],
                 health: Health) -> Reply | None:
    """The answer to a Burrow path; None for a path that is not Burrow's."""
    parts = [unquote(part) for part in path.split("/") if part]
    if not parts or parts[0] not in _ROOTS:
        return None
    match parts:
        case ["burrow", "admin"]:
            healthy, why = health
            return Reply(200, b"GOOD", _TEXT) if healthy else Reply(503, why.encode(), _TEXT)
        case ["v3", "kafka"]:
            return _ok(path, "cluster list returned", clusters=[setup.cluster])
        case ["v3", "kafka", cluster, *rest]:
            return _kafka(path, setup, reports, cluster, rest)
        case ["v3", "config", *rest]:
            return _config(path, setup, rest)
        case ["v3", "admin", "loglevel"]:
            return _ok(path, "log level returned", level=setup.connections.log_level)
    return _invalid_request()


def _kafka(path: str, setup: BurrowSetup, reports: Mapping[str, GroupReport], cluster: str,
           rest: list[str]) -> Reply:
    known = cluster == setup.cluster
    match rest:
        case []:
            if not known:
                return _error(path, 404, "cluster module not found")
            return _ok(path, "cluster module detail returned", module=cluster_module(setup))
        case ["consumer", group, ("status" | "lag") as kind]:
            report = reports.get(group) if known else None
            if report is None:
                return _reply(404, path, "consumer status returned",
                              status=_not_found(cluster, group))
            return _ok(path, "consumer status returned",
                       status=_group_status(cluster, report, every_partition=kind == "lag"))
        case ["consumer", group]:
            report = reports.get(group) if known else None
            if report is None:
                return _error(path, 404, "cluster or consumer not found")
            return _ok(path, "consumer detail returned",
                       topics=_consumer_detail(report, setup.window_samples))
        case ["topic", topic]:
            ends = _log_ends(reports).get(topic) if known else None
            if ends is None:
                return _error(path, 404, "cluster or topic not found")
            return _ok(path, "topic offsets returned",
                       offsets=_by_partition_number(ends, lambda end: -1 if end is None else end))
        case ["consumer"] | ["topic"] | ["topic", _, "consumers"] if not known:
            return _error(path, 404, "cluster not found")
        case ["consumer"]:
            return _ok(path, "consumer list returned", consumers=sorted(reports))
        case ["topic"]:
            return _ok(path, "topic list returned", topics=sorted(_log_ends(reports)))
        case ["topic", topic, "consumers"]:
            return _ok(path, "consumers of topic returned",
                       consumers=_consumers_of(topic, reports))
    return _invalid_request()


def _config(path: str, setup: BurrowSetup, rest: list[str]) -> Reply:
    match rest:
        case []:
            return _ok(path, "main config returned", **main_config(setup))
        case [coordinator] if coordinator in _COORDINATORS:
            return _ok(path, "module list returned", coordinator=coordinator,
                       modules=list(_COORDINATORS[coordinator](setup)))
        case [coordinator, name] if coordinator in _COORDINATORS:
            module = _COORDINATORS[coordinator](setup).get(name)
            if module is None:
                return _error(path, 404, f"{coordinator} module not found")
            return _ok(path, f"{coordinator} module detail returned", module=module)
    return _invalid_request()


def _log_ends(reports: Mapping[str, GroupReport]) -> dict[str, dict[int, int]]:
    """Topic -> partition -> log end, as the last scan read them for the groups."""
    found: dict[str, dict[int, int]] = {}
    for report in reports.values():
        for p in report.partitions:
            if p.log_end is not None:
                found.setdefault(p.topic, {})[p.partition] = p.log_end
    return found


def _consumers_of(topic: str, reports: Mapping[str, GroupReport]) -> list[str]:
    """As Burrow knows a group's topics from its commits: the groups with an offset stored for
    a partition of the topic, in ZooKeeper or in Kafka."""
    return sorted(group for group, report in reports.items()
                  if any(p.topic == topic and _has_offset(p) for p in report.partitions))


def _has_offset(partition: PartitionReport) -> bool:
    return partition.zookeeper_offset is not None or partition.kafka_offset is not None


def _consumer_detail(report: GroupReport, samples: int) -> dict[str, list[dict]]:
    """Topic -> a list indexed by partition number (a partition the group has nothing for is
    there with no offsets), each with the window's offsets, oldest first: Burrow's ring of
    `samples` slots, null where no observation has been made yet."""
    by_topic: dict[str, dict[int, PartitionReport]] = {}
    for p in report.partitions:
        by_topic.setdefault(p.topic, {})[p.partition] = p
    return {topic: _by_partition_number(partitions, lambda p: _detail_partition(p, samples))
            for topic, partitions in sorted(by_topic.items())}


def _by_partition_number(entries: Mapping[int, T], make: Callable[[T | None], dict | int]
                         ) -> list:
    """A list indexed by partition number, as Burrow's are, with `make(None)` in the gaps. The
    numbers come from znode names and broker answers: one past `MOST_PARTITIONS` (an offset
    znode named 2147483647) is left out rather than costing a list of billions of gaps."""
    last = max((number for number in entries if number < MOST_PARTITIONS), default=-1)
    return [make(entries.get(number)) for number in range(last + 1)]


def _detail_partition(partition: PartitionReport | None, samples: int) -> dict:
    window = () if partition is None else partition.window
    ring: list[dict | None] = [None] * (samples - len(window)) if window else []
    ring.extend(_offset(observation) for observation in window)
    return {"offsets": ring,
            "owner": "" if partition is None else partition.owner or "",
            "client_id": "",
            "current-lag": 0 if partition is None else _current_lag(partition)}


def _not_found(cluster: str, group: str) -> dict:
    """Burrow's status of a group it does not have, which comes with a 404."""
    return {"cluster": cluster, "group": group, "status": Status.NOTFOUND.name, "complete": 1.0,
            "partitions": [], "partition_count": 0, "maxlag": None, "totallag": 0}


def _group_status(cluster: str, report: GroupReport, *, every_partition: bool) -> dict:
    """Burrow counts and shows the partitions it has offsets for: so do we."""
    judged = [p for p in report.partitions if p.status != Status.NOTFOUND]
    shown = judged if every_partition else [p for p in judged if p.status != Status.OK]
    worst = max(judged, key=_judged_lag, default=None)
    return {
        "cluster": cluster,
        "group": report.group,
        "status": burrow_group_status(report.status).name,
        "complete": report.completeness,
        "partitions": [_partition(p) for p in shown],
        "partition_count": len(judged),
        "maxlag": None if worst is None else _partition(worst),
        "totallag": report.total_lag,
    }


def _judged_lag(partition: PartitionReport) -> int:
    """A partition is judged once its window holds an observation, which has a lag."""
    assert partition.lag is not None
    return partition.lag


def _current_lag(partition: PartitionReport) -> int:
    return max(0, partition.lag or 0)


def _partition(partition: PartitionReport) -> dict:
    window = partition.window
    return {
        "topic": partition.topic,
        "partition": partition.partition,
        "owner": partition.owner or "",
        "client_id": "",
        "status": partition.status.name,
        "start": _offset(window[0]) if window else None,
        "end": _offset(window[-1]) if window else None,
        "current_lag": _current_lag(partition),
        "complete": partition.completeness,
    }


def _offset(observation: Observation) -> dict:
    committed = observation.committed_at or observation.observed_at
    return {"offset": observation.offset, "timestamp": int(committed * 1000),
            "observedAt": int(observation.observed_at * 1000), "lag": observation.lag}


def _ok(path: str, message: str, **fields) -> Reply:
    return _reply(200, path, message, **fields)


def _reply(code: int, path: str, message: str, **fields) -> Reply:
    """Burrow's envelope: `error` false whenever there is a document, even with a 404."""
    return Reply(code, _json({"error": False, "message": message, **fields,
                                "request": _request(path)}))


def _error(path: str, code: int, message: str) -> Reply:
    return Reply(code, _json({"error": True, "message": message, "request": _request(path)}))


def _invalid_request() -> Reply:
    """Burrow's answer to a path it has no handler for, without the request part."""
    return Reply(404, _json({"error": True, "message": "invalid request type", "result": {}}))


def _request(path: str) -> dict:
    return {"url": path, "host": _HOST}


def _json(document: dict) -> bytes:
    return json.dumps(document).encode()

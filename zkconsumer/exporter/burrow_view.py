"""Burrow's v3 HTTP answers from a scan's reports (pure), so Burrow's dashboards, alerting and
clients (Burrow-dashboard, burrow-exporter, Telegraf's burrow input) can point at the exporter.

Paths answered, under one configured cluster name:
  /v3/kafka                                        the cluster list
  /v3/kafka/<cluster>/consumer                     the group list
  /v3/kafka/<cluster>/consumer/<group>/status      status, with only the partitions not OK
  /v3/kafka/<cluster>/consumer/<group>/lag         the same with every partition
  /v3/kafka/<cluster>/topic[/<topic>]               the topics the groups read, their log ends
The group's `status` is Burrow's own (OK, WARN, or ERR for anything worse); each partition's
says which trouble it is.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping
from urllib.parse import unquote

from zkconsumer.lag.report import GroupReport, PartitionReport
from zkconsumer.lag.status import Observation, Status, burrow_group_status
from zkconsumer.metrics.http_server import Reply

PREFIX = "/v3/kafka"
_HOST = socket.gethostname()  # Burrow names the host that answered


def burrow_reply(path: str, cluster: str, reports: Mapping[str, GroupReport]) -> Reply | None:
    """The answer to a Burrow path; None for a path that is not Burrow's."""
    if path.rstrip("/") != PREFIX and not path.startswith(PREFIX + "/"):
        return None
    parts = [unquote(part) for part in path[len(PREFIX):].strip("/").split("/") if part]
    if not parts:
        return _ok(path, "cluster list returned", clusters=[cluster])
    if parts[0] != cluster:
        return _error(path, 404, "cluster not found")
    if parts[1:] == ["consumer"]:
        return _ok(path, "consumer list returned", consumers=sorted(reports))
    if parts[1] == "topic" and len(parts) <= 3:
        log_ends = _log_ends(reports)
        if len(parts) == 2:
            return _ok(path, "topic list returned", topics=sorted(log_ends))
        if parts[2] not in log_ends:
            return _error(path, 404, "topic not found")
        ends = log_ends[parts[2]]
        return _ok(path, "topic offsets returned",
                   offsets=[ends.get(partition, -1) for partition in range(max(ends) + 1)])
    if len(parts) == 4 and parts[1] == "consumer" and parts[3] in ("status", "lag"):
        report = reports.get(parts[2])
        if report is None:
            return _error(path, 404, "cluster or consumer not found")
        return _ok(path, "consumer status returned",
                   status=_group_status(cluster, report, every_partition=parts[3] == "lag"))
    return _error(path, 404, "no such Burrow path here: try /status or /lag of a consumer")


def _log_ends(reports: Mapping[str, GroupReport]) -> dict[str, dict[int, int]]:
    """Topic -> partition -> log end, as the last scan read them for the groups."""
    found: dict[str, dict[int, int]] = {}
    for report in reports.values():
        for p in report.partitions:
            if p.log_end is not None:
                found.setdefault(p.topic, {})[p.partition] = p.log_end
    return found


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
        "current_lag": max(0, partition.lag or 0),
        "complete": partition.completeness,
    }


def _offset(observation: Observation) -> dict:
    committed = observation.committed_at or observation.observed_at
    return {"offset": observation.offset, "timestamp": int(committed * 1000),
            "observedAt": int(observation.observed_at * 1000), "lag": observation.lag}


def _ok(path: str, message: str, **fields) -> Reply:
    return Reply(200, _json({"error": False, "message": message, **fields,
                             "request": {"url": path, "host": _HOST}}))


def _error(path: str, status: int, message: str) -> Reply:
    return Reply(status, _json({"error": True, "message": message,
                                "request": {"url": path, "host": _HOST}}))


def _json(document: dict) -> bytes:
    return json.dumps(document).encode()

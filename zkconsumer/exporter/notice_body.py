"""The body of a notification: the user's template filled with one notice's fields (pure).

Templates are Python `string.Template` text: `$group` or `${group}` is replaced by the field,
`$$` is a dollar sign. A template is checked once, when the exporter starts: a field that does
not exist or a `$` that starts no field is one `NotifyTemplateError` naming it, not a failure at
the first alert hours later.

With a JSON Content-Type the text fields are escaped as inside a JSON string, so that
`"group": "$group"` stays valid JSON whatever the group's name; `partitions` and `json` are
JSON values (an array, an object) to be written without quotes. The default body is `$json`:
an object with every field, close to what Burrow's HTTP notifier posts (the group, its status,
its partitions in trouble with their lag, when the trouble started, an id shared by an
incident's alerts and its recovery).
"""

from __future__ import annotations

import json
import string
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone

from zkconsumer.errors import ZkConsumerError
from zkconsumer.exporter.notice_rules import Notice
from zkconsumer.lag.report import GroupReport, PartitionReport
from zkconsumer.lag.status import Status

DEFAULT_TEMPLATE = "$json"

FIELDS: Mapping[str, str] = {
    "event": "alert or recovery",
    "id": "the incident's id, the same in its alerts and its recovery",
    "cluster": "the exporter's --cluster-name",
    "group": "the group",
    "status": "its status now (OK, WARN, STOP, STALL, REWIND; NOTFOUND once it is gone)",
    "previous_status": "its status at the scan before (NOTFOUND when first seen)",
    "total_lag": "its lag summed over its partitions",
    "max_lag": "its largest partition lag",
    "partition_count": "its partitions",
    "complete": "the share of its partitions whose window is full",
    "partitions": "its partitions not OK, a JSON array",
    "since": "when the incident started, ISO 8601 UTC",
    "time": "when the scan that sent it ended, ISO 8601 UTC",
    "json": "every field above in one JSON object (the default body)",
}

# Fields that are JSON values; every other one is text.
_JSON_FIELDS = ("partitions", "json")


class NotifyTemplateError(ZkConsumerError):
    """A notification template that cannot be filled."""


class BodyTemplate:
    def __init__(self, text: str, *, json_escaped: bool) -> None:
        """`json_escaped`: the body is JSON, so text fields are escaped for a JSON string."""
        self._template = string.Template(text)
        self._json_escaped = json_escaped
        _check(self._template)

    def render(self, notice: Notice, cluster: str) -> bytes:
        fields = notice_fields(notice, cluster)
        values = {name: json.dumps(value) if name in _JSON_FIELDS else _text(value)
                  for name, value in fields.items()}
        values["json"] = json.dumps(fields)
        if self._json_escaped:
            values = {name: value if name in _JSON_FIELDS else json.dumps(value)[1:-1]
                      for name, value in values.items()}
        return self._template.substitute(values).encode()


def notice_fields(notice: Notice, cluster: str) -> dict[str, object]:
    """The notice's fields as JSON values (`json` aside)."""
    report = notice.report
    judged = _judged(report)
    return {
        "event": notice.event.value,
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL,
                             f"zkconsumer:{cluster}/{notice.group}/{notice.since!r}")),
        "cluster": cluster,
        "group": notice.group,
        "status": notice.status.name,
        "previous_status": notice.previous.name,
        "total_lag": 0 if report is None else report.total_lag,
        "max_lag": max((max(0, p.lag) for p in judged if p.lag is not None), default=0),
        "partition_count": len(judged),
        "complete": 1.0 if report is None else report.completeness,
        "partitions": [_partition(p) for p in judged if p.status != Status.OK],
        "since": _iso(notice.since),
        "time": _iso(notice.at),
    }


def _judged(report: GroupReport | None) -> list[PartitionReport]:
    """The partitions with a committed offset, as Burrow counts them."""
    if report is None:
        return []
    return [p for p in report.partitions if p.status != Status.NOTFOUND]


def _partition(p: PartitionReport) -> dict[str, object]:
    return {"topic": p.topic, "partition": p.partition, "status": p.status.name,
            "lag": p.lag, "owner": p.owner}


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, timezone.utc).isoformat(timespec="seconds")


def _check(template: string.Template) -> None:
    for found in template.pattern.finditer(template.template):
        name = found.group("named") or found.group("braced")
        if found.group("invalid") is not None:
            line = template.template.count("\n", 0, found.start()) + 1
            raise NotifyTemplateError(
                f"line {line}: a '$' that starts no field (write $$ for a dollar sign)")
        if name is not None and name not in FIELDS:
            raise NotifyTemplateError(f"unknown field ${name}; the fields are "
                                      + ", ".join(FIELDS))

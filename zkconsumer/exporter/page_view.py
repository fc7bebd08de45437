"""The exporter's own pages (pure): every group it watches at `/`, one group at `/group/<name>`,
as HTML written from the last good scan's reports, with SVG charts and no JavaScript needed to
read them. A little script (`page_assets/page.js`) refreshes the live part of a page from the
same path with `fragment=1`, and filters the list as one types.

Every name a group, topic or member brings is escaped, in text, attributes and links alike.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from importlib import resources
from urllib.parse import parse_qs, quote, unquote, urlencode

from zkconsumer.exporter.group_story import (
    Changes,
    lag_points,
    place_of,
    worst_first,
)
from zkconsumer.lag.report import GroupReport, PartitionReport
from zkconsumer.lag.status import PARTITION_STATUSES, Status
from zkconsumer.metrics.http_server import Reply
from zkconsumer.znodes.fence import Fence

PAGE_SIZE = 50
# What each status means, shown as the badge's tooltip and in the legend.
MEANINGS = {
    Status.OK: "keeping up, or caught up at some scan of the window",
    Status.WARN: "lag growing over the window although the offset moves",
    Status.STOP: "no commit for longer than the window, with lag, and no member owns it",
    Status.STALL: "no commit for longer than the window, with lag, although a member owns it",
    Status.REWIND: "the committed offset went back",
    Status.NOTFOUND: "no committed offset seen yet",
}
_PLACES = {"zookeeper": "ZooKeeper", "kafka": "Kafka", "both": "ZooKeeper and Kafka",
           "none": "none"}
_COORDINATIONS = {"zookeeper": "ZooKeeper", "kafka": "Kafka's coordinator"}


@dataclass(frozen=True)
class PageData:
    """What a page is written from: the last good scan and what the exporter knows beside."""

    cluster: str
    interval_s: float
    window_s: float
    scanned_at: float | None  # when the last good scan ended; None before the first
    reports: Mapping[str, GroupReport] = field(default_factory=dict)
    fences: Mapping[str, Fence] = field(default_factory=dict)
    changes: Changes = field(default_factory=dict)
    # The reports worst first (`worst_first`), if already sorted: once per scan, not per page.
    ordered: Sequence[GroupReport] | None = None
    observed_at: float | None = None  # when the last scan made its observations (its start)

    def worst_first(self) -> Sequence[GroupReport]:
        return worst_first(self.reports) if self.ordered is None else self.ordered


@dataclass(frozen=True)
class ListQuery:
    """The list's filter and page, from the query string: `q` (part of the name, any case),
    `status` (one status name; anything else is no filter) and `page` (from 1)."""

    name: str = ""
    status: Status | None = None
    page: int = 1

    @classmethod
    def parse(cls, query: str) -> ListQuery:
        fields = parse_qs(query)
        status_name = (fields.get("status") or [""])[0].upper()
        page = (fields.get("page") or ["1"])[0]
        return cls((fields.get("q") or [""])[0].strip(),
                   Status[status_name] if status_name in Status.__members__ else None,
                   int(page) if page.isdigit() and 0 < int(page) < 10**6 else 1)

    def link(self, **changed) -> str:
        values = {"q": self.name, "status": "" if self.status is None else self.status.name,
                  "page": str(self.page), **changed}
        return "/?" + urlencode({key: value for key, value in values.items() if value})

    def matches(self, report: GroupReport) -> bool:
        return ((self.status is None or report.status == self.status)
                and self.name.lower() in report.group.lower())


def group_path(group: str) -> str:
    return f"/group/{quote(group, safe='')}"


def burrow_paths(cluster: str, group: str) -> list[tuple[str, str]]:
    """The Burrow paths that answer the group page's data as JSON, and what each holds."""
    base = f"/v3/kafka/{quote(cluster, safe='')}/consumer/{quote(group, safe='')}"
    return [(f"{base}/lag", "status and every partition's lag"),
            (f"{base}/status", "status and the partitions not OK"),
            (base, "every partition's window of offsets")]


# -- the list ------------------------------------------------------------------------------

def index_page(data: PageData, query: ListQuery) -> str:
    status_options = "".join(
        f'<option value="{s.name}"{" selected" if query.status == s else ""}>{s.name}</option>'
        for s in reversed(PARTITION_STATUSES))
    body = (
        '<header><h1>Consumer groups</h1>'
        f'<p class="meta">{_scan_line(data)}</p></header>'
        '<form id="filter" class="filter" method="get" action="/">'
        f'<label>Name contains <input type="search" name="q" value="{_e(query.name)}" '
        'autocomplete="off"></label> '
        '<label>Status <select name="status"><option value="">any</option>'
        f'{status_options}</select></label> <button type="submit">Filter</button></form>'
        f'<main id="live" data-fragment="{_e(query.link(fragment="1"))}">'
        f'{index_fragment(data, query)}</main>'
        f'{_legend()}')
    return _document("Consumer groups", body, data.interval_s)


def index_fragment(data: PageData, query: ListQuery) -> str:
    """The part of `/` the script refreshes: the counts, one page of rows, the pager."""
    shown = [report for report in data.worst_first() if query.matches(report)]
    pages = max(1, -(-len(shown) // PAGE_SIZE))
    page = min(query.page, pages)
    rows = shown[(page - 1) * PAGE_SIZE:page * PAGE_SIZE]
    counts = _status_counts(data.reports.values())
    first = (page - 1) * PAGE_SIZE + 1 if rows else 0
    summary = (f'<p class="counts" data-scanned="{_e(_stamp(data.scanned_at))}">'
               f'{len(data.reports)} groups watched: {counts}. '
               f'Showing {first}–{first + len(rows) - 1 if rows else 0} of {len(shown)}'
               f'{" matching the filter" if query != ListQuery(page=query.page) else ""}, '
               'worst first.</p>')
    if not rows:
        table = ('<p class="empty">No group matches.</p>' if data.reports else
                 '<p class="empty">No group yet: the first scan has not finished, or there is '
                 'no group to watch.</p>')
    else:
        table = ('<table class="groups"><thead><tr><th>Group</th><th>Status</th>'
                 '<th>Members on</th><th>Offsets in</th><th>Cutover</th><th>Members</th>'
                 '<th class="num">Total lag</th><th>Lag over the window</th>'
                 '<th>Worst partition</th></tr></thead><tbody>'
                 + "".join(_group_row(data, report) for report in rows) + '</tbody></table>')
    return summary + table + _pager(query, page, pages)


def _group_row(data: PageData, report: GroupReport) -> str:
    place = place_of(report)
    fence = data.fences.get(report.group)
    points = lag_points(report)
    return (f'<tr class="row-{report.status.name.lower()}" data-group="{_e(report.group)}" '
            f'data-status="{report.status.name}">'
            f'<td class="name"><a href="{_e(group_path(report.group))}">{_e(report.group)}</a></td>'
            f'<td>{_badge(report.status)}</td>'
            f'<td class="members-on">{_PLACES[place.members_on]}</td>'
            f'<td class="offsets-in">{_PLACES[place.offsets_in]}</td>'
            f'<td class="fence">{_fence(fence, data.scanned_at)}</td>'
            f'<td class="num members">{_members(report)}</td>'
            f'<td class="num lag">{report.total_lag:,}</td>'
            f'<td>{_chart(points, data, 120, 28, f"total lag of {report.group}")}</td>'
            f'<td class="worst">{_worst(report)}</td></tr>')


def _worst(report: GroupReport) -> str:
    judged = [p for p in report.partitions if p.status != Status.NOTFOUND]
    if not judged:
        return '<span class="quiet">none judged yet</span>'
    worst = max(judged, key=lambda p: (p.status, p.lag or 0))
    return (f'{_e(worst.topic)}/{worst.partition}: lag {_number(worst.lag)} '
            f'{_badge(worst.status)}')


def _status_counts(reports) -> str:
    counts: dict[Status, int] = {}
    for report in reports:
        counts[report.status] = counts.get(report.status, 0) + 1
    return ", ".join(f"{counts[s]} {_badge(s)}" for s in sorted(counts, reverse=True)) or "none"


def _pager(query: ListQuery, page: int, pages: int) -> str:
    if pages == 1:
        return ""
    previous = (f'<a rel="prev" href="{_e(query.link(page=str(page - 1)))}">← previous</a>'
                if page > 1 else '<span class="quiet">← previous</span>')
    following = (f'<a rel="next" href="{_e(query.link(page=str(page + 1)))}">next →</a>'
                 if page < pages else '<span class="quiet">next →</span>')
    return f'<nav class="pager">{previous} page {page} of {pages} {following}</nav>'


# -- one group ------------------------------------------------------------------------------

def group_page(data: PageData, group: str) -> str | None:
    """The group's page; None for a group the last scan did not see."""
    if group not in data.reports:
        return None
    body = (f'<header><p><a href="/">← every group</a></p>'
            f'<h1>Group <span class="group-name">{_e(group)}</span></h1>'
            f'<p class="meta">{_scan_line(data)}</p></header>'
            f'<main id="live" data-fragment="{_e(group_path(group))}?fragment=1">'
            f'{group_fragment(data, group)}</main>{_legend()}')
    return _document(f"Group {group}", body, data.interval_s)


def group_fragment(data: PageData, group: str) -> str | None:
    report = data.reports.get(group)
    if report is None:
        return None
    place = place_of(report)
    facts = [("Status", _badge(report.status)),
             ("Members on", _PLACES[place.members_on]),
             ("Offsets in", _PLACES[place.offsets_in]),
             ("Cutover", _fence(data.fences.get(group), data.scanned_at)),
             ("Members", _members(report)),
             ("Total lag", f"{report.total_lag:,}"),
             ("Window seen", f"{report.completeness:.0%} of the partitions' windows full")]
    facts_html = "".join(f'<dt>{name}</dt><dd class="fact-{name.lower().replace(" ", "-")}">'
                         f'{value}</dd>' for name, value in facts)
    partitions = sorted(report.partitions, key=lambda p: (p.topic, p.partition))
    rows = "".join(_partition_row(data, p) for p in partitions)
    return (f'<p class="counts" data-scanned="{_e(_stamp(data.scanned_at))}"></p>'
            f'<dl class="facts">{facts_html}</dl>'
            '<section><h2>Total lag over the window</h2>'
            f'{_chart(lag_points(report), data, 640, 140, f"total lag of {group}", axes=True)}'
            '</section>'
            '<section><h2>Partitions</h2><table class="partitions"><thead><tr>'
            '<th>Topic</th><th class="num">Partition</th><th>Owner</th>'
            '<th class="num">Committed offset</th><th>Committed at</th>'
            '<th class="num">Log end</th><th class="num">Lag</th><th>Status</th>'
            f'<th>Lag over the window</th></tr></thead><tbody>{rows}</tbody></table></section>'
            f'{_changes(data, group)}{_json_links(data.cluster, group)}')


def _partition_row(data: PageData, p: PartitionReport) -> str:
    points = [(seen.observed_at, seen.lag) for seen in p.window]
    committed_at = p.window[-1].committed_at if p.window else None
    return (f'<tr data-topic="{_e(p.topic)}" data-partition="{p.partition}" '
            f'data-status="{p.status.name}"><td>{_e(p.topic)}</td>'
            f'<td class="num">{p.partition}</td>'
            f'<td class="owner">{_e(p.owner) if p.owner else _quiet("nobody")}</td>'
            f'<td class="num offset">{_offsets(p)}</td>'
            f'<td class="committed-at">{_when(committed_at, data.scanned_at)}</td>'
            f'<td class="num log-end">{_number(p.log_end)}</td>'
            f'<td class="num lag">{_number(p.lag)}</td><td>{_badge(p.status)}</td>'
            f'<td>{_chart(points, data, 120, 28, f"lag of {p.topic}/{p.partition}")}</td></tr>')


def _offsets(p: PartitionReport) -> str:
    """The offset a member resumes at, and where each storage's copy differs."""
    if p.zookeeper_offset is not None and p.kafka_offset is not None:
        if p.zookeeper_offset == p.kafka_offset:
            return f'{p.zookeeper_offset:,} <span class="quiet">(both)</span>'
        return (f'{max(p.zookeeper_offset, p.kafka_offset):,} <span class="quiet">'
                f'(ZooKeeper {p.zookeeper_offset:,}, Kafka {p.kafka_offset:,})</span>')
    if p.zookeeper_offset is not None:
        return f'{p.zookeeper_offset:,} <span class="quiet">(ZooKeeper)</span>'
    if p.kafka_offset is not None:
        return f'{p.kafka_offset:,} <span class="quiet">(Kafka)</span>'
    return _quiet("none")


def _changes(data: PageData, group: str) -> str:
    changes = data.changes.get(group, ())
    rows = "".join(
        f'<tr><td>{_when(change.at, data.scanned_at)}</td>'
        f'<td>{_badge(change.before) if change.before is not None else _quiet("first seen")}'
        f'</td><td>{_badge(change.after)}</td></tr>' for change in reversed(changes))
    return ('<section><h2>Status changes the exporter saw</h2>'
            + (f'<table class="changes"><thead><tr><th>When</th><th>From</th><th>To</th></tr>'
               f'</thead><tbody>{rows}</tbody></table>' if rows else _quiet("none yet"))
            + '</section>')


def _json_links(cluster: str, group: str) -> str:
    items = "".join(f'<li><a class="json" href="{_e(path)}"><code>{_e(path)}</code></a> '
                    f'{what}</li>' for path, what in burrow_paths(cluster, group))
    return f'<section><h2>The same as JSON (Burrow\'s API)</h2><ul>{items}</ul></section>'


# -- parts --------------------------------------------------------------------------------

def _chart(points: Sequence[tuple[float, int]], data: PageData, width: int, height: int,
           label: str, *, axes: bool = False) -> str:
    """Lag over the status window ending at the last scan: a line through each scan's lag,
    a dot at each (with its time and lag on hover), the y axis from 0 to the most lag."""
    if not points:
        return _quiet("no offsets seen yet")
    end = next((at for at in (data.observed_at, data.scanned_at) if at is not None),
               points[-1][0])
    start = end - data.window_s
    most = max(lag for _, lag in points)
    pad = 3
    left = 48 if axes else pad

    def x(at: float) -> float:
        return left + (width - left - pad) * max(0.0, at - start) / (end - start)

    def y(lag: int) -> float:
        return height - pad - (height - 2 * pad) * (lag / most if most else 0)

    xy = [(x(at), y(lag)) for at, lag in points]
    line = " ".join(f"{px:.1f},{py:.1f}" for px, py in xy)
    dots = "".join(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="{2.5 if axes else 1.8}">'
                   f'<title>{_stamp(at)}: lag {lag:,}</title></circle>'
                   for (px, py), (at, lag) in zip(xy, points, strict=True))
    scale = (f'<text x="{left - 4}" y="{pad + 9}" text-anchor="end">{most:,}</text>'
             f'<text x="{left - 4}" y="{height - pad}" text-anchor="end">0</text>'
             f'<line class="axis" x1="{left}" y1="{height - pad}" x2="{width - pad}" '
             f'y2="{height - pad}"/><line class="axis" x1="{left}" y1="{pad}" x2="{left}" '
             f'y2="{height - pad}"/>' if axes else "")
    lags = " ".join(str(lag) for _, lag in points)
    return (f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} '
            f'{height}" role="img" data-points="{len(points)}" data-lags="{lags}" '
            f'aria-label="{_e(label)}: {lags}"><title>{_e(label)} over the last '
            f'{_duration(data.window_s)}: {lags}</title>{scale}'
            f'<polyline points="{line}"/>{dots}</svg>')


def _badge(status: Status) -> str:
    return (f'<span class="status s-{status.name.lower()}" title="{MEANINGS[status]}">'
            f'{status.name}</span>')


def _fence(fence: Fence | None, now: float | None) -> str:
    if fence is None:
        return _quiet("none")
    return (f'<span class="fence-{fence.phase}">{fence.phase} → '
            f'{_COORDINATIONS[fence.to]}</span> since {_when(fence.started_ms / 1000, now)}')


def _members(report: GroupReport) -> str:
    if report.coordinator_members is None:
        return str(report.members)
    on_zookeeper = report.members - report.coordinator_members
    return (f'{report.members} <span class="quiet">({on_zookeeper} ZooKeeper, '
            f'{report.coordinator_members} Kafka)</span>') if on_zookeeper else str(report.members)


def _legend() -> str:
    items = "".join(f"<li>{_badge(s)} {MEANINGS[s]}</li>" for s in reversed(Status)
                    if s in MEANINGS)
    return ('<footer><h2>What the marks mean</h2><ul class="legend">' + items + '</ul>'
            '<p>Charts: the lag at each scan of the status window (dots), from 0 at the '
            'bottom to the most lag in the window at the top; the right edge is the last '
            'scan. Members on: where the group\'s members coordinate. Offsets in: where its '
            'committed offsets are kept. Cutover: the fence of <code>group cutover</code>, '
            'draining (members leaving) or switched, to which coordination, since when.</p>'
            '</footer>')


def _scan_line(data: PageData) -> str:
    if data.scanned_at is None:
        return "No scan has finished yet."
    return (f'Cluster <b>{_e(data.cluster)}</b> · last scan {_stamp(data.scanned_at)} · '
            f'status window {_duration(data.window_s)} (a scan every '
            f'{_duration(data.interval_s)}) · this page refreshes itself')


def _document(title: str, body: str, interval_s: float) -> str:
    refresh_ms = int(max(2.0, min(interval_s, 30.0)) * 1000)
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{_e(title)} · zkconsumer exporter</title>'
            '<link rel="stylesheet" href="/ui/page.css"></head>'
            f'<body data-refresh-ms="{refresh_ms}">{body}'
            '<script src="/ui/page.js"></script></body></html>')


def _when(at: float | None, now: float | None) -> str:
    if at is None:
        return _quiet("unknown")
    age = "" if now is None else f' <span class="quiet">({_duration(max(0.0, now - at))} ago)</span>'
    return f'<time datetime="{_iso(at)}">{_stamp(at)}</time>{age}'


def _stamp(at: float | None) -> str:
    return "" if at is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _number(value: int | None) -> str:
    return _quiet("unknown") if value is None else f"{value:,}"


def _quiet(text: str) -> str:
    return f'<span class="quiet">{text}</span>'


def _e(text: str) -> str:
    return escape(text, quote=True)


# -- the paths ----------------------------------------------------------------------------

_HTML = "text/html; charset=utf-8"
_ASSETS = {"/ui/page.css": "text/css; charset=utf-8",
           "/ui/page.js": "text/javascript; charset=utf-8"}


# The pages' paths, as the exporter's start line names them (the assets are the pages' own).
PAGE_PATHS = ("/", "/group/<group>")


def page_reply(path: str, query: str, data: PageData) -> Reply | None:
    """The answer to one of the pages' paths; None for any other path. `fragment=1` in the
    query answers only the live part, which the page's script puts in place."""
    fragment = "1" in parse_qs(query).get("fragment", ())
    if path == "/":
        listed = ListQuery.parse(query)
        return Reply(200, (index_fragment(data, listed) if fragment
                           else index_page(data, listed)).encode(), _HTML)
    if path.startswith("/group/") and path.count("/") == 2:
        group = unquote(path[len("/group/"):])
        html = group_fragment(data, group) if fragment else group_page(data, group)
        if html is None:
            return Reply(404, _document("No such group", (
                f'<header><p><a href="/">← every group</a></p><h1>No group '
                f'<span class="group-name">{_e(group)}</span></h1></header><p>The last scan '
                'did not see this group.</p>'), data.interval_s).encode(), _HTML)
        return Reply(200, html.encode(), _HTML)
    if path in _ASSETS:
        return Reply(200, _asset(path.rsplit("/", 1)[1]), _ASSETS[path])
    return None


@functools.cache
def _asset(name: str) -> bytes:
    return resources.files("zkconsumer.exporter").joinpath("page_assets").joinpath(name).read_bytes()

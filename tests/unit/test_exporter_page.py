"""The exporter's own pages from reports (pure): what the list and a group's page say, the
filter and pager, the charts' points, escaping, the status changes kept, and the paths as the
service answers them."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from zkconsumer.exporter.group_story import (
    StatusChange,
    lag_points,
    place_of,
    status_changes,
    worst_first,
)
from zkconsumer.exporter.page_view import (
    PAGE_SIZE,
    ListQuery,
    PageData,
    group_page,
    index_fragment,
    index_page,
    page_reply,
)
from zkconsumer.exporter.service import ExporterSettings, LagExporter
from zkconsumer.lag.report import GroupReport, PartitionReport
from zkconsumer.lag.status import Observation, Status, WindowRules
from zkconsumer.znodes.fence import Fence

NOW = 1_800_000_000.0


def partition(topic="t", number=0, *, lags=(5,), status=Status.OK, owner="g_host-1-0",
              zookeeper=100, kafka=None) -> PartitionReport:
    window = tuple(Observation(NOW - 10 * (len(lags) - 1 - i), 100, 100 + lag, NOW - 60)
                   for i, lag in enumerate(lags))
    return PartitionReport(topic, number, zookeeper, kafka, 100 + lags[-1], lags[-1], owner,
                           status, window, 1.0)


def report(name, *partitions, status=None, members=1, coordinator=None) -> GroupReport:
    status = status or max((p.status for p in partitions), default=Status.OK)
    return GroupReport(name, members, tuple(partitions), status, 1.0, coordinator)


def data(*reports, fences=None, changes=None) -> PageData:
    return PageData("local", 10.0, 30.0, NOW, {r.group: r for r in reports}, fences or {},
                    changes or {})


def rows(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<tr class="row-\w+" data-group="([^"]*)" data-status="(\w+)"', html)


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.texts: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, text):
        self.texts.append(text)


def parsed(html: str) -> _Elements:
    parser = _Elements()
    parser.feed(html)
    return parser


def test_the_list_is_worst_first_with_status_words_place_fence_members_and_worst_partition():
    stalled = report("b-stalled", partition(lags=(3, 7), status=Status.STALL),
                     partition(number=1, lags=(0, 1)))
    fine = report("a-fine", partition(lags=(0,)), members=2, coordinator=2)
    warned = report("c-warned", partition(lags=(1, 2), status=Status.WARN, zookeeper=None,
                                          kafka=98))
    fenced = Fence("kafka", "draining", int((NOW - 120) * 1000))
    html = index_page(data(fine, stalled, warned, fences={"b-stalled": fenced}), ListQuery())
    assert rows(html) == [("b-stalled", "STALL"), ("c-warned", "WARN"), ("a-fine", "OK")]
    stalled_row = html[html.index('data-group="b-stalled"'):html.index('data-group="c-warned"')]
    assert '<span class="status s-stall"' in stalled_row and ">STALL</span>" in stalled_row
    assert "draining → Kafka's coordinator</span> since" in stalled_row
    assert "(2 min ago)" in stalled_row
    assert '<td class="num lag">8</td>' in stalled_row  # 7 + 1
    assert "t/0: lag 7" in stalled_row
    warned_row = html[html.index('data-group="c-warned"'):html.index('data-group="a-fine"')]
    assert '<td class="offsets-in">Kafka</td>' in warned_row
    assert '<td class="members-on">ZooKeeper</td>' in warned_row
    fine_row = html[html.index('data-group="a-fine"'):]
    assert '<td class="members-on">Kafka</td>' in fine_row
    assert "3 groups watched" in html and '<script src="/ui/page.js">' in html


def test_the_chart_draws_each_scan_of_the_window_and_totals_the_partitions():
    group = report("g", partition(lags=(3, 5, 8)), partition(number=1, lags=(1, 1, 2)))
    assert [lag for _, lag in lag_points(group)] == [4, 6, 10]
    html = index_fragment(data(group), ListQuery())
    assert 'data-points="3" data-lags="4 6 10"' in html
    assert html.count("<circle") == 3
    # The last scan at the right edge (120 wide, 3 of padding), the first 20 s of 30 before.
    assert re.findall(r'<circle cx="([\d.]+)"', html) == ["41.0", "79.0", "117.0"]
    page = group_page(data(group), "g")
    assert 'data-points="3" data-lags="3 5 8"' in page  # partition 0's own chart
    assert 'data-points="3" data-lags="1 1 2"' in page


def test_the_filter_by_name_and_status_and_the_pager():
    many = [report(f"grp-{i:03d}", partition(lags=(i,))) for i in range(PAGE_SIZE + 30)]
    stalled = report("other-stalled", partition(lags=(9,), status=Status.STALL))
    shown = data(*many, stalled)
    assert rows(index_fragment(shown, ListQuery.parse("q=STALLED"))) == [
        ("other-stalled", "STALL")]
    assert rows(index_fragment(shown, ListQuery.parse("status=stall"))) == [
        ("other-stalled", "STALL")]
    assert rows(index_fragment(shown, ListQuery.parse("q=grp&status=STALL"))) == []
    first = index_fragment(shown, ListQuery.parse("q=grp"))
    assert len(rows(first)) == PAGE_SIZE and "page 1 of 2" in first
    assert rows(first)[0] == (f"grp-{PAGE_SIZE + 29:03d}", "OK")  # the most lag first
    assert 'href="/?q=grp&amp;page=2"' in first
    second = index_fragment(shown, ListQuery.parse("q=grp&page=2"))
    assert len(rows(second)) == 30
    assert (f"Showing {PAGE_SIZE + 1}–{PAGE_SIZE + 30} of {PAGE_SIZE + 30} matching the filter"
            in second)
    assert ListQuery.parse("status=BOGUS&page=-3") == ListQuery()
    assert "No group matches." in index_fragment(shown, ListQuery.parse("q=nothing"))


def test_every_name_is_escaped_in_text_attributes_and_links():
    hostile = '<script>alert("g")</script>&x'
    group = report(hostile, partition(topic='t"><img src=x>', owner="<b>o</b>"))
    for html in (index_page(data(group), ListQuery(name=hostile)), group_page(data(group), hostile)):
        elements = parsed(html)
        assert elements.tags.count("script") == 1  # the page's own
        assert "img" not in elements.tags
        assert hostile in "".join(elements.texts)
    assert "<b>o</b>" in "".join(parsed(group_page(data(group), hostile)).texts)
    page = group_page(data(group), hostile)
    assert "/group/%3Cscript%3Ealert%28%22g%22%29%3C%2Fscript%3E%26x" in index_page(
        data(group), ListQuery())
    assert "/v3/kafka/local/consumer/%3Cscript%3Ealert%28%22g%22%29%3C%2Fscript%3E%26x/lag" in page


def test_the_group_page_shows_each_partition_the_changes_and_the_json_paths():
    group = report("g", partition(lags=(4,), status=Status.STALL, zookeeper=100, kafka=100),
                   partition(number=1, lags=(2,), owner=None, zookeeper=90, kafka=95),
                   members=3, coordinator=1)
    changes = {"g": (StatusChange(NOW - 300, None, Status.OK),
                     StatusChange(NOW - 30, Status.OK, Status.STALL))}
    page = group_page(data(group, changes=changes), "g")
    assert page is not None
    table = re.findall(r'data-partition="(\d+)".*?<td class="owner">(.*?)</td>.*?'
                       r'<td class="num lag">(.*?)</td>', page)
    assert table == [("0", "g_host-1-0", "4"), ("1", '<span class="quiet">nobody</span>', "2")]
    assert "100 <span class=\"quiet\">(both)</span>" in page
    assert "95 <span class=\"quiet\">(ZooKeeper 90, Kafka 95)</span>" in page
    assert "3 <span class=\"quiet\">(2 ZooKeeper, 1 Kafka)</span>" in page
    assert "Members on</dt><dd class=\"fact-members-on\">ZooKeeper and Kafka" in page
    history = page[page.index("Status changes"):]
    assert history.index(">STALL<") < history.index("first seen")  # newest first
    for path in ("/v3/kafka/local/consumer/g/lag", "/v3/kafka/local/consumer/g/status",
                 "/v3/kafka/local/consumer/g"):
        assert f'href="{path}"' in page
    assert group_page(data(group), "nope") is None


def test_status_changes_keep_the_first_sighting_each_change_and_forget_a_gone_group():
    first = status_changes({}, [report("g", partition()), report("h", partition())], 1.0)
    assert first["g"] == (StatusChange(1.0, None, Status.OK),)
    same = status_changes(first, [report("g", partition())], 2.0)
    assert same == {"g": first["g"]}  # "h" gone
    turned = status_changes(same, [report("g", partition(status=Status.STOP))], 3.0)
    assert turned["g"][-1] == StatusChange(3.0, Status.OK, Status.STOP)
    known = {"g": turned["g"]}
    for step in range(30):
        known = status_changes(known, [report("g", partition(
            status=Status.WARN if step % 2 else Status.OK))], 4.0 + step, kept=5)
    assert len(known["g"]) == 5 and known["g"][-1].at == 33.0


def test_place_and_worst_first_read_the_report():
    both = report("g", partition(zookeeper=1, kafka=2), members=3, coordinator=1)
    assert (place_of(both).members_on, place_of(both).offsets_in) == ("both", "both")
    alone = report("s", partition(zookeeper=None, kafka=None, owner=None), members=0)
    assert (place_of(alone).members_on, place_of(alone).offsets_in) == ("none", "none")
    reports = {r.group: r for r in (report("a", partition(lags=(1,))),
                                    report("b", partition(lags=(9,))),
                                    report("c", partition(status=Status.REWIND)))}
    assert [r.group for r in worst_first(reports)] == ["c", "b", "a"]


def test_the_paths_answer_pages_fragments_assets_and_a_404_for_an_unknown_group():
    shown = data(report("a/b", partition()))
    whole = page_reply("/", "", shown)
    assert whole.status == 200 and whole.body.startswith(b"<!doctype html>")
    part = page_reply("/", "q=a&fragment=1", shown)
    assert part.body.startswith(b'<p class="counts"') and b"<html" not in part.body
    assert page_reply("/group/a%2Fb", "", shown).status == 200
    assert page_reply("/group/a%2Fb", "fragment=1", shown).body.startswith(b'<p class="counts"')
    missing = page_reply("/group/zz", "", shown)
    assert missing.status == 404 and b"did not see this group" in missing.body
    css, js = page_reply("/ui/page.css", "", shown), page_reply("/ui/page.js", "", shown)
    assert css.content_type.startswith("text/css") and b".s-stall" in css.body
    assert js.content_type.startswith("text/javascript") and b"fragment" in js.body
    assert page_reply("/metrics", "", shown) is None
    assert page_reply("/v3/kafka", "", shown) is None


def test_the_service_serves_the_page_from_the_last_scan_with_fences_and_changes():
    clock = [NOW]
    fences = {"g": Fence("zookeeper", "switched", int(NOW * 1000)), "gone": Fence(
        "kafka", "draining", 0)}
    exporter = LagExporter(None, None, ExporterSettings(10, WindowRules(3, 30)),
                           clock=lambda: clock[0], fences=lambda: fences)
    answers = iter([[report("g", partition())], [report("g", partition(status=Status.STOP))]])
    exporter._scan = lambda now: next(answers)
    assert b"No scan has finished yet" in exporter.route("/").body
    assert exporter.scan_once()
    clock[0] += 10
    assert exporter.scan_once()
    page = exporter.route("/group/g").body.decode()
    assert "switched → ZooKeeper</span> since" in page
    assert page.count("<tr><td><time") == 2  # first seen OK, then STOP
    assert exporter.route("/v3/kafka/local/consumer/g/lag").status == 200

"""Burrow's read API from a scan's reports: every path answers with Burrow 1.2's shapes (see
support.burrow_shapes) and with the figures of the scan."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from support import burrow_shapes as shapes
from support.burrow_shapes import mismatches

from zkconsumer.exporter.burrow_config import (
    BurrowSetup,
    Connections,
    KafkaClientProfile,
    NotifierSummary,
    burrow_log_level,
    client_profile,
)
from zkconsumer.exporter.burrow_view import burrow_reply
from zkconsumer.exporter.service import ExporterSettings, LagExporter
from zkconsumer.lag.history import OffsetHistory
from zkconsumer.lag.report import GroupState, ScanInputs, ZookeeperOffset, group_partitions, scan
from zkconsumer.lag.status import Status, WindowRules
from zkconsumer.model import TopicPartition
from zkconsumer.znodes.consumers import ConsumerRegistration

RULES = WindowRules(samples=3, span_s=30)
T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
PARTITIONS = {"t": [0, 1, 2], "other": [0]}
CONNECTIONS = Connections(("zk1:2181", "zk2:2181"), "/kafka", 6.0, ("kafka1:9092",),
                          KafkaClientProfile("0.9"), "orders-.*", "0.0.0.0:9308", "info")
SETUP = BurrowSetup("local", 10.0, RULES.samples, True, CONNECTIONS)
HEALTHY = (True, "1 group")

# Answers of Burrow 1.2.1 itself, as recorded (see support.burrow_shapes).
BURROW_ANSWERS = [
    (shapes.CLUSTER_DETAIL, {
        "error": False, "message": "cluster module detail returned",
        "module": {"class-name": "kafka", "servers": ["127.0.0.1:27101"],
                   "client-profile": {"name": "old", "client-id": "burrow-capture",
                                      "kafka-version": "0.9.0.1", "tls": None, "sasl": None},
                   "topic-refresh": 10, "offset-refresh": 5},
        "request": {"url": "/v3/kafka/local", "host": "vm"}}),
    (shapes.CONSUMER_DETAIL, {
        "error": False, "message": "consumer detail returned",
        "topics": {"orders": [
            {"offsets": [None, None, {"offset": 7, "timestamp": 1795735078921, "lag": 3}],
             "owner": "", "client_id": "", "current-lag": 3},
            {"offsets": [], "owner": "", "client_id": "", "current-lag": 0}]},
        "request": {"url": "/v3/kafka/local/consumer/grp-kafka", "host": "vm"}}),
    (shapes.CONSUMER_STATUS, {
        "error": False, "message": "consumer status returned",
        "status": {"cluster": "local", "group": "grp-idle", "status": "OK",
                   "complete": 0.6666667, "partitions": [], "partition_count": 3,
                   "maxlag": {"topic": "idle", "partition": 0, "owner": "", "client_id": "",
                              "status": "OK",
                              "start": {"offset": 2, "timestamp": 1795735069915, "lag": 0},
                              "end": {"offset": 2, "timestamp": 1795735075736, "lag": 0},
                              "current_lag": 0, "complete": 1},
                   "totallag": 0},
        "request": {"url": "/v3/kafka/local/consumer/grp-idle/status", "host": "vm"}}),
]


@pytest.mark.parametrize(("shape", "answer"), BURROW_ANSWERS)
def test_the_recorded_shapes_fit_burrows_own_answers(shape, answer):
    assert mismatches(answer, shape) == []


def test_the_shape_checker_names_a_missing_key_a_wrong_type_and_a_bool_for_a_number():
    answer = json.loads(json.dumps(BURROW_ANSWERS[1][1]))
    del answer["topics"]["orders"][0]["client_id"]
    answer["topics"]["orders"][1]["current-lag"] = True
    answer["request"]["url"] = 3
    assert mismatches(answer, shapes.CONSUMER_DETAIL) == [
        "$.topics.orders[0].client_id: missing",
        "$.topics.orders[1].current-lag: expected int, got True",
        "$.request.url: expected str, got 3"]


def static_member(*topics: str) -> ConsumerRegistration:
    return ConsumerRegistration.static(dict.fromkeys(topics, 1), 0)


def scans(states, log_ends, kafka=None, times=(1000.0,)):
    """One scan at each time, the same numbers each time; the last scan's reports."""
    history = OffsetHistory(RULES)
    layout = {state.name: group_partitions(state, [], PARTITIONS.get) for state in states}
    for now in times:
        reports = scan(ScanInputs(states, layout, log_ends, kafka or {}), history, now)
    return {report.group: report for report in reports}


def orders_and_idle():
    """`orders`: a member owning partition 0 (moving), partition 1 long stopped and owned by
    nobody, partition 2 with no offset; `idle`: a member reading `other`, caught up, its offset
    only in Kafka."""
    orders = GroupState("orders", members={"a": static_member("t")}, owners={T0: "a-0"},
                        zookeeper_offsets={T0: ZookeeperOffset(5, 999.0),
                                           T1: ZookeeperOffset(2, 1.0)})
    idle = GroupState("idle", members={"b": static_member("other")})
    return scans([orders, idle], {T0: 5, T1: 9, T2: 4,
                                  TopicPartition("other", 0): 12},
                 kafka={"idle": {TopicPartition("other", 0): 12}}, times=(990.0, 1000.0))


def answer(path, reports=None, setup=SETUP, health=HEALTHY, shape=None, status=200):
    reply = burrow_reply(path, setup, orders_and_idle() if reports is None else reports, health)
    assert reply is not None and reply.status == status, reply
    document = json.loads(reply.body)
    if shape is not None:
        assert mismatches(document, shape) == []
    return document


def test_cluster_list():
    assert answer("/v3/kafka", shape=shapes.CLUSTER_LIST)["clusters"] == ["local"]


def test_cluster_detail_answers_the_brokers_and_refresh_where_it_answered_500():
    found = answer("/v3/kafka/local", shape=shapes.CLUSTER_DETAIL)
    assert found["message"] == "cluster module detail returned"
    module = found["module"]
    assert (module["servers"], module["client-profile"]["kafka-version"]) == (
        ["kafka1:9092"], "0.9")
    assert (module["topic-refresh"], module["offset-refresh"]) == (10, 10)
    missing = answer("/v3/kafka/other", status=404, shape=shapes.ERROR)
    assert (missing["error"], missing["message"]) == (True, "cluster module not found")


def test_the_service_routes_the_cluster_detail():
    exporter = LagExporter(None, None, ExporterSettings(10, RULES, connections=CONNECTIONS),
                           clock=lambda: 1000.0)
    reply = exporter.route("/v3/kafka/local")
    assert reply is not None and reply.status == 200
    assert json.loads(reply.body)["module"]["servers"] == ["kafka1:9092"]


def test_consumer_list():
    listed = answer("/v3/kafka/local/consumer", shape=shapes.CONSUMER_LIST)
    assert listed["consumers"] == ["idle", "orders"]
    missing = answer("/v3/kafka/other/consumer", status=404, shape=shapes.ERROR)
    assert missing["message"] == "cluster not found"


def test_consumer_detail_gives_each_partitions_window_in_burrows_ring():
    found = answer("/v3/kafka/local/consumer/orders", shape=shapes.CONSUMER_DETAIL)
    assert found["message"] == "consumer detail returned"
    moving, stopped, without_offset = found["topics"]["t"]
    assert moving["offsets"][0] is None, "a slot of the ring not filled yet"
    assert [(o["offset"], o["timestamp"], o["lag"]) for o in moving["offsets"][1:]] == [
        (5, 990_000, 0), (5, 990_000, 0)]
    assert (moving["owner"], moving["current-lag"]) == ("a-0", 0)
    assert [o["timestamp"] for o in stopped["offsets"][1:]] == [1000, 1000], "the znode's mtime"
    assert (stopped["owner"], stopped["current-lag"]) == ("", 7)
    assert without_offset == {"offsets": [], "owner": "", "client_id": "", "current-lag": 0}
    in_kafka = answer("/v3/kafka/local/consumer/idle")["topics"]
    assert list(in_kafka) == ["other"] and in_kafka["other"][0]["current-lag"] == 0


def test_consumer_detail_lists_a_partition_the_group_has_nothing_for_up_to_the_highest():
    sparse = scans([GroupState("g", zookeeper_offsets={
        TopicPartition("gone", 2): ZookeeperOffset(3, 999.0)})], {})
    partitions = answer("/v3/kafka/local/consumer/g", reports=sparse)["topics"]["gone"]
    assert [p["offsets"] for p in partitions] == [[], [], []]


def test_a_partition_number_no_topic_has_costs_no_list_of_billions():
    """An offset znode named 2147483647 made every request for the group's detail build a
    list of two billion entries (1.1 GB for a name of 3,000,000)."""
    hostile = scans([GroupState("g", zookeeper_offsets={
        TopicPartition("t", 1): ZookeeperOffset(3, 999.0),
        TopicPartition("t", 2**31 - 1): ZookeeperOffset(3, 999.0)})], {})
    partitions = answer("/v3/kafka/local/consumer/g", reports=hostile)["topics"]["t"]
    assert len(partitions) == 3  # the topic's three; the one named 2147483647 is left out


def test_an_unknown_consumers_detail_is_burrows_404():
    for path in ("/v3/kafka/local/consumer/nobody", "/v3/kafka/other/consumer/orders"):
        missing = answer(path, status=404, shape=shapes.ERROR)
        assert (missing["error"], missing["message"]) == (True, "cluster or consumer not found")


def test_status_lists_only_partitions_not_ok_and_lag_lists_all():
    status = answer("/v3/kafka/local/consumer/orders/status", shape=shapes.CONSUMER_STATUS)
    assert (status["error"], status["message"]) == (False, "consumer status returned")
    body = status["status"]
    assert (body["status"], body["partition_count"], body["totallag"]) == ("ERR", 2, 7)
    assert [(p["partition"], p["status"]) for p in body["partitions"]] == [(1, "STOP")]
    assert body["maxlag"]["partition"] == 1 and body["maxlag"]["current_lag"] == 7
    assert body["maxlag"]["end"] == {"offset": 2, "timestamp": 1000, "observedAt": 1_000_000,
                                     "lag": 7}
    lag = answer("/v3/kafka/local/consumer/orders/lag", shape=shapes.CONSUMER_STATUS)
    assert [p["status"] for p in lag["status"]["partitions"]] == ["OK", "STOP"]
    assert lag["status"]["partitions"][0]["owner"] == "a-0"


@pytest.mark.parametrize("path", ["/v3/kafka/local/consumer/nobody/status",
                                  "/v3/kafka/local/consumer/nobody/lag",
                                  "/v3/kafka/other/consumer/nobody/status"])
def test_an_unknown_groups_status_is_a_404_carrying_burrows_notfound_status(path):
    missing = answer(path, status=404, shape=shapes.CONSUMER_STATUS)
    assert missing["error"] is False
    assert missing["status"] == {"cluster": path.split("/")[3], "group": "nobody",
                                 "status": "NOTFOUND", "complete": 1.0, "partitions": [],
                                 "partition_count": 0, "maxlag": None, "totallag": 0}


def test_topic_list_and_detail():
    assert answer("/v3/kafka/local/topic", shape=shapes.TOPIC_LIST)["topics"] == ["other", "t"]
    assert answer("/v3/kafka/local/topic/t", shape=shapes.TOPIC_DETAIL)["offsets"] == [5, 9, 4]
    for path in ("/v3/kafka/local/topic/none", "/v3/kafka/other/topic/t"):
        missing = answer(path, status=404, shape=shapes.ERROR)
        assert missing["message"] == "cluster or topic not found"
    assert answer("/v3/kafka/other/topic", status=404)["message"] == "cluster not found"


def test_topic_consumers_are_the_groups_with_an_offset_for_it():
    reports = orders_and_idle()
    reports.update(scans([GroupState("member-only", members={"b": static_member("t")})],
                         {T0: 5, T1: 9, T2: 4}))
    found = answer("/v3/kafka/local/topic/t/consumers", reports=reports,
                   shape=shapes.TOPIC_CONSUMERS)
    assert (found["message"], found["consumers"]) == ("consumers of topic returned", ["orders"])
    assert answer("/v3/kafka/local/topic/other/consumers")["consumers"] == ["idle"]
    assert answer("/v3/kafka/local/topic/none/consumers")["consumers"] == [], "as Burrow: 200"
    missing = answer("/v3/kafka/other/topic/t/consumers", status=404, shape=shapes.ERROR)
    assert missing["message"] == "cluster not found"


def test_admin_is_good_while_scans_work_and_says_why_not_otherwise():
    good = burrow_reply("/burrow/admin", SETUP, {}, HEALTHY)
    assert (good.status, good.body, good.content_type) == (
        200, b"GOOD", "text/plain; charset=utf-8")
    bad = burrow_reply("/burrow/admin", SETUP, {}, (False, "no scan has finished yet"))
    assert (bad.status, bad.body) == (503, b"no scan has finished yet")


def test_log_level():
    assert answer("/v3/admin/loglevel", shape=shapes.LOG_LEVEL)["level"] == "info"
    assert burrow_log_level("WARNING") == "warn" and burrow_log_level("DEBUG") == "debug"


def test_main_config_tells_the_zookeeper_watched_and_the_address_served():
    found = answer("/v3/config", shape=shapes.MAIN_CONFIG)
    assert found["zookeeper"] == {"servers": ["zk1:2181", "zk2:2181"], "timeout": 6,
                                  "root-path": "/kafka"}
    assert found["httpserver"]["default"]["address"] == "0.0.0.0:9308"
    assert found["logging"]["level"] == "info"


@pytest.mark.parametrize(("coordinator", "modules"), [
    ("cluster", ["local"]), ("consumer", ["zookeeper", "kafka"]), ("storage", ["default"]),
    ("evaluator", ["default"]), ("notifier", [])])
def test_config_module_lists_and_details(coordinator, modules):
    listed = answer(f"/v3/config/{coordinator}", shape=shapes.MODULE_LIST)
    assert (listed["message"], listed["coordinator"], listed["modules"]) == (
        "module list returned", coordinator, modules)
    for name in modules:
        detail = answer(f"/v3/config/{coordinator}/{name}",
                        shape=shapes.MODULE_DETAIL[coordinator])
        assert detail["message"] == f"{coordinator} module detail returned"
    missing = answer(f"/v3/config/{coordinator}/nope", status=404, shape=shapes.ERROR)
    assert missing["message"] == f"{coordinator} module not found"


def test_config_modules_say_where_offsets_are_read_and_the_window():
    zookeeper = answer("/v3/config/consumer/zookeeper")["module"]
    assert (zookeeper["class-name"], zookeeper["servers"], zookeeper["zookeeper-path"],
            zookeeper["group-whitelist"]) == ("kafka_zk", ["zk1:2181", "zk2:2181"], "/kafka",
                                              "orders-.*")
    kafka = answer("/v3/config/consumer/kafka")["module"]
    assert (kafka["class-name"], kafka["servers"]) == ("kafka", ["kafka1:9092"])
    storage = answer("/v3/config/storage/default")["module"]
    assert (storage["intervals"], storage["min-distance"]) == (3, 10)
    without_kafka = BurrowSetup("local", 0.5, 3, False, CONNECTIONS)
    assert answer("/v3/config/consumer", setup=without_kafka)["modules"] == ["zookeeper"]
    assert answer("/v3/config/evaluator/default", setup=without_kafka)["module"][
        "expire-cache"] == 1, "whole seconds, as Burrow's"


def test_the_notifier_is_burrows_http_notifier_module_when_the_exporter_has_one():
    notified = BurrowSetup("local", 10.0, 3, True, dataclasses.replace(
        CONNECTIONS, notifier=NotifierSummary("http://alerts:8080/hook", int(Status.WARN),
                                              None, "orders-.*", 5.0)))
    listed = answer("/v3/config/notifier", setup=notified, shape=shapes.MODULE_LIST)
    assert listed["modules"] == ["default"]
    module = answer("/v3/config/notifier/default", setup=notified,
                    shape=shapes.MODULE_DETAIL["notifier"])["module"]
    assert (module["class-name"], module["url-open"], module["url-close"], module["threshold"],
            module["interval"], module["send-close"], module["group-whitelist"]) == (
        "http", "http://alerts:8080/hook", "http://alerts:8080/hook", 2, 0, True, "orders-.*")


def test_client_profile_tells_tls_and_sasl_without_secrets():
    profile = client_profile({"security_protocol": "SASL_SSL", "ssl_cafile": "ca.pem",
                              "sasl_plain_username": "alice", "sasl_plain_password": "secret"},
                             (0, 10, 2))
    assert profile.kafka_version == "0.10.2"
    assert profile.tls == {"name": "exporter", "noverify": False, "certfile": "",
                           "keyfile": "", "cafile": "ca.pem"}
    assert profile.sasl == {"name": "exporter", "handshake-first": True, "username": "alice"}
    plain = client_profile({}, None)
    assert (plain.kafka_version, plain.tls, plain.sasl) == ("", None, None)
    secured = BurrowSetup("local", 10, 3, True, Connections(client=profile))
    cluster = answer("/v3/kafka/local", setup=secured, shape=shapes.CLUSTER_DETAIL)
    assert "secret" not in json.dumps(cluster)


@pytest.mark.parametrize("path", ["/v3", "/v3/nope", "/v3/kafka/local/nope",
                                  "/v3/kafka/local/consumer/orders/nope", "/v3/config/nope",
                                  "/v3/admin", "/burrow"])
def test_other_burrow_paths_are_burrows_invalid_request(path):
    found = answer(path, status=404, shape=shapes.INVALID_REQUEST)
    assert found == {"error": True, "message": "invalid request type", "result": {}}


def test_paths_not_burrows_are_left_to_the_server():
    assert burrow_reply("/metrics", SETUP, {}, HEALTHY) is None
    assert burrow_reply("/", SETUP, {}, HEALTHY) is None


def test_the_exporters_start_line_names_every_path_it_serves():
    """The start line named /metrics and /healthz alone; the pages and Burrow's paths are
    served too, every one the Burrow module lists."""
    from support.log_capture import captured_logs

    from zkconsumer.exporter import burrow_view
    from zkconsumer.metrics import MetricsServer

    exporter = LagExporter(None, None, ExporterSettings(10, RULES, connections=CONNECTIONS),
                           clock=lambda: 1000.0)
    listed = [line.split()[0].replace("<cluster>", "local")
              for line in burrow_view.__doc__.splitlines() if line.startswith("  /")]
    assert set(listed) <= set(exporter.paths) and "/" in exporter.paths
    for path in exporter.paths:
        concrete = re.sub(r"\[.*\]", "", path).replace("<group>", "orders").replace("<topic>", "t")
        assert exporter.route(concrete) is not None, path
    with captured_logs() as logs:
        server = MetricsServer("127.0.0.1", 0, exporter.registry, exporter.health,
                               exporter.route, paths=exporter.paths)
        server.stop()
    [started] = [entry for entry in logs if entry["event"] == "serving metrics"]
    assert started["paths"] == ["/metrics", "/healthz", *exporter.paths]

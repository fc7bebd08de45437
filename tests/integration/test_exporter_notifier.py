"""`zkconsumer exporter --notify-url` on the real cluster: a group whose member hangs goes
STALL while its lag grows, then catches up, and a receiver gets exactly one alert and one
recovery, as the command POSTs them."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import pytest
from support.exporter import lag_of
from support.kafka import produce
from support.legacy_groups import kafka_version_args, register_member, write_offsets
from support.waiting import wait_until

pytestmark = pytest.mark.integration


class Receiver:
    """An HTTP server on 127.0.0.1 recording every POST: (path, Content-Type, JSON body)."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, str, dict]] = []
        received = self.posts

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append((self.path, self.headers["Content-Type"], json.loads(body)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def events(self) -> list[tuple[str, str, str]]:
        return [(body["event"], body["status"], body["previous_status"])
                for _path, _type, body in self.posts]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()


def scans_of(found: dict) -> float:
    return found.get(("zkconsumer_exporter_scans_total", (("result", "success"),)), 0)


def test_a_group_that_stalls_and_recovers_is_one_alert_and_one_recovery(
        cluster, zk, topic_factory, unique_name, exporter_process, receiver):
    topic = topic_factory(partitions=1)
    produce(cluster, topic, [b"m"] * 10, partitions=1)
    group = unique_name("stalls")
    # A member that registered, claimed the partition and hangs at offset 4: lag 6.
    write_offsets(zk, group, topic, {0: 4})
    member = register_member(zk, group, topic, owned=[0])
    # A window of 3 scans a quarter second apart: an offset unchanged for 0.75 s is stalled.
    exporter = exporter_process("--zookeeper", cluster.zookeeper_connect, "--interval", "0.25s",
                                "--window-samples", "3", "--group-regex", group,
                                "--notify-url", receiver.url, "--cluster-name", "east",
                                *kafka_version_args(cluster))

    wait_until(lambda: receiver.posts, timeout=30, message="the alert")
    path, content_type, alert = receiver.posts[0]
    assert (path, content_type) == ("/hook", "application/json")
    assert receiver.events() == [("alert", "STALL", "OK")]
    assert (alert["cluster"], alert["group"], alert["total_lag"]) == ("east", group, 6)
    assert alert["partitions"] == [{"topic": topic, "partition": 0, "status": "STALL",
                                    "lag": 6, "owner": f"{member}-0"}]

    # The lag grows while the offset stays: still STALL, and nothing more is sent.
    produce(cluster, topic, [b"n"] * 5, partitions=1)
    wait_until(lambda: lag_of(exporter.scrape(), group, topic, 0) == 11, timeout=30,
               message="the grown lag scanned")
    # The member catches up: one recovery.
    write_offsets(zk, group, topic, {0: 15})
    wait_until(lambda: len(receiver.posts) == 2, timeout=30, message="the recovery")
    assert receiver.events() == [("alert", "STALL", "OK"), ("recovery", "OK", "STALL")]
    recovery = receiver.posts[1][2]
    assert recovery["id"] == alert["id"] and recovery["since"] == alert["since"]
    assert recovery["total_lag"] == 0 and recovery["partitions"] == []

    # Three more scans with the group OK send nothing; the counter says what was sent.
    after = scans_of(exporter.scrape())
    found = wait_until(lambda: (f := exporter.scrape()) and scans_of(f) >= after + 3 and f,
                       timeout=30, message="three more scans")
    assert len(receiver.posts) == 2
    sent = {labels: value for (name, labels), value in found.items()
            if name == "zkconsumer_exporter_notifications_total"}
    assert sent == {(("event", "alert"), ("result", "sent")): 1,
                    (("event", "recovery"), ("result", "sent")): 1}
    assert exporter.stop() == 0

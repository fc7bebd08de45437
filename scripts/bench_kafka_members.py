"""Live members of many Kafka-coordinated groups, for the exporter's bench, in a process of
their own so that their heartbeats are not the exporter's CPU.

Reads a JSON line from stdin: {"bootstrap": "host:port", "members": [[group, topic], ...]};
starts a kafka-python consumer for each (a 0.9 coordinator lists a group only while it has
members), prints "ready N" once every one has its assignment, and closes them all when stdin
closes. They commit nothing: their offsets are committed beforehand.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from kafka import KafkaConsumer

API_VERSION = (0, 9)
_STARTING_AT_ONCE = 32


def member(bootstrap: str, group: str, topic: str) -> KafkaConsumer:
    consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=bootstrap,
                             api_version=API_VERSION, enable_auto_commit=False,
                             session_timeout_ms=30000, heartbeat_interval_ms=10000)
    deadline = time.monotonic() + 120
    while not consumer.assignment():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no assignment for a member of {group} within 120 s")
        consumer.poll(200)
    return consumer


def main() -> None:
    asked = json.loads(sys.stdin.readline())
    with ThreadPoolExecutor(_STARTING_AT_ONCE) as pool:
        members = list(pool.map(lambda pair: member(asked["bootstrap"], *pair),
                                asked["members"]))
    print(f"ready {len(members)}", flush=True)
    sys.stdin.read()
    for consumer in members:
        consumer.close(autocommit=False)


if __name__ == "__main__":
    main()

"""The Python peers zkconsumer is measured against, each run as its own process by scripts/bench.

Imports nothing from zkconsumer, so it runs in whichever venv holds a peer: raw kafka-python in
zkconsumer's own venv (the same kafka-python zkconsumer builds on), pykafka and confluent-kafka in
a venv of their own (pykafka pins kazoo 2.5). Each contender reads every record's value, as any
real consumer would, and reports its count, time and peak RSS as one JSON line.

    python scripts/bench_peers.py NAME --zookeeper Z --bootstrap B --records N --partitions P
"""

from __future__ import annotations

import argparse
import json
import resource
import time

TOPIC = "bench"
API_VERSION = (0, 9)


def measure(contender, zookeeper: str, bootstrap: str, records: int, partitions: int) -> dict:
    """A contender returns its count and value bytes, and may add the moment (perf_counter) it
    was ready to consume, after connecting and joining its group: the time from then on is
    what the reference consumer's own timing covers."""
    started = time.perf_counter()
    count, value_bytes, *ready_at = contender(zookeeper, bootstrap, records, partitions)
    finished = time.perf_counter()
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = {"records": count, "value_bytes": value_bytes, "seconds": finished - started,
              "peak_rss_mb": peak_kb / 1024}
    if ready_at:
        result["consuming_seconds"] = finished - ready_at[0]
    return result


def _kafka_python(_zookeeper, bootstrap, records, partitions) -> tuple[int, int]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=API_VERSION,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    consumer.assign([TopicPartition(TOPIC, p) for p in range(partitions)])
    count = size = 0
    try:
        while count < records:
            for batch in consumer.poll(timeout_ms=1000).values():
                for record in batch:
                    size += len(record.value)
                    count += 1
    finally:
        consumer.close()
    return count, size


def _pykafka(zookeeper, bootstrap, records, _partitions) -> tuple[int, int]:
    from pykafka import KafkaClient

    client = KafkaClient(hosts=bootstrap)
    consumer = client.topics[TOPIC.encode()].get_balanced_consumer(
        consumer_group=f"bench-pykafka-{time.time_ns()}".encode(), zookeeper_connect=zookeeper,
        auto_offset_reset=-2, auto_commit_enable=False)
    count = size = 0
    try:
        for message in consumer:
            size += len(message.value)
            count += 1
            if count >= records:
                break
    finally:
        consumer.stop()
    return count, size


def _confluent(_zookeeper, bootstrap, records, partitions) -> tuple[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-confluent",
                         "enable.auto.commit": False, "api.version.request": False,
                         "broker.version.fallback": "0.9.0"})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
    count = size = 0
    try:
        while count < records:
            message = consumer.poll(1.0)
            if message is not None and not message.error():
                size += len(message.value())
                count += 1
    finally:
        consumer.close()
    return count, size


PEERS = {
    "kafka-python (per record)": _kafka_python,
    "pykafka BalancedConsumer": _pykafka,
    "confluent-kafka (per record)": _confluent,
}
SAME_VENV_PEERS = {"kafka-python (per record)"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=sorted(PEERS))
    parser.add_argument("--zookeeper", required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--records", type=int, required=True)
    parser.add_argument("--partitions", type=int, required=True)
    args = parser.parse_args()
    print(json.dumps(measure(PEERS[args.name], args.zookeeper, args.bootstrap, args.records,
                             args.partitions)))


if __name__ == "__main__":
    main()

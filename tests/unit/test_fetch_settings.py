"""Legacy fetch keys become kafka-python options; brokers and protocol come from the registry."""

from __future__ import annotations

import threading
import time

import pytest
from kafka import KafkaConsumer
from support.log_capture import captured_logs

from zkconsumer.config import ConsumerConfig
from zkconsumer.errors import ConfigError
from zkconsumer.fetch import (
    NoBrokersError,
    api_version_from_registrations,
    bootstrap_servers,
    kafka_consumer_settings,
    open_fetcher,
)
from zkconsumer.fetch.wire_fetcher import WireFetcher, wire_unsupported_reason
from zkconsumer.model import TopicPartition
from zkconsumer.znodes.brokers import BrokerRegistration


def config(**settings: str) -> ConsumerConfig:
    return ConsumerConfig.from_mapping({"group.id": "g", "zookeeper.connect": "zk:2181",
                                        **settings})


def broker(data: str) -> BrokerRegistration:
    return BrokerRegistration.decode("/brokers/ids/1", data.encode())


V1 = broker('{"version":1,"host":"old","port":9092,"jmx_port":-1}')
V2 = broker('{"version":2,"host":"h2","port":9093,"jmx_port":-1,'
            '"endpoints":["PLAINTEXT://h2:9093","SSL://h2:9094"]}')
V4 = broker('{"version":4,"host":null,"port":-1,"jmx_port":-1,"rack":null,'
            '"endpoints":["INTERNAL://in:19092","EXTERNAL://ex:9092"],'
            '"listener_security_protocol_map":{"INTERNAL":"PLAINTEXT","EXTERNAL":"SASL_SSL"}}')


def test_legacy_fetch_keys_map_to_kafka_python_options():
    settings = kafka_consumer_settings(
        config(**{"fetch.message.max.bytes": "2097152", "fetch.min.bytes": "10",
                  "fetch.wait.max.ms": "250", "socket.timeout.ms": "40000",
                  "socket.receive.buffer.bytes": "131072", "refresh.leader.backoff.ms": "300",
                  "auto.offset.reset": "smallest", "client.id": "reader"}),
        "b1:9092", (0, 9))
    assert settings == {
        "max_partition_fetch_bytes": 2097152, "fetch_min_bytes": 10, "fetch_max_wait_ms": 250,
        "request_timeout_ms": 40000, "connections_max_idle_ms": 540000,
        "receive_buffer_bytes": 131072, "retry_backoff_ms": 300,
        "auto_offset_reset": "earliest", "client_id": "reader", "isolation_level": "read_uncommitted",
        "bootstrap_servers": "b1:9092", "group_id": None, "enable_auto_commit": False,
        "api_version": (0, 9),
    }


def test_defaults_are_accepted_by_kafka_python():
    settings = kafka_consumer_settings(config(), "b1:9092", None)
    assert settings["auto_offset_reset"] == "latest"
    assert "api_version" not in settings
    assert settings["receive_buffer_bytes"] == 64 * 1024
    assert set(settings) <= set(KafkaConsumer.DEFAULT_CONFIG)


def test_a_non_positive_receive_buffer_keeps_the_os_default():
    settings = kafka_consumer_settings(config(**{"socket.receive.buffer.bytes": "-1"}), "b:1", None)
    assert "receive_buffer_bytes" not in settings


def test_request_timeout_always_outlasts_the_fetch_wait():
    settings = kafka_consumer_settings(
        config(**{"socket.timeout.ms": "1000", "fetch.wait.max.ms": "1000"}), "b:1", None)
    assert settings["fetch_max_wait_ms"] < settings["request_timeout_ms"] \
        < settings["connections_max_idle_ms"]


def test_a_poll_ended_by_each_answer_waits_as_long_as_an_answer_may_take():
    from zkconsumer.fetch.kafka_python_fetcher import KafkaPythonFetcher
    from zkconsumer.fetch.settings import poll_timeout_ms

    settings = config(**{"fetch.wait.max.ms": "250"})
    assert poll_timeout_ms(settings, True) == 1250
    assert poll_timeout_ms(settings, False) == 250, "kafka-python hears of resets at the end"
    assert not KafkaPythonFetcher.ends_polls_at_answers


def test_kafka_properties_pass_through_and_cannot_take_over_the_group():
    settings = kafka_consumer_settings(
        config(**{"kafka.security.protocol": "SSL", "kafka.ssl.cafile": "/ca.pem"}), "b:1", None)
    assert (settings["security_protocol"], settings["ssl_cafile"]) == ("SSL", "/ca.pem")
    with pytest.raises(ConfigError, match="kafka.group.id"):
        kafka_consumer_settings(config(**{"kafka.group.id": "other"}), "b:1", None)


def test_bootstrap_list_holds_every_broker_with_the_protocol():
    assert bootstrap_servers([V1, V2]) == "old:9092,h2:9093"
    assert bootstrap_servers([V1, V2], "SSL") == "h2:9094"
    assert bootstrap_servers([V4], "SASL_SSL") == "ex:9092"
    assert bootstrap_servers([V4]) == "in:19092"


def test_no_usable_broker_is_a_clear_error():
    with pytest.raises(NoBrokersError, match="no broker is registered"):
        bootstrap_servers([])
    with pytest.raises(NoBrokersError, match="offers a SSL endpoint"):
        bootstrap_servers([V1], "SSL")


@pytest.mark.parametrize(("brokers", "expected"), [
    ([V1, V2], (0, 8, 2)), ([V2], (0, 9)), ([V2, V4], (0, 9)), ([V4], None), ([], None)])
def test_protocol_follows_the_oldest_registered_broker(brokers, expected):
    assert api_version_from_registrations(brokers) == expected


def test_the_wire_fetcher_serves_plaintext_ssl_and_sasl_and_names_what_it_cannot():
    plain = kafka_consumer_settings(config(), "h:9092", (0, 9))
    tls = kafka_consumer_settings(config(**{"kafka.security.protocol": "SSL",
                                            "kafka.ssl.cafile": "ca.pem",
                                            "kafka.ssl.check.hostname": "false"}), "h:9093", None)
    assert wire_unsupported_reason(plain) is None
    assert wire_unsupported_reason(tls) is None
    for protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            sasl = kafka_consumer_settings(config(**{
                "kafka.security.protocol": protocol, "kafka.sasl.mechanism": mechanism,
                "kafka.sasl.plain.username": "u", "kafka.sasl.plain.password": "p"}),
                "h:9093", None)
            assert wire_unsupported_reason(sasl) is None
        for mechanism in ("GSSAPI", "OAUTHBEARER"):  # the opener logs in with these too
            other = kafka_consumer_settings(config(**{"kafka.security.protocol": protocol,
                                                      "kafka.sasl.mechanism": mechanism}),
                                            "h:9093", None)
            assert wire_unsupported_reason(other) is None
    tuned = kafka_consumer_settings(config(**{"kafka.max.poll.records": "10"}), "h:9092", None)
    assert wire_unsupported_reason(tuned) == "kafka.max.poll.records"


def test_forcing_the_wire_backend_where_it_cannot_serve_is_a_config_error():
    forced = config(**{"fetch.backend": "wire", "kafka.max.poll.records": "10"})
    with pytest.raises(ConfigError, match="fetch.backend.*kafka.max.poll.records"):
        open_fetcher(forced, "h:9092", None)
    with pytest.raises(ConfigError, match="fetch.backend"):
        config(**{"fetch.backend": "librdkafka"})


def test_the_wire_backend_is_chosen_by_default_without_touching_the_network():
    fetcher = open_fetcher(config(), "127.0.0.1:1", (0, 9))
    try:
        assert isinstance(fetcher, WireFetcher)
        assert fetcher.poll(timeout_ms=0) == {}  # nothing assigned: no connection attempted
    finally:
        fetcher.close()


@pytest.mark.parametrize("backend", ["wire", "kafka-python"])
def test_a_wakeup_ends_a_poll_that_waits_for_an_unreachable_broker(backend):
    fetcher = open_fetcher(config(**{"refresh.leader.backoff.ms": "600000",
                                     "fetch.backend": backend}), "127.0.0.1:1", (0, 9))
    fetcher.assign({TopicPartition("t", 0): 0})
    timer = threading.Timer(0.2, fetcher.wakeup)
    timer.start()
    try:
        started = time.monotonic()
        assert fetcher.poll(timeout_ms=600_000) == {}
        assert 0.15 < time.monotonic() - started < 30  # ran until woken, not returned at once
    finally:
        timer.cancel()
        fetcher.close()


def test_an_outage_is_warned_about_once_not_at_every_retry():
    fetcher = open_fetcher(config(**{"refresh.leader.backoff.ms": "0"}), "127.0.0.1:1", (0, 9))
    fetcher.assign({TopicPartition("t", 0): 0})
    try:
        with captured_logs() as logs:
            for _ in range(20):
                fetcher.poll(timeout_ms=0)
    finally:
        fetcher.close()
    retries = [e for e in logs if e["event"].startswith("no broker answered")]
    assert len(retries) == 20
    assert [e["log_level"] for e in retries].count("warning") == 1

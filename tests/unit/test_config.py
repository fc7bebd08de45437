from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.log_capture import captured_logs

from zkconsumer.config import (
    ConsumerConfig,
    MissingConfigError,
    SaslLogin,
    Setting,
    ZookeeperConnect,
    ZookeeperSettings,
    load_config,
)
from zkconsumer.errors import ConfigError

REQUIRED = {"group.id": "orders", "zookeeper.connect": "zk1:2181"}


def config(**settings: str) -> ConsumerConfig:
    """A config from REQUIRED plus settings given with underscores for dots."""
    return ConsumerConfig.from_mapping(
        REQUIRED | {key.replace("_", "."): value for key, value in settings.items()})


def rejected(settings: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(overrides=REQUIRED | settings, environ={})
    return info.value


REFERENCE_DEFAULTS = {
    "consumer_id": None,
    "socket_timeout_ms": 30000,
    "socket_receive_buffer_bytes": 65536,
    "fetch_message_max_bytes": 1048576,
    "num_consumer_fetchers": 1,
    "auto_commit_enable": True,
    "auto_commit_interval_ms": 60000,
    "queued_max_message_chunks": 2,
    "rebalance_max_retries": 4,
    "fetch_min_bytes": 1,
    "fetch_wait_max_ms": 100,
    "rebalance_backoff_ms": 2000,
    "refresh_leader_backoff_ms": 200,
    "offsets_channel_backoff_ms": 1000,
    "offsets_channel_socket_timeout_ms": 10000,
    "offsets_commit_max_retries": 5,
    "offsets_storage": "zookeeper",
    "dual_commit_enabled": False,
    "auto_offset_reset": "largest",
    "consumer_timeout_ms": -1,
    "client_id": "orders",
    "exclude_internal_topics": True,
    "partition_assignment_strategy": "range",
    "zookeeper_session_timeout_ms": 6000,
    "zookeeper_connection_timeout_ms": 6000,
    "zookeeper_startup_deadline_ms": 60000,
    "zookeeper_max_in_flight_requests": 64,
    "rebalance_turn_ms": 15,
    "zookeeper_sync_time_ms": 2000,
    "topics": None,
    "whitelist": None,
    "blacklist": None,
    "fetch_backend": "auto",
    "kafka_api_version": None,
    "bootstrap_servers": None,
    "isolation_level": "read_uncommitted",
    "topic_metadata_refresh_interval_ms": 10000,
    "zookeeper_auth_digest": None,
    "zookeeper_sasl_mechanism": "digest-md5",
    "zookeeper_sasl_username": None,
    "zookeeper_sasl_password": None,
    "zookeeper_acl_world_read": True,
    "zookeeper_ssl_client_enable": False,
    "zookeeper_clientCnxnSocket": None,
    "zookeeper_ssl_keystore_location": None,
    "zookeeper_ssl_keystore_password": None,
    "zookeeper_ssl_keystore_type": None,
    "zookeeper_ssl_truststore_location": None,
    "zookeeper_ssl_truststore_password": None,
    "zookeeper_ssl_truststore_type": None,
    "zookeeper_ssl_protocol": "TLSv1.2",
    "zookeeper_ssl_enabled_protocols": ("TLSv1.2",),
    "zookeeper_ssl_cipher_suites": None,
    "zookeeper_ssl_endpoint_identification_algorithm": True,
    "zookeeper_set_acl": False,
    "group_coordination": "zookeeper",
    "session_timeout_ms": 10000,
    "heartbeat_interval_ms": 3000,
    "max_poll_interval_ms": 300000,
    "metrics_port": 0,
    "metrics_host": "127.0.0.1",
    "cutover_on_fence": "switch",
    "kafka_client_properties": {},
    "unknown_keys": (),
}


@pytest.mark.parametrize(("field", "expected"), REFERENCE_DEFAULTS.items())
def test_default(field, expected):
    assert getattr(config(), field) == expected


def test_defaults_cover_every_field():
    names = {f.name for f in dataclasses.fields(ConsumerConfig)}
    assert names == set(REFERENCE_DEFAULTS) | {"group_id", "zookeeper_connect"}


def test_required_values():
    loaded = config()
    assert loaded.group_id == "orders"
    assert loaded.zookeeper_connect == ZookeeperConnect((("zk1", 2181),))


@pytest.mark.parametrize("missing", ["group.id", "zookeeper.connect"])
def test_missing_required_key(missing):
    settings = {key: value for key, value in REQUIRED.items() if key != missing}
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_mapping(settings)
    assert info.value.key == missing
    assert "required" in str(info.value)


def test_derived_defaults_follow_the_value_they_derive_from():
    loaded = config(zookeeper_sync_time_ms="500", zookeeper_session_timeout_ms="9000",
                    offsets_storage="kafka")
    assert loaded.rebalance_backoff_ms == 500
    assert loaded.zookeeper_connection_timeout_ms == 9000
    assert loaded.dual_commit_enabled is True
    assert loaded.client_id == "orders"


def test_derived_defaults_can_be_overridden():
    loaded = config(zookeeper_sync_time_ms="500", rebalance_backoff_ms="10",
                    zookeeper_connection_timeout_ms="3000", offsets_storage="KAFKA",
                    dual_commit_enabled="false", client_id="orders-client")
    assert (loaded.rebalance_backoff_ms, loaded.zookeeper_connection_timeout_ms) == (10, 3000)
    assert (loaded.offsets_storage, loaded.dual_commit_enabled) == ("kafka", False)
    assert loaded.client_id == "orders-client"


def test_values_are_trimmed():
    loaded = config(fetch_min_bytes="  42 ", auto_commit_enable=" FALSE", consumer_id=" c1 ")
    assert (loaded.fetch_min_bytes, loaded.auto_commit_enable) == (42, False)
    assert loaded.consumer_id == "c1"


@pytest.mark.parametrize(("given", "expected"), [
    ("smallest", "smallest"), ("largest", "largest"), ("earliest", "smallest"),
    ("latest", "largest"), ("Smallest", "smallest"), ("LATEST", "largest"),
])
def test_auto_offset_reset_spellings(given, expected):
    assert config(auto_offset_reset=given).auto_offset_reset == expected


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "RoundRobin"])
def test_assignment_strategies(strategy):
    assert config(partition_assignment_strategy=strategy).partition_assignment_strategy == \
        strategy.lower()


def test_consumer_timeout_may_be_minus_one_or_zero_or_positive():
    assert [config(consumer_timeout_ms=v).consumer_timeout_ms for v in ("-1", "0", "500")] == \
        [-1, 0, 500]


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("group.id", "my group", "ASCII alphanumerics"),
    ("group.id", "caf\u00e9", "ASCII alphanumerics"),
    ("group.id", "a/b", "ASCII alphanumerics"),
    ("group.id", "", "must not be empty"),
    ("client.id", "client:1", "ASCII alphanumerics"),
    ("consumer.id", "a/b", "znode"),
    ("zookeeper.connect", "", "must not be empty"),
    ("socket.timeout.ms", "abc", "must be an integer"),
    ("socket.timeout.ms", "1.5", "must be an integer"),
    ("socket.timeout.ms", "", "must not be empty"),
    ("socket.timeout.ms", "   ", "must not be empty"),
    ("socket.timeout.ms", "1_000", "must be an integer"),
    ("socket.timeout.ms", "0x10", "must be an integer"),
    ("socket.timeout.ms", "0", "between 1 and"),
    ("socket.timeout.ms", "2147483648", "between 1 and 2147483647"),
    ("socket.receive.buffer.bytes", "-2", "between -1 and"),
    ("fetch.message.max.bytes", "0", "between 1 and"),
    ("num.consumer.fetchers", "0", "between 1 and"),
    ("auto.commit.interval.ms", "0", "between 1 and"),
    ("queued.max.message.chunks", "0", "between 1 and"),
    ("rebalance.max.retries", "0", "between 1 and"),
    ("fetch.min.bytes", "-1", "between 0 and"),
    ("fetch.wait.max.ms", "-1", "between 0 and"),
    ("rebalance.backoff.ms", "-5", "between 0 and"),
    ("refresh.leader.backoff.ms", "-1", "between 0 and"),
    ("offsets.channel.backoff.ms", "-1", "between 0 and"),
    ("offsets.channel.socket.timeout.ms", "0", "between 1 and"),
    ("offsets.commit.max.retries", "-1", "between 0 and"),
    ("consumer.timeout.ms", "-2", "between -1 and"),
    ("zookeeper.session.timeout.ms", "0", "between 1 and"),
    ("zookeeper.connection.timeout.ms", "0", "between 1 and"),
    ("zookeeper.sync.time.ms", "-1", "between 0 and"),
    ("auto.commit.enable", "yes", "true or false"),
    ("auto.commit.enable", "1", "true or false"),
    ("dual.commit.enabled", "on", "true or false"),
    ("exclude.internal.topics", "", "must not be empty"),
    ("offsets.storage", "redis", "zookeeper, kafka"),
    ("auto.offset.reset", "anything", "smallest, largest, earliest, latest"),
    ("partition.assignment.strategy", "sticky", "range, roundrobin"),
    ("cutover.on.fence", "stay", "switch, exit"),
    ("topics", "a,,b", "not a legal topic name"),
    ("topics", "a b", "not a legal topic name"),
    ("topics", "..", "not a legal topic name"),
    ("topics", "t" * 250, "not a legal topic name"),
    ("whitelist", "(unclosed", "not a valid regular expression"),
    ("blacklist", "a[", "not a valid regular expression"),
    ("whitelist", "\"''\"", "empty"),
    ("kafka.api.version", "latest", "'auto' or a version"),
    ("kafka.api.version", "1", "'auto' or a version"),
    ("kafka.api.version", "0.x", "'auto' or a version"),
])
def test_invalid_value_names_key_value_and_source(key, value, reason):
    error = rejected({key: value})
    assert error.key == key
    assert error.value == value.strip()
    assert error.source == "overrides"
    assert reason in error.reason
    assert f"{key}={value.strip()!r} (from overrides)" in str(error)


def test_fetch_wait_must_not_exceed_socket_timeout():
    error = rejected({"fetch.wait.max.ms": "31000"})
    assert (error.key, error.value) == ("fetch.wait.max.ms", "31000")
    assert "socket.timeout.ms (30000)" in error.reason


def test_socket_timeout_below_default_fetch_wait_blames_socket_timeout():
    error = rejected({"socket.timeout.ms": "50"})
    assert (error.key, error.value) == ("socket.timeout.ms", "50")
    assert "fetch.wait.max.ms (100)" in error.reason


def test_fetch_wait_equal_to_socket_timeout_is_fine():
    assert config(fetch_wait_max_ms="500", socket_timeout_ms="500").fetch_wait_max_ms == 500


@pytest.mark.parametrize(("first", "second"), [("topics", "whitelist"), ("topics", "blacklist"),
                                               ("whitelist", "blacklist")])
def test_at_most_one_subscription_key(tmp_path, first, second):
    path = tmp_path / "consumer.properties"
    path.write_text(f"{first}=a\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides=[f"{second}=b", "group.id=g", "zookeeper.connect=z"],
                    environ={})
    assert (info.value.key, info.value.source) == (second, "--property")
    assert f"{first} (from {path} line 1)" in info.value.reason


def test_topics_are_split_trimmed_and_deduplicated():
    assert config(topics=" orders , payments,orders,a.b-c_d ").topics == \
        ("orders", "payments", "a.b-c_d")


def test_topic_filters_are_normalised_like_the_reference():
    assert config(whitelist=' "orders.*, payments" ').whitelist == "orders.*|payments"
    assert config(blacklist="'__.*'").blacklist == "__.*"


@pytest.mark.parametrize(("given", "expected"), [
    ("0.9", (0, 9)), ("0.10.2", (0, 10, 2)), ("2.8", (2, 8)), ("0.10.2.1", (0, 10, 2, 1)),
    ("auto", None), ("AUTO", None),
])
def test_kafka_api_version(given, expected):
    assert config(kafka_api_version=given).kafka_api_version == expected


def test_kafka_pass_through_and_unknown_keys():
    loaded = ConsumerConfig.from_mapping(REQUIRED | {
        "kafka.security.protocol": "SSL", "kafka.ssl.cafile": " /etc/ca.pem ",
        "kafka.api.version": "0.10", "mirror.topics.whitelist": "x", "kafka.": "y",
        "zookeeper.connectiontimeout.ms": "1"})
    assert loaded.kafka_client_properties == {"security.protocol": "SSL",
                                              "ssl.cafile": "/etc/ca.pem"}
    assert loaded.kafka_api_version == (0, 10)
    assert loaded.unknown_keys == ("kafka.", "mirror.topics.whitelist",
                                   "zookeeper.connectiontimeout.ms")
    with pytest.raises(TypeError):
        loaded.kafka_client_properties["x"] = "y"  # type: ignore[index]


def test_config_is_immutable_and_hashable():
    loaded = config(kafka_security_protocol="SSL")
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.group_id = "other"  # type: ignore[misc]
    assert hash(loaded) == hash(config(kafka_security_protocol="SSL"))


@pytest.mark.parametrize(("text", "servers", "chroot"), [
    ("zk1", (("zk1", 2181),), ""),
    ("zk1:2182", (("zk1", 2182),), ""),
    ("zk1:2181,zk2:2182,zk3", (("zk1", 2181), ("zk2", 2182), ("zk3", 2181)), ""),
    ("zk1:2181/", (("zk1", 2181),), ""),
    ("zk1:2181/kafka", (("zk1", 2181),), "/kafka"),
    ("zk1:2181,zk2:2181/kafka/prod", (("zk1", 2181), ("zk2", 2181)), "/kafka/prod"),
    (" zk1:2181 , zk2:2181 /kafka", (("zk1", 2181), ("zk2", 2181)), "/kafka"),
    ("10.0.0.1:2181", (("10.0.0.1", 2181),), ""),
    ("[::1]:2181,[fe80::1]/c", (("::1", 2181), ("fe80::1", 2181)), "/c"),
])
def test_zookeeper_connect_parsing(text, servers, chroot):
    connect = ZookeeperConnect.parse(text)
    assert (connect.servers, connect.chroot) == (servers, chroot)


def test_zookeeper_connect_strings():
    connect = ZookeeperConnect.parse("zk1,zk2:2182,[::1]/kafka/prod")
    assert connect.servers_string == "zk1:2181,zk2:2182,[::1]:2181"
    assert connect.connect_string == "zk1:2181,zk2:2182,[::1]:2181/kafka/prod"
    assert str(connect) == connect.connect_string
    assert ZookeeperConnect.parse("zk1:2181").connect_string == "zk1:2181"


@pytest.mark.parametrize(("text", "reason"), [
    ("zk1:0", "invalid port"), ("zk1:65536", "invalid port"), ("zk1:abc", "invalid port"),
    ("zk1:", "invalid port"), ("zk1:-1", "invalid port"), (":2181", "no valid host"),
    ("zk1,,zk2", "no valid host"), ("zk1,", "no valid host"), ("zk 1:2181", "no valid host"),
    ("::1:2181", "IPv6"), ("[::1", "[ipv6-address]:port"), ("[::1]x", "[ipv6-address]:port"),
    ("[]:2181", "no valid host"), ("zk1/kafka/", "must not end with '/'"),
    ("zk1/kafka//prod", "segment"), ("zk1/kafka/../x", "segment"), ("/kafka", "no valid host"),
])
def test_invalid_zookeeper_connect(text, reason):
    with pytest.raises(ConfigError) as info:
        ZookeeperConnect.parse(text, source="test")
    assert (info.value.key, info.value.value, info.value.source) == \
        ("zookeeper.connect", text, "test")
    assert reason in info.value.reason
    error = rejected({"zookeeper.connect": text})
    assert (error.key, error.source) == ("zookeeper.connect", "overrides")


hosts = st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z0-9]{1,5}){0,2}", fullmatch=True)
segments = st.from_regex(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,8}", fullmatch=True).filter(
    lambda s: s not in (".", ".."))


@given(st.lists(st.tuples(hosts, st.integers(1, 65535)), min_size=1, max_size=5),
       st.lists(segments, max_size=4))
def test_zookeeper_connect_round_trip(servers, path):
    chroot = "".join("/" + segment for segment in path)
    connect = ZookeeperConnect(tuple(servers), chroot)
    assert ZookeeperConnect.parse(connect.connect_string) == connect


def write_properties(tmp_path, text: str):
    path = tmp_path / "consumer.properties"
    path.write_text(text)
    return path


def test_precedence_defaults_file_environment_overrides(tmp_path):
    path = write_properties(tmp_path, "group.id=from-file\nzookeeper.connect=zk-file\n"
                                      "fetch.min.bytes=10\nsocket.timeout.ms=20000\n"
                                      "auto.offset.reset=smallest\n")
    environ = {"ZKCONSUMER_FETCH_MIN_BYTES": "20", "ZKCONSUMER_ZOOKEEPER_CONNECT": "zk-env/c",
               "ZKCONSUMER_AUTO_OFFSET_RESET": "latest", "UNRELATED": "x"}
    loaded = load_config(path, ["fetch.min.bytes=30", "auto.offset.reset = earliest"], environ)
    assert loaded.group_id == "from-file"
    assert loaded.socket_timeout_ms == 20000
    assert loaded.zookeeper_connect.connect_string == "zk-env:2181/c"
    assert loaded.fetch_min_bytes == 30
    assert loaded.auto_offset_reset == "smallest"
    assert loaded.fetch_wait_max_ms == 100


def test_environment_alone_is_enough():
    loaded = load_config(environ={"ZKCONSUMER_GROUP_ID": "g", "ZKCONSUMER_ZOOKEEPER_CONNECT": "z",
                                  "ZKCONSUMER_KAFKA_API_VERSION": "0.9"})
    assert (loaded.group_id, loaded.kafka_api_version) == ("g", (0, 9))


def test_environment_reads_only_known_keys():
    loaded = load_config(overrides=REQUIRED, environ={
        "ZKCONSUMER_KAFKA_SECURITY_PROTOCOL": "SSL", "ZKCONSUMER_LOG_FORMAT": "json"})
    assert loaded.kafka_client_properties == {}
    assert loaded.unknown_keys == ()


def test_environment_defaults_to_os_environ(monkeypatch):
    monkeypatch.setenv("ZKCONSUMER_GROUP_ID", "from-os")
    monkeypatch.setenv("ZKCONSUMER_ZOOKEEPER_CONNECT", "zk")
    assert load_config().group_id == "from-os"


def test_error_from_file_names_file_and_line(tmp_path):
    path = write_properties(tmp_path, "# consumer\ngroup.id=g\nfetch.min.bytes=lots\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides=["zookeeper.connect=z"], environ={})
    assert (info.value.key, info.value.value) == ("fetch.min.bytes", "lots")
    assert info.value.source == f"{path} line 3"
    assert "consumer.properties line 3" in str(info.value)


def test_error_from_environment_names_the_variable():
    with pytest.raises(ConfigError) as info:
        load_config(overrides=REQUIRED, environ={"ZKCONSUMER_FETCH_MIN_BYTES": "1.5"})
    assert (info.value.key, info.value.value) == ("fetch.min.bytes", "1.5")
    assert "from environment ZKCONSUMER_FETCH_MIN_BYTES" in str(info.value)


def test_error_from_property_option():
    with pytest.raises(ConfigError) as info:
        load_config(overrides=["group.id=g", "zookeeper.connect=z", "rebalance.max.retries=0"],
                    environ={})
    assert (info.value.key, info.value.value) == ("rebalance.max.retries", "0")
    assert "(from --property)" in str(info.value)


def test_error_from_a_named_option_names_that_option():
    with pytest.raises(ConfigError) as info:
        load_config(overrides=["group.id=g"], environ={},
                    options={"zookeeper.connect": Setting("zk1:notaport", "--zookeeper")})
    assert (info.value.key, info.value.source) == ("zookeeper.connect", "--zookeeper")
    assert "(from --zookeeper)" in str(info.value)


def test_named_options_win_over_property_overrides():
    loaded = load_config(overrides=["group.id=from-property", "zookeeper.connect=z"], environ={},
                         options={"group.id": Setting("from-option", "--group")})
    assert loaded.group_id == "from-option"


def test_a_missing_required_key_is_reported_as_missing_not_as_none():
    with pytest.raises(MissingConfigError) as info:
        load_config(overrides=["zookeeper.connect=z"], environ={})
    assert info.value.key == "group.id"
    assert str(info.value) == "missing config group.id: it is required"


def warnings_from(load) -> list[dict]:
    with captured_logs() as logs:
        load()
    return [entry for entry in logs if entry["log_level"] == "warning"]


def test_an_unknown_key_is_warned_about_once_naming_the_closest_known_key():
    warnings = warnings_from(lambda: load_config(overrides=[
        "group.id=g", "zookeeper.connect=z", "auto.offset.rest=smallest",
        "kafka.security.protocol=SSL"], environ={}))
    assert warnings == [{"event": "unknown config key ignored", "log_level": "warning",
                         "key": "auto.offset.rest", "source": "--property",
                         "closest_known_key": "auto.offset.reset"}]


def test_an_unknown_key_in_a_properties_file_is_warned_about_with_its_line(tmp_path):
    path = write_properties(tmp_path, "group.id=g\nzookeeper.connect=z\nrebalance.max.retry=9\n")
    (warning,) = warnings_from(lambda: load_config(path, environ={}))
    assert (warning["key"], warning["source"]) == ("rebalance.max.retry", f"{path} line 3")
    assert warning["closest_known_key"] == "rebalance.max.retries"


def test_an_unknown_key_like_no_known_one_is_warned_about_without_a_guess():
    (warning,) = warnings_from(lambda: load_config(
        overrides=["group.id=g", "zookeeper.connect=z", "colour=blue"], environ={}))
    assert warning["key"] == "colour" and "closest_known_key" not in warning


def test_overridden_bad_value_is_not_an_error(tmp_path):
    path = write_properties(tmp_path, "group.id=g\nzookeeper.connect=z\nfetch.min.bytes=bad\n")
    assert load_config(path, ["fetch.min.bytes=5"], {}).fetch_min_bytes == 5


@pytest.mark.parametrize("item", ["group.id", "=value", "  =x"])
def test_property_option_needs_key_and_equals(item):
    with pytest.raises(ConfigError) as info:
        load_config(overrides=[item], environ={})
    assert (info.value.key, info.value.value) == ("--property", item)
    assert "expected key=value" in str(info.value)


def test_property_option_value_may_contain_equals_and_a_single_string_is_one_override():
    loaded = load_config(overrides=["group.id=g", "zookeeper.connect=z", "kafka.sasl.jaas=a=b"],
                         environ={})
    assert loaded.kafka_client_properties == {"sasl.jaas": "a=b"}
    with pytest.raises(ConfigError, match=r"group\.id"):
        load_config(overrides="group.id", environ={})


def test_mapping_values_must_be_strings():
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_mapping(REQUIRED | {"fetch.min.bytes": 5})  # type: ignore[dict-item]
    assert (info.value.key, info.value.value, info.value.source) == \
        ("fetch.min.bytes", 5, "config mapping")


def test_to_properties_round_trips():
    loaded = config(consumer_id="c1", topics="a,b", offsets_storage="kafka",
                    kafka_api_version="0.10.2", kafka_ssl_cafile="/ca.pem",
                    zookeeper_connect="zk1,zk2:2182/kafka", auto_offset_reset="earliest")
    properties = loaded.to_properties()
    assert properties["zookeeper.connect"] == "zk1:2181,zk2:2182/kafka"
    assert properties["topics"] == "a,b"
    assert properties["kafka.api.version"] == "0.10.2"
    assert properties["dual.commit.enabled"] == "true"
    assert properties["auto.offset.reset"] == "smallest"
    assert properties["kafka.ssl.cafile"] == "/ca.pem"
    assert "whitelist" not in properties
    assert ConsumerConfig.from_mapping(properties) == loaded


def test_to_properties_lists_every_default():
    properties = config().to_properties()
    assert properties["rebalance.backoff.ms"] == "2000"
    assert properties["consumer.timeout.ms"] == "-1"
    assert properties["exclude.internal.topics"] == "true"
    assert "consumer.id" not in properties
    assert properties["fetch.backend"] == "auto"
    assert len(properties) == 47  # every key that has a value by default


LEGACY_PROPERTIES = """\
# Licensed to the Apache Software Foundation (ASF) under one or more
# contributor license agreements.
#
# see kafka.consumer.ConsumerConfig for more details

# Zookeeper connection string
# comma separated host:port pairs, each corresponding to a zk
# server. e.g. "127.0.0.1:3000,127.0.0.1:3001,127.0.0.1:3002"
zookeeper.connect=zk1.example.com:2181,zk2.example.com:2181,\\
                  zk3.example.com:2181/kafka08

# timeout in ms for connecting to zookeeper
zookeeper.connection.timeout.ms=6000
zookeeper.session.timeout.ms = 10000

#consumer group id
group.id=test-consumer-group

#consumer timeout
#consumer.timeout.ms=5000

auto.commit.interval.ms : 10000
auto.offset.reset smallest
offsets.storage=kafka
dual.commit.enabled=true
fetch.message.max.bytes=2097152
mirror.topics.whitelist=.*
kafka.security.protocol=SSL
"""


def test_realistic_legacy_file_loads(tmp_path):
    loaded = load_config(write_properties(tmp_path, LEGACY_PROPERTIES), environ={})
    assert loaded.zookeeper_connect.servers == (
        ("zk1.example.com", 2181), ("zk2.example.com", 2181), ("zk3.example.com", 2181))
    assert loaded.zookeeper_connect.chroot == "/kafka08"
    assert loaded.group_id == loaded.client_id == "test-consumer-group"
    assert loaded.zookeeper_session_timeout_ms == 10000
    assert loaded.zookeeper_connection_timeout_ms == 6000
    assert loaded.auto_commit_interval_ms == 10000
    assert loaded.auto_offset_reset == "smallest"
    assert (loaded.offsets_storage, loaded.dual_commit_enabled) == ("kafka", True)
    assert loaded.fetch_message_max_bytes == 2097152
    assert loaded.consumer_timeout_ms == -1
    assert loaded.unknown_keys == ("mirror.topics.whitelist",)
    assert loaded.kafka_client_properties == {"security.protocol": "SSL"}


def test_zookeeper_credentials_are_checked_but_never_shown():
    loaded = load_config(overrides=["group.id=g", "zookeeper.connect=z",
                                    "zookeeper.auth.digest=app:s3cret",
                                    "kafka.sasl.plain.password=hunter2"], environ={})
    assert loaded.zookeeper_auth_digest == "app:s3cret"
    assert "s3cret" not in repr(loaded) and "hunter2" not in repr(loaded)
    with pytest.raises(ConfigError, match="must be user:password") as raised:
        load_config(overrides=["group.id=g", "zookeeper.connect=z",
                               "zookeeper.auth.digest=justapassword"], environ={})
    assert "justapassword" not in str(raised.value)


def test_bootstrap_servers_are_normalised_and_need_ports():
    assert config(**{"bootstrap.servers": " k1:9092 , [::1]:9093"}).bootstrap_servers == \
        "k1:9092,[::1]:9093"
    with pytest.raises(ConfigError, match="'k1' needs a port"):
        config(**{"bootstrap.servers": "k1"})


def test_isolation_level_takes_the_two_kafka_levels():
    assert config(**{"isolation.level": "READ_COMMITTED"}).isolation_level == "read_committed"
    with pytest.raises(ConfigError, match="read_uncommitted, read_committed"):
        config(**{"isolation.level": "serializable"})


@pytest.mark.parametrize(("key", "instead"), [("bootstrap.servers", "bootstrap.servers"),
                                              ("isolation.level", "isolation.level")])
def test_kafka_prefixed_managed_keys_name_our_own_key(key, instead):
    from zkconsumer.fetch.kafka_client import kafka_client_options
    with pytest.raises(ConfigError, match=f"set {instead}"):
        kafka_client_options({key: "x"})


def test_a_reference_key_that_changes_nothing_here_is_accepted_with_a_warning_saying_why():
    warnings = warnings_from(lambda: load_config(overrides=[
        "group.id=g", "zookeeper.connect=z", "num.consumer.fetchers=4"], environ={}))
    assert [(w["event"], w["key"], w["source"]) for w in warnings] == [
        ("config key accepted but has no effect", "num.consumer.fetchers", "--property")]
    assert "fetcher thread" in warnings[0]["why"]


def test_a_default_that_changes_nothing_is_not_warned_about():
    assert warnings_from(lambda: load_config(overrides=[
        "group.id=g", "zookeeper.connect=z"], environ={})) == []


def test_the_zookeeper_edge_is_given_its_own_settings_with_the_secrets_out_of_sight():
    digest = config(zookeeper_connect="zk1:2181,zk2:2182/kafka", zookeeper_session_timeout_ms="9000",
                    zookeeper_auth_digest="alice:s3cret", zookeeper_acl_world_read="false")
    assert digest.zookeeper == ZookeeperSettings(
        ZookeeperConnect((("zk1", 2181), ("zk2", 2182)), "/kafka"), connection_timeout_s=9.0,
        session_timeout_s=9.0, digest="alice:s3cret", world_readable=False)
    sasl = config(zookeeper_sasl_username="bob", zookeeper_sasl_password="hunter2",
                  zookeeper_connection_timeout_ms="1500")
    assert sasl.zookeeper.sasl == SaslLogin("digest-md5", "bob", "hunter2")
    assert sasl.zookeeper.connection_timeout_s == 1.5
    assert "s3cret" not in repr(digest.zookeeper) and "hunter2" not in repr(sasl.zookeeper)


def test_kafka_coordination_needs_no_zookeeper():
    loaded = ConsumerConfig.from_mapping({"group.id": "orders", "group.coordination": "kafka",
                                          "bootstrap.servers": "b1:9092"})
    assert (loaded.group_coordination, loaded.zookeeper_connect) == ("kafka", None)
    with pytest.raises(MissingConfigError, match="missing config zookeeper.connect"):
        loaded.zookeeper  # noqa: B018 - the property is what raises


def test_kafka_coordination_needs_the_brokers():
    with pytest.raises(MissingConfigError) as info:
        ConsumerConfig.from_mapping({"group.id": "orders", "group.coordination": "kafka"})
    assert str(info.value) == ("missing config bootstrap.servers: it is required with "
                               "group.coordination=kafka")


def test_heartbeats_must_fall_within_the_session():
    error = rejected({"group.coordination": "kafka", "bootstrap.servers": "b1:9092",
                      "heartbeat.interval.ms": "10000"})
    assert error.key == "heartbeat.interval.ms"
    assert "must be lower than session.timeout.ms (10000)" in str(error)

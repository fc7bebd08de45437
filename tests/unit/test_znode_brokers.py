from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.errors import ZnodeDataError
from zkconsumer.znodes.brokers import BrokerRegistration, Endpoint

PATH = "/brokers/ids/1"


def decode(data: bytes) -> BrokerRegistration:
    return BrokerRegistration.decode(PATH, data)


def assert_round_trips(broker: BrokerRegistration) -> None:
    assert decode(broker.encode()) == broker


def test_v1_keeps_its_address_in_host_and_port() -> None:
    broker = decode(
        b'{"jmx_port":-1,"timestamp":"1466985807242","host":"h","version":1,"port":9092}'
    )
    assert broker == BrokerRegistration(
        version=1, host="h", port=9092, jmx_port=-1, timestamp="1466985807242"
    )
    assert broker.endpoints == ()
    assert broker.address_for() == ("h", 9092)
    assert broker.address_for(listener="PLAINTEXT") == ("h", 9092)
    assert broker.address_for("SSL") is None
    assert_round_trips(broker)


def test_v1_without_jmx_port_or_timestamp() -> None:
    broker = decode(b'{"version":1,"host":"h","port":9092}')
    assert (broker.jmx_port, broker.timestamp) == (None, None)
    assert_round_trips(broker)


def test_v2_lists_endpoints_named_by_protocol() -> None:
    broker = decode(
        b'{"jmx_port":-1,"timestamp":"1466985807242","endpoints":["PLAINTEXT://h:9092",'
        b'"SSL://h:9093"],"host":"h","version":2,"port":9092}'
    )
    assert broker.endpoints == (
        Endpoint("PLAINTEXT", "PLAINTEXT", "h", 9092),
        Endpoint("SSL", "SSL", "h", 9093),
    )
    assert broker.address_for() == ("h", 9092)
    assert broker.address_for("SSL") == ("h", 9093)
    assert broker.address_for("SASL_SSL") is None
    assert_round_trips(broker)


def test_v3_without_plaintext_has_null_host_and_port_minus_one() -> None:
    broker = decode(
        b'{"version":3,"host":null,"port":-1,"jmx_port":9999,"timestamp":"1",'
        b'"endpoints":["SSL://h:9093"],"rack":"dc1"}'
    )
    assert (broker.host, broker.port, broker.rack) == (None, None, "dc1")
    assert broker.address_for() is None
    assert broker.address_for("SSL") == ("h", 9093)
    assert broker.encode().startswith(b'{"version":3,"host":null,"port":-1,')
    assert_round_trips(broker)


V4 = (
    b'{"listener_security_protocol_map":{"INTERNAL":"PLAINTEXT","EXTERNAL":"SSL"},'
    b'"endpoints":["INTERNAL://h1:19092","EXTERNAL://h1:9093"],"rack":"r1","jmx_port":-1,'
    b'"host":"h1","timestamp":"1690000000000","port":19092,"version":4}'
)


def test_v4_maps_listener_names_to_protocols() -> None:
    broker = decode(V4)
    assert broker == BrokerRegistration(
        version=4,
        host="h1",
        port=19092,
        endpoints=(
            Endpoint("INTERNAL", "PLAINTEXT", "h1", 19092),
            Endpoint("EXTERNAL", "SSL", "h1", 9093),
        ),
        listener_security_protocol_map={"INTERNAL": "PLAINTEXT", "EXTERNAL": "SSL"},
        rack="r1",
        jmx_port=-1,
        timestamp="1690000000000",
    )
    assert broker.address_for() == ("h1", 19092)
    assert broker.address_for("SSL") == ("h1", 9093)
    assert broker.address_for(listener="EXTERNAL") == ("h1", 9093)
    assert broker.address_for(listener="REPLICATION") is None
    assert_round_trips(broker)


def test_v4_with_null_rack() -> None:
    broker = decode(
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://h:9092"],"rack":null,"jmx_port":-1,"host":"h",'
        b'"timestamp":"1","port":9092,"version":4}'
    )
    assert broker.rack is None
    assert broker.address_for() == ("h", 9092)


def test_several_listeners_on_one_protocol_prefer_the_one_named_after_it() -> None:
    broker = decode(
        b'{"version":4,"host":"h","port":9092,"listener_security_protocol_map":'
        b'{"REPLICATION":"PLAINTEXT","PLAINTEXT":"PLAINTEXT","CLIENT":"PLAINTEXT"},'
        b'"endpoints":["REPLICATION://r:9091","PLAINTEXT://h:9092","CLIENT://c:9094"]}'
    )
    assert broker.address_for() == ("h", 9092)
    unnamed = decode(
        b'{"version":4,"host":null,"port":-1,"listener_security_protocol_map":'
        b'{"REPLICATION":"PLAINTEXT","CLIENT":"PLAINTEXT"},'
        b'"endpoints":["REPLICATION://r:9091","CLIENT://c:9094"]}'
    )
    assert unnamed.address_for() == ("r", 9091)
    assert unnamed.address_for(listener="CLIENT") == ("c", 9094)


def test_v5_adds_features() -> None:
    broker = decode(
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://h:9092"],"jmx_port":-1,"host":"h","timestamp":"1",'
        b'"port":9092,"version":5}'
    )
    assert broker.features == {}
    assert broker.address_for() == ("h", 9092)
    assert_round_trips(broker)
    nested = decode(
        b'{"version":5,"endpoints":["PLAINTEXT://h:9092"],'
        b'"features":{"metadata.version":{"min_version":1,"max_version":7}}}'
    )
    assert nested.features == {"metadata.version": {"min_version": 1, "max_version": 7}}
    assert_round_trips(nested)


def test_ipv6_endpoints() -> None:
    broker = decode(
        b'{"version":2,"endpoints":["PLAINTEXT://[::1]:9092","SSL://[fe80::1%eth0]:9093"]}'
    )
    assert broker.address_for() == ("::1", 9092)
    assert broker.address_for("SSL") == ("fe80::1%eth0", 9093)
    assert str(broker.endpoints[0]) == "PLAINTEXT://[::1]:9092"
    assert_round_trips(broker)


def test_an_endpoint_without_host_is_never_an_address() -> None:
    broker = decode(b'{"version":2,"endpoints":["PLAINTEXT://:9092"]}')
    assert broker.endpoints == (Endpoint("PLAINTEXT", "PLAINTEXT", "", 9092),)
    assert broker.address_for() is None


def test_unknown_fields_are_ignored() -> None:
    broker = decode(
        b'{"version":7,"endpoints":["PLAINTEXT://h:9092"],"future":{"x":[1,2]},"tags":null}'
    )
    assert broker.address_for() == ("h", 9092)


MALFORMED = [
    (b"", "no data"),
    (b"\xff\xfe", "UTF-8"),
    (b"not json", "not valid JSON"),
    (b'{"version":1,', "not valid JSON"),
    (b"[1]", "expected a JSON object, got array"),
    (b'"h"', "expected a JSON object, got string"),
    (b"null", "expected a JSON object, got null"),
    (b'{"host":"h","port":9092}', "'version' is missing"),
    (b'{"version":0,"host":"h","port":9092}', "'version' must be between"),
    (b'{"version":"1","host":"h","port":9092}', "'version' must be an integer"),
    (b'{"version":true,"host":"h","port":9092}', "'version' must be an integer"),
    (b'{"version":1.0,"host":"h","port":9092}', "'version' must be an integer"),
    (b'{"version":NaN,"host":"h","port":9092}', "not valid JSON"),
    (b'{"version":1099511627776,"endpoints":[]}', "'version' must be between"),
    (b'{"version":1,"port":9092}', "'host' is missing"),
    (b'{"version":1,"host":null,"port":9092}', "'host' is missing"),
    (b'{"version":1,"host":"","port":9092}', "'host' is empty"),
    (b'{"version":1,"host":"h"}', "'port' is missing"),
    (b'{"version":1,"host":"h","port":"x"}', "field 'port' must be an integer, got 'x'"),
    (b'{"version":1,"host":"h","port":70000}', "'port' must be between"),
    (b'{"version":1,"host":"h","port":9092,"jmx_port":"x"}', "'jmx_port' must be an integer"),
    (b'{"version":1,"host":"h","port":9092,"timestamp":5}', "'timestamp' must be a string"),
    (b'{"version":2,"host":"h","port":9092}', "'endpoints' is missing"),
    (b'{"version":2,"endpoints":"PLAINTEXT://h:9092"}', "'endpoints' must be an array"),
    (b'{"version":2,"endpoints":[9092]}', "'endpoints' must be a string"),
    (b'{"version":2,"endpoints":["h:9092"]}', "endpoint 'h:9092'"),
    (b'{"version":2,"endpoints":["PLAINTEXT://h"]}', "endpoint"),
    (b'{"version":2,"endpoints":["PLAINTEXT://h:x"]}', "endpoint"),
    (b'{"version":2,"endpoints":["PLAINTEXT://h:99999"]}', "endpoint"),
    (b'{"version":2,"endpoints":["PLAINTEXT://h:-1"]}', "endpoint"),
    (b'{"version":2,"endpoints":["PLAINTEXT://[::1:9092"]}', "endpoint"),
    (b'{"version":2,"endpoints":["://h:9092"]}', "endpoint"),
    (b'{"version":2,"endpoints":["PLAINTEXT://h:9092/x"]}', "endpoint"),
    (b'{"version":2,"endpoints":[],"port":"9092"}', "'port' must be an integer"),
    (b'{"version":2,"endpoints":[],"host":5}', "'host' must be a string"),
    (
        (
            b'{"version":4,"listener_security_protocol_map":{"INTERNAL":"PLAINTEXT"},'
            b'"endpoints":["EXTERNAL://h:9093"]}'
        ),
        "listener 'EXTERNAL', which is not in listener_security_protocol_map",
    ),
    (
        b'{"version":4,"listener_security_protocol_map":{"INTERNAL":1},"endpoints":[]}',
        "'listener_security_protocol_map.INTERNAL' must be a string",
    ),
    (
        b'{"version":4,"listener_security_protocol_map":["INTERNAL"],"endpoints":[]}',
        "'listener_security_protocol_map' must be an object",
    ),
    (b'{"version":4,"endpoints":[],"rack":5}', "'rack' must be a string"),
    (b'{"version":5,"endpoints":[],"features":[]}', "'features' must be an object"),
]


@pytest.mark.parametrize(("data", "reason"), MALFORMED)
def test_malformed_registrations_raise_with_the_path(data: bytes, reason: str) -> None:
    with pytest.raises(ZnodeDataError) as error:
        decode(data)
    assert str(error.value).startswith(f"malformed data in znode {PATH}: ")
    assert reason in error.value.reason


hosts = st.sampled_from(["h", "broker-1.example.com", "10.0.0.1", "::1", "fe80::1", ""])
ports = st.integers(min_value=0, max_value=65535)
protocols = st.sampled_from(["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"])
listener_names = st.from_regex(r"[A-Z][A-Z0-9_]{0,11}", fullmatch=True)


@st.composite
def registrations(draw: st.DrawFn) -> BrokerRegistration:
    version = draw(st.integers(min_value=1, max_value=6))
    common = {
        "rack": draw(st.none() | st.text(max_size=8)),
        "jmx_port": draw(st.none() | st.integers(min_value=-1, max_value=65535)),
        "timestamp": draw(st.none() | st.from_regex(r"[0-9]{1,13}", fullmatch=True)),
        "features": draw(st.none() | st.dictionaries(st.text(max_size=5), st.integers(0, 9))),
    }
    if version == 1:
        host = draw(hosts.filter(bool))
        return BrokerRegistration(1, host, draw(ports), **common)
    named = draw(st.booleans())
    listeners = draw(st.lists(listener_names, unique=True, max_size=4))
    protocol_of = {name: draw(protocols) for name in listeners} if named else {}
    endpoints = tuple(
        Endpoint(name, protocol_of.get(name, name), draw(hosts), draw(ports)) for name in listeners
    )
    return BrokerRegistration(
        version,
        draw(st.none() | hosts),
        draw(st.none() | ports),
        endpoints,
        protocol_of,
        **common,
    )


@given(registrations())
def test_registrations_round_trip(broker: BrokerRegistration) -> None:
    assert_round_trips(broker)

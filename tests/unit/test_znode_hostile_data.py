"""Every znode decoder against data no writer should produce: arbitrary bytes and arbitrary
JSON of the right general shape. Whatever ZooKeeper holds, the one outcome other than a value
is `ZnodeDataError` naming the znode; a bare KeyError, TypeError, RecursionError or
OverflowError would surface as a traceback in a member's rebalance, the exporter or the CLI."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.znode_samples import DECODERS

from zkconsumer.errors import ZnodeDataError
from zkconsumer.znodes.brokers import BrokerRegistration
from zkconsumer.znodes.topics import TopicPartitions

PATH = "/some/znode"
# The field names the decoders look for, so that generated objects reach past the first check.
FIELDS = ["version", "subscription", "pattern", "timestamp", "host", "port", "endpoints",
          "listener_security_protocol_map", "rack", "jmx_port", "features", "partitions",
          "adding_replicas", "removing_replicas", "topic_id", "leader", "leader_epoch", "isr",
          "controller_epoch", "0", "1", "t", "PLAINTEXT"]
ANY_NUMBER = st.one_of(st.integers(min_value=-(2**70), max_value=2**70),
                       st.floats(allow_nan=False), st.sampled_from([2**31, -(2**31) - 1, 2**63]))
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), ANY_NUMBER, st.text(max_size=12),
              st.sampled_from(["static", "white_list", "PLAINTEXT://h:1", "PLAINTEXT", "-1"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=6)),
                                            inner, max_size=6)),
    max_leaves=25)


def decode_or_refuse(decoder: str, data: bytes) -> None:
    try:
        DECODERS[decoder](PATH, data)
    except ZnodeDataError as exc:
        assert exc.path == PATH


@settings(max_examples=400, deadline=None)
@given(decoder=st.sampled_from(sorted(DECODERS)), data=st.binary(max_size=200))
def test_arbitrary_bytes_decode_or_are_a_znode_data_error(decoder, data):
    decode_or_refuse(decoder, data)


@settings(max_examples=300, deadline=None)
@given(decoder=st.sampled_from(sorted(DECODERS)),
       document=st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, max_size=8))
def test_arbitrary_json_objects_decode_or_are_a_znode_data_error(decoder, document):
    decode_or_refuse(decoder, json.dumps(document).encode())


@pytest.mark.parametrize("decoder", sorted(set(DECODERS) - {"owner"}))  # any text is an owner
@pytest.mark.parametrize("data", [
    b"[" * 200_000,
    b'{"version":1,"partitions":' + b'{"0":' * 50_000 + b"[0]" + b"}" * 50_001,
    b'{"version":' + b"9" * 5000 + b"}",
    b'{"version":1e999}',
    b'{"version":NaN}',
    b"\xff\xfe{}",
    b"\x00" * 1000,
], ids=["deep-array", "deep-object", "5000-digit-number", "infinite-float", "nan",
        "not-utf8", "zero-bytes"])
def test_hostile_documents_are_a_znode_data_error(decoder, data):
    with pytest.raises(ZnodeDataError):
        DECODERS[decoder](PATH, data)


@pytest.mark.parametrize("partitions", [b'{"-1":[0]}', b'{"2147483648":[0]}', b'{"01":[0]}',
                                        b'{"0":[-1]}', b'{"0":[0.5]}', b'{"0":"0"}'])
def test_topic_partitions_that_no_broker_writes_are_refused(partitions):
    with pytest.raises(ZnodeDataError):
        TopicPartitions.decode(PATH, b'{"version":1,"partitions":' + partitions + b"}")


# Each a document its decoder accepts whole once the one escape is made a real character: the
# surrogate is the only fault in it.
SURROGATE_DOCUMENTS = {
    "registration-whitelist": ("registration", b'{"version":1,"pattern":"white_list",'
                               b'"subscription":{"orders\\\\..*\\udc80":1},'
                               b'"timestamp":"1700000000000"}'),
    "registration-timestamp": ("registration", b'{"version":1,"pattern":"static",'
                               b'"subscription":{"t":1},"timestamp":"17\\ud800"}'),
    "broker-host": ("broker", b'{"version":1,"host":"b1\\ud800","port":9092,"jmx_port":-1}'),
    "broker-endpoint": ("broker", b'{"version":2,"host":"b1","port":9092,"jmx_port":-1,'
                        b'"endpoints":["PLAINTEXT://b\\udfff:9092"]}'),
    "broker-rack": ("broker", b'{"version":3,"host":"b1","port":9092,"jmx_port":-1,'
                    b'"endpoints":["PLAINTEXT://b1:9092"],"rack":"\\uDBFF"}'),
    "topic-key": ("topic", b'{"version":1,"partitions":{"0":[0]},"\\ud800":1}'),
    "topic-id": ("topic", b'{"version":3,"partitions":{"0":[0]},"topic_id":"\\ud800"}'),
}


@pytest.mark.parametrize("decoder,data", SURROGATE_DOCUMENTS.values(),
                         ids=SURROGATE_DOCUMENTS.keys())
def test_a_string_escaping_a_lone_surrogate_is_malformed_znode_data(decoder, data):
    """Before, such a document was accepted, and the project's own encoders then failed with
    UnicodeEncodeError wherever the value was written: the CLI's text and `--json`, the
    exporter's labels and Burrow's JSON. Refused once, at the decoder, no renderer meets it."""
    with pytest.raises(ZnodeDataError, match="lone UTF-16 surrogate") as raised:
        DECODERS[decoder](PATH, data)
    assert raised.value.path == PATH
    whole = data.replace(b"\\ud800", b"x").replace(b"\\udc80", b"x").replace(
        b"\\udfff", b"x").replace(b"\\uDBFF", b"x")
    decoded = DECODERS[decoder](PATH, whole)
    assert decoded is not None


def test_a_surrogate_pair_escaped_as_two_escapes_is_the_character_it_encodes():
    broker = BrokerRegistration.decode(
        PATH, b'{"version":1,"host":"b\\ud83d\\ude00","port":9092,"jmx_port":-1}')
    assert broker.host == "b\U0001F600"
    assert broker.host.encode("utf-8")

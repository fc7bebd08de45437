"""What the first contact decides before kafka-python is opened, on the cases needing no
broker: nothing to learn, and a client told the version that finds no broker up."""

from __future__ import annotations

import pytest

from zkconsumer.errors import ConfigError
from zkconsumer.fetch.first_contact import KafkaUnreachable, checked_options
from zkconsumer.localcluster.processes import free_port

SASL = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "alice", "sasl_plain_password": "pw"}


def test_nothing_is_asked_without_sasl_when_the_version_is_known():
    options = {"bootstrap_servers": f"127.0.0.1:{free_port()}", "api_version": (0, 9)}
    assert checked_options(options) == options


def test_with_the_version_known_a_broker_down_is_left_to_kafka_pythons_retries():
    """Only a refused login must be found first: kafka-python does not block on brokers it
    has been told the version of, and reconnects to them as it always did."""
    options = {"bootstrap_servers": f"127.0.0.1:{free_port()}", "api_version": (2, 0), **SASL}
    assert checked_options(options) == options


def test_without_the_version_a_broker_down_is_named_at_once():
    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(KafkaUnreachable, match=f"cannot reach Kafka at {address}: cannot "
                                               f"connect to broker {address}"):
        checked_options({"bootstrap_servers": address})


def test_an_oauthbearer_login_without_a_token_provider_is_named_before_any_connection():
    """OAUTHBEARER (and GSSAPI) logins are checked by the first contact like the others,
    where they were once left to kafka-python."""
    options = {"bootstrap_servers": f"127.0.0.1:{free_port()}", "api_version": (2, 0),
               "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER"}
    with pytest.raises(ConfigError, match="kafka.sasl.oauth.token.provider"):
        checked_options(options)


def test_sasl_without_a_mechanism_is_a_config_error_naming_the_key():
    with pytest.raises(ConfigError, match="kafka.sasl.mechanism"):
        checked_options({"bootstrap_servers": "127.0.0.1:1", "api_version": (2, 0),
                         **SASL, "sasl_mechanism": None})

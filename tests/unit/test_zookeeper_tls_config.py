"""Kafka's ZooKeeper TLS keys as the config reads them (file, environment, --property), the
stores refused before anything connects, and the store passwords kept out of sight."""

from __future__ import annotations

import pytest
from kazoo.security import make_acl

from zkconsumer.admin.context import admin_config
from zkconsumer.config import ConsumerConfig, Store, ZookeeperTls, load_config
from zkconsumer.config.loading import zookeeper_tls_file_properties
from zkconsumer.config.values import Invalid, openssl_cipher
from zkconsumer.errors import ConfigError
from zkconsumer.logs import redact
from zkconsumer.zk.session import _acl_for
from zkconsumer.zk.tls import ZookeeperTlsError, ssl_context

PASSWORD = "pa55-Word-of-the-store"
BASE = {"group.id": "g", "zookeeper.connect": "zk1:2182"}


def _config(**keys: str) -> ConsumerConfig:
    return ConsumerConfig.from_mapping({**BASE, **{k.replace("_", "."): v
                                                   for k, v in keys.items()}})


def test_kafka_keys_from_the_file_the_environment_and_overrides_make_the_sessions_tls(tmp_path):
    path = tmp_path / "zk-tls.properties"
    path.write_text("zookeeper.connect=zk1:2182\ngroup.id=g\n"
                    "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n"
                    "zookeeper.ssl.client.enable=true\n"
                    "zookeeper.ssl.keystore.location=/etc/kafka/zk-client.p12\n"
                    "zookeeper.ssl.keystore.type=pkcs12\n"
                    "zookeeper.ssl.truststore.location=/etc/kafka/zk-trust.pem\n"
                    "zookeeper.ssl.endpoint.identification.algorithm=\n")
    config = load_config(path, ["zookeeper.ssl.enabled.protocols=TLSv1.2,TLSv1.3",
                                "zookeeper.set.acl=true"],
                         environ={"ZKCONSUMER_ZOOKEEPER_SSL_KEYSTORE_PASSWORD": PASSWORD})
    assert config.zookeeper.tls == ZookeeperTls(
        keystore=Store("/etc/kafka/zk-client.p12", PASSWORD, "PKCS12",
                       "zookeeper.ssl.keystore"),
        truststore=Store("/etc/kafka/zk-trust.pem", None, None, "zookeeper.ssl.truststore"),
        protocols=("TLSv1.2", "TLSv1.3"), cipher_suites=None, check_hostname=False,
        x509_acl=True)
    assert config.zookeeper.tls.truststore.kind == "PEM"
    assert PASSWORD not in repr(config) and PASSWORD not in repr(config.zookeeper)
    assert redact(f"password={PASSWORD}") == "password=***"
    assert ConsumerConfig.from_mapping(config.to_properties()).zookeeper == config.zookeeper


def test_without_client_enable_the_session_stays_plaintext_and_the_host_is_checked_by_default():
    assert _config().zookeeper.tls is None
    tls = _config(zookeeper_ssl_client_enable="true").zookeeper.tls
    assert tls == ZookeeperTls(protocols=("TLSv1.2",), check_hostname=True)
    assert _config(**{"zookeeper.ssl.client.enable": "true",
                      "zookeeper.ssl.protocol": "TLSv1.3"}).zookeeper.tls.protocols == \
        ("TLSv1.3",)


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("zookeeper.ssl.keystore.type", "JKS", "keytool -importkeystore"),
    ("zookeeper.ssl.truststore.type", "BCFKS", "must be PKCS12 or PEM"),
    ("zookeeper.ssl.enabled.protocols", "TLSv1.2,SSLv3", "must be one of TLSv1"),
    ("zookeeper.ssl.cipher.suites", "TLS_FOO_WITH_BAR", "not a cipher suite known here"),
    ("zookeeper.ssl.endpoint.identification.algorithm", "LDAPS", "must be HTTPS"),
    ("zookeeper.set.acl", "true", "needs a client certificate"),
])
def test_a_bad_tls_value_is_one_error_naming_the_key(key, value, reason):
    with pytest.raises(ConfigError) as raised:
        _config(**{"zookeeper.ssl.client.enable": "true", key: value})
    assert raised.value.key == key and reason in str(raised.value)


def test_a_jks_store_named_by_its_file_is_refused_with_the_way_to_convert_it():
    with pytest.raises(ZookeeperTlsError, match="keytool -importkeystore .*zookeeper.ssl.truststore"):
        ssl_context(ZookeeperTls(truststore=Store("/etc/kafka/trust.jks",
                                                  key="zookeeper.ssl.truststore")))


def test_java_cipher_suite_names_become_openssls():
    assert openssl_cipher("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256") == "ECDHE-RSA-AES128-GCM-SHA256"
    assert openssl_cipher("TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384") == \
        "ECDHE-ECDSA-AES256-SHA384"
    assert openssl_cipher("TLS_RSA_WITH_AES_128_CBC_SHA") == "AES128-SHA"
    assert openssl_cipher("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256") == \
        "ECDHE-RSA-CHACHA20-POLY1305"
    assert openssl_cipher("TLS_AES_128_GCM_SHA256") is None  # TLS 1.3: OpenSSL's own
    with pytest.raises(Invalid):
        openssl_cipher("SSL_RSA_WITH_RC4_128_MD5")


def test_a_kafka_tls_file_gives_only_its_zookeeper_tls_keys(tmp_path):
    path = tmp_path / "zk-tls.properties"
    path.write_text("zookeeper.ssl.client.enable=true\nzookeeper.ssl.keystore.password=x=y\n"
                    "zookeeper.connect=elsewhere:2181\nbroker.id=3\n"
                    "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n")
    assert zookeeper_tls_file_properties(path) == ("zookeeper.ssl.client.enable=true",
                                                   "zookeeper.ssl.keystore.password=x=y")


def test_the_commands_take_tls_keys_from_property_and_their_variables():
    config = admin_config("zk1:2182", ["zookeeper.ssl.client.enable=true"],
                          environ={"ZKCONSUMER_ZOOKEEPER_SSL_TRUSTSTORE_LOCATION": "/t.p12",
                                   "ZKCONSUMER_GROUP_ID": "not-for-commands"})
    assert config.zookeeper.tls.truststore.location == "/t.p12"
    assert config.group_id == "zkconsumer-admin"
    with pytest.raises(ConfigError) as raised:
        admin_config("zk1:2182", [], environ={"ZKCONSUMER_ZOOKEEPER_SSL_PROTOCOL": "SSLv2"})
    assert raised.value.source == "environment ZKCONSUMER_ZOOKEEPER_SSL_PROTOCOL"


def test_znodes_carry_the_certificates_identity_and_stay_readable():
    assert _acl_for(None, None, True, "CN=app,O=corp") == [
        make_acl("x509", "CN=app,O=corp", all=True), make_acl("world", "anyone", read=True)]
    assert _acl_for(None, None, True) is None

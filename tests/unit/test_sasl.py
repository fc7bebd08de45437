"""SASL logins as protocol state, without sockets: the request layouts against kafka-python's
own implementation of Kafka's message specs, SCRAM against RFC 7677's published exchange and
against the test front's independent server, and what a refusal says (never the password)."""

from __future__ import annotations

import re
import struct
import time

import pytest
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from support.sasl_front import LoginRefused, PlainServer, ScramServer, scram_credential

from zkconsumer.errors import ConfigError
from zkconsumer.kafka.protocol.sasl import (
    LEGACY_SASL,
    Credentials,
    SaslExchange,
    SaslLoginError,
    SaslVersions,
    ScramClient,
    authenticate_request,
    credentials_from,
    decode_authenticate,
    decode_handshake,
    handshake_request,
    sasl_versions,
)

CORRELATION = b"\x00\x00\x00\x07"  # a response payload starts with its correlation id
PASSWORD = "pencil-Pa55"

# RFC 7677 section 3: a SCRAM-SHA-256 exchange for user "user", password "pencil".
RFC_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_client() -> ScramClient:
    return ScramClient(Credentials("SCRAM-SHA-256", "user", "pencil"), nonce=RFC_NONCE)


def test_scram_sha_256_makes_the_exchange_of_rfc_7677():
    client = rfc_client()
    assert client.first_token() == b"n,,n=user,r=" + RFC_NONCE.encode()
    assert client.next_token(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert not client.done
    assert client.next_token(RFC_SERVER_FINAL) is None
    assert client.done


def test_a_server_signature_that_does_not_match_fails_the_login():
    client = rfc_client()
    client.first_token()
    client.next_token(RFC_SERVER_FIRST)
    with pytest.raises(SaslLoginError, match="signature is wrong"):
        client.next_token(b"v=" + b"A" * 44)


@pytest.mark.parametrize(("server_first", "complaint"), [
    (b"r=someone-elses-nonce,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "nonce does not extend"),
    (b"r=" + RFC_NONCE.encode() + b",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "nonce does not extend"),
    (b"r=" + RFC_NONCE.encode() + b"x,i=4096", "no salt"),
    (b"r=" + RFC_NONCE.encode() + b"x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1", "asks for 1 SCRAM"),
])
def test_a_first_server_message_that_cannot_be_trusted_gets_no_proof(server_first, complaint):
    client = rfc_client()
    client.first_token()
    with pytest.raises(SaslLoginError, match=complaint):
        client.next_token(server_first)


def test_user_names_are_escaped_as_rfc_5802_asks():
    client = ScramClient(Credentials("SCRAM-SHA-512", "a=b,c", "p"), nonce="n0nce")
    assert client.first_token() == b"n,,n=a=3Db=2Cc,r=n0nce"


def _run(exchange: SaslExchange, server) -> None:
    """The exchange against a server object, as `sasl_login` runs it over SaslAuthenticate."""
    handshake_answer = SaslHandshakeResponse[1](error_code=0, mechanisms=["PLAIN"])
    token = exchange.handshake_answered(CORRELATION + bytes(handshake_answer.encode(version=1)))
    while token is not None:
        try:
            answer, _ = server.respond(token)
            response = SaslAuthenticateResponse[1](error_code=0, error_message=None,
                                                   auth_bytes=answer, session_lifetime_ms=0)
        except LoginRefused as refusal:
            response = SaslAuthenticateResponse[1](error_code=58, error_message=str(refusal),
                                                   auth_bytes=b"", session_lifetime_ms=0)
        token = exchange.authenticate_answered(CORRELATION + bytes(response.encode(version=1)))


def _server(mechanism: str):
    if mechanism == "PLAIN":
        return PlainServer({"alice": PASSWORD})
    hash_name = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    return ScramServer(mechanism, {"alice": scram_credential(hash_name, PASSWORD)})


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_the_client_logs_in_to_an_independent_server_and_a_wrong_password_is_refused(mechanism):
    right = SaslExchange("b:9092", Credentials(mechanism, "alice", PASSWORD), SaslVersions(1, 1))
    _run(right, _server(mechanism))
    assert right.done

    wrong = SaslExchange("b:9092", Credentials(mechanism, "alice", "guess-Pa55"),
                         SaslVersions(1, 1))
    with pytest.raises(SaslLoginError) as refused:
        _run(wrong, _server(mechanism))
    line = str(refused.value)
    assert line.startswith(f"SASL login to broker b:9092 failed (mechanism {mechanism}, user "
                           "alice): ")
    assert line.endswith("(error 58 SASL_AUTHENTICATION_FAILED)")
    assert "\n" not in line and "guess-Pa55" not in line and PASSWORD not in line


def test_an_unsupported_mechanism_names_those_the_broker_enables():
    exchange = SaslExchange("b:9092", Credentials("SCRAM-SHA-512", "alice", PASSWORD),
                            SaslVersions(1, 1))
    answer = SaslHandshakeResponse[1](error_code=33, mechanisms=["PLAIN", "SCRAM-SHA-256"])
    with pytest.raises(SaslLoginError, match=r"mechanism SCRAM-SHA-512.*does not enable this "
                                             r"mechanism \(it enables PLAIN, SCRAM-SHA-256\)"):
        exchange.handshake_answered(CORRELATION + bytes(answer.encode(version=1)))


def test_a_connection_closed_during_a_bare_token_login_is_read_as_a_refusal():
    bare = SaslExchange("b:9092", Credentials("PLAIN", "alice", PASSWORD), LEGACY_SASL)
    assert "with SaslHandshake v0 that is how it rejects a login" in str(bare.closed("EOF"))
    framed = SaslExchange("b:9092", Credentials("PLAIN", "alice", PASSWORD), SaslVersions(1, 1))
    assert "SaslHandshake v0" not in str(framed.closed("EOF"))


def test_request_layouts_match_kafkas_message_specs():
    assert handshake_request("SCRAM-SHA-256") == bytes(
        SaslHandshakeRequest[1](mechanism="SCRAM-SHA-256").encode(version=1))
    assert authenticate_request(b"token") == bytes(
        SaslAuthenticateRequest[1](auth_bytes=b"token").encode(version=1))
    answer = SaslHandshakeResponse[0](error_code=0, mechanisms=["PLAIN", "SCRAM-SHA-512"])
    assert decode_handshake(CORRELATION + bytes(answer.encode(version=0))) == (
        0, ["PLAIN", "SCRAM-SHA-512"])
    for version in (0, 1):
        fields = {"error_code": 58, "error_message": "no", "auth_bytes": b"xy"}
        if version:
            fields["session_lifetime_ms"] = 3600
        encoded = SaslAuthenticateResponse[version](**fields).encode(version=version)
        assert decode_authenticate(CORRELATION + bytes(encoded)) == (58, "no", b"xy")


@pytest.mark.parametrize(("offered", "expected"), [
    ({}, LEGACY_SASL),                                       # no ApiVersions answer
    ({17: (0, 0)}, SaslVersions(0, None)),                   # 0.10.0 to 0.11: bare tokens
    ({17: (0, 1), 36: (0, 0)}, SaslVersions(1, 0)),          # 1.0
    ({17: (0, 1), 36: (0, 2)}, SaslVersions(1, 1)),          # 2.2 on: v2 adds nothing needed
    ({17: (1, 1), 36: (0, 2)}, SaslVersions(1, 1)),          # 4.0 dropped SaslHandshake v0
])
def test_login_versions_follow_the_brokers_api_versions_answer(offered, expected):
    assert sasl_versions(offered) == expected


def test_credentials_are_required_and_never_shown():
    settings = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-256",
                "sasl_plain_username": "alice", "sasl_plain_password": PASSWORD}
    credentials = credentials_from(settings)
    assert credentials == Credentials("SCRAM-SHA-256", "alice", PASSWORD)
    assert PASSWORD not in repr(credentials) and PASSWORD not in str(credentials)
    assert credentials_from({**settings, "security_protocol": "SSL"}) is None
    with pytest.raises(ConfigError, match="kafka.sasl.plain.password.*SCRAM-SHA-256 needs it"):
        credentials_from({**settings, "sasl_plain_password": None})
    with pytest.raises(ConfigError, match="kafka.sasl.mechanism.*SASL_SSL needs one"):
        credentials_from({**settings, "sasl_mechanism": None})


@pytest.mark.parametrize(("iterations", "complaint"), [
    ("214748364", "asks for 214748364 SCRAM iterations; Kafka stores credentials with 4096 to "
                  "16384"),
    ("16385", "asks for 16385 SCRAM iterations"),
    ("4095", "asks for 4095 SCRAM iterations"),
    ("\u2460\u2460\u2460\u2460", "iteration count '\u2460\u2460\u2460\u2460' is not a number"),
    ("9" * 40, "is not a number of iterations"),
    (" 4096", "is not a number of iterations"),
    ("", "is not a number of iterations"),
])
def test_an_iteration_count_kafka_could_not_have_stored_is_one_login_error_at_once(iterations,
                                                                                  complaint):
    """Before, 214,748,364 iterations held the login in PBKDF2 for minutes, a circled digit
    raised ValueError and forty nines OverflowError."""
    exchange = SaslExchange("b1:9093", Credentials("SCRAM-SHA-256", "alice", "secret"),
                            SaslVersions(1, 1), nonce="n0nce")
    exchange.handshake_answered(b"\0\0\0\1" + b"\0\0\0\0\0\0")
    started = time.monotonic()
    with pytest.raises(SaslLoginError, match="broker b1:9093 failed .*user alice.*" +
                       re.escape(complaint)):
        exchange.token_answered(f"r=n0nceXY,s=c2FsdA==,i={iterations}".encode())
    assert time.monotonic() - started < 1


@pytest.mark.parametrize("salt", ["!!!", "c2FsdA=", "c2Fsd\u00e9==", "c2 FsdA=="])
def test_a_salt_that_is_not_base64_is_one_login_error(salt):
    """Before, binascii.Error escaped."""
    client = ScramClient(Credentials("SCRAM-SHA-512", "alice", "secret"), nonce="n0nce")
    with pytest.raises(SaslLoginError, match="SCRAM salt .* is not base64"):
        client.next_token(f"r=n0nceXY,s={salt},i=4096".encode())


def test_what_a_broker_writes_into_an_error_stays_on_one_short_line():
    exchange = SaslExchange("b1:9093", Credentials("SCRAM-SHA-256", "alice", "secret"),
                            SaslVersions(1, 1), nonce="n0nce")
    message = "denied\nerror: forged line " + "x" * 500
    answer = (b"\0\0\0\1" + struct.pack(">h", 58) + struct.pack(">h", len(message))
              + message.encode() + struct.pack(">i", 0))
    with pytest.raises(SaslLoginError) as raised:
        exchange.authenticate_answered(answer)
    assert "\n" not in str(raised.value) and len(str(raised.value)) < 250
    assert "'denied\\nerror: forged line xxx" in str(raised.value)

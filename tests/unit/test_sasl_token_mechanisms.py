"""OAUTHBEARER (RFC 7628) and GSSAPI (RFC 4752) logins as protocol state: OAUTHBEARER's exact
bytes and its error exchange against the test front's independent server, the checks of the
user's token provider; GSSAPI against a scripted security context, its final security-layer
step included, so that no Kerberos is needed."""

from __future__ import annotations

import struct
import sys

import pytest
from support.sasl_front import OAuthBearerServer, StaticTokenProvider, unsecured_token

from zkconsumer.errors import ConfigError
from zkconsumer.kafka.io.logins import broker_login, gssapi_contexts, token_provider_named
from zkconsumer.kafka.protocol.sasl import (
    Kerberos,
    OAuthBearer,
    OAuthBearerClient,
    SaslExchange,
    SaslLoginError,
    SaslVersions,
    credentials_from,
)

CORRELATION = b"\x00\x00\x00\x07"
HANDSHAKE_OK = CORRELATION + b"\x00\x00" + b"\x00\x00\x00\x00"
TOKEN = unsecured_token("alice")
OAUTH = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER"}
PROVIDER = StaticTokenProvider(TOKEN)  # named by module:attribute below


def authenticate_answer(error: int = 0, message: str | None = None, token: bytes = b"") -> bytes:
    text = b"\xff\xff" if message is None else struct.pack(">h", len(message)) + message.encode()
    return CORRELATION + struct.pack(">h", error) + text + struct.pack(">i", len(token)) + token


def oauth_exchange(provider) -> SaslExchange:
    return SaslExchange("b1:9093", OAuthBearer(provider), SaslVersions(1, 1))


# -- OAUTHBEARER -------------------------------------------------------------------------------

def test_the_initial_response_is_rfc_7628s_without_extensions():
    client = OAuthBearerClient(OAuthBearer(StaticTokenProvider("abc.def-_~+/.x==")))
    assert client.first_token() == b"n,,\x01auth=Bearer abc.def-_~+/.x==\x01\x01"
    assert client.next_token(b"") is None and client.done


def test_the_initial_response_carries_the_providers_extensions_in_order_of_name():
    provider = StaticTokenProvider("t0k", {"traceId": "a b\t1", "logicalCluster": "lkc-1"})
    assert OAuthBearerClient(OAuthBearer(provider)).first_token() == (
        b"n,,\x01auth=Bearer t0k\x01logicalCluster=lkc-1\x01traceId=a b\t1\x01\x01")


def test_a_known_token_logs_in_to_an_independent_server_and_an_unknown_one_is_refused():
    server = OAuthBearerServer({TOKEN: "alice"})
    good = oauth_exchange(StaticTokenProvider(TOKEN, {"traceId": "42"}))
    first = good.handshake_answered(HANDSHAKE_OK)
    answer, complete = server.respond(first)
    assert complete and good.authenticate_answered(authenticate_answer(token=answer)) is None
    assert good.done and server.user == "alice" and server.extensions == {"traceId": "42"}

    stolen = unsecured_token("mallory")
    server = OAuthBearerServer({TOKEN: "alice"})
    bad = oauth_exchange(StaticTokenProvider(stolen))
    challenge, complete = server.respond(bad.handshake_answered(HANDSHAKE_OK))
    assert not complete and b"invalid_token" in challenge
    acknowledgement = bad.authenticate_answered(authenticate_answer(token=challenge))
    assert acknowledgement == b"\x01"  # RFC 7628 3.2.3: the client's lone reply to an error
    with pytest.raises(Exception, match="invalid_token"):
        server.respond(acknowledgement)
    with pytest.raises(SaslLoginError) as refused:
        bad.authenticate_answered(authenticate_answer(58, "Authentication failed"))
    text = str(refused.value)
    assert text.startswith("SASL login to broker b1:9093 failed (mechanism OAUTHBEARER): "
                           "Authentication failed (error 58 SASL_AUTHENTICATION_FAILED)")
    assert text.endswith("the broker refused the token (status invalid_token)")
    assert stolen not in text and "\n" not in text


def test_a_broker_going_on_after_its_error_or_answering_garbage_is_one_login_error():
    exchange = oauth_exchange(PROVIDER)
    exchange.handshake_answered(HANDSHAKE_OK)
    error = b'{"status": "invalid_token", "scope": "kafka"}'
    assert exchange.token_answered(error) == b"\x01"
    with pytest.raises(SaslLoginError, match=r"answered after refusing the token: .*status "
                                             r"invalid_token, scope kafka"):
        exchange.token_answered(b"")
    for garbage in (b"not json", b'["status"]', b'{"status": 5}', b"\xff\xfe"):
        fresh = oauth_exchange(PROVIDER)
        fresh.handshake_answered(HANDSHAKE_OK)
        with pytest.raises(SaslLoginError, match="neither empty nor an RFC 7628 error"):
            fresh.token_answered(garbage)


@pytest.mark.parametrize(("provider", "complaint"), [
    (None, "needs a token provider"),
    ("pkg:provider", "through the Python API give the provider object itself"),
    (object(), "has no token\\(\\) method"),
])
def test_a_missing_or_unusable_provider_is_a_config_error_naming_the_key(provider, complaint):
    with pytest.raises(ConfigError, match="kafka.sasl.oauth.token.provider.*" + complaint):
        credentials_from({**OAUTH, "sasl_oauth_token_provider": provider})


class _Raising:
    def token(self) -> str:
        raise RuntimeError("token endpoint down")


@pytest.mark.parametrize(("provider", "complaint"), [
    (StaticTokenProvider(""), "gave an empty string, not a bearer token"),
    (StaticTokenProvider("has a space"), "gave a text of 11 characters, not a bearer token"),
    (StaticTokenProvider(42), "gave a int, not a bearer token"),  # type: ignore[arg-type]
    (_Raising(), "token\\(\\) failed: RuntimeError: token endpoint down"),
    (StaticTokenProvider("t", {"auth": "x"}), "extension name the text auth is not one"),
    (StaticTokenProvider("t", {"trace1": "x"}), "extension name the text trace1 is not one"),
    (StaticTokenProvider("t", {"trace": "a\x01b"}), "extension trace has the value"),
    (StaticTokenProvider("t", {"trace": ""}), "extension trace has the value an empty string"),
])
def test_a_bad_token_or_extension_from_the_provider_ends_the_login_in_one_line(provider,
                                                                              complaint):
    exchange = oauth_exchange(provider)
    with pytest.raises(SaslLoginError, match=r"broker b1:9093 failed \(mechanism OAUTHBEARER\)"
                                             r": .*(" + complaint + ")"):
        exchange.handshake_answered(HANDSHAKE_OK)


def test_a_properties_file_names_the_provider_as_module_and_attribute():
    named = token_provider_named(f"{__name__}:PROVIDER")
    assert named is PROVIDER
    login = broker_login({**OAUTH, "sasl_oauth_token_provider": f"{__name__}:PROVIDER"})
    assert login == OAuthBearer(PROVIDER)
    for text, complaint in [("no-colon", "must name the token provider as module:attribute"),
                            ("no_such_module_x:p", "cannot be imported"),
                            (f"{__name__}:NOTHING", "cannot be imported"),
                            (f"{__name__}:CORRELATION", "no token\\(\\) method")]:
        with pytest.raises(ConfigError, match="kafka.sasl.oauth.token.provider.*" + complaint):
            token_provider_named(text)


def make_provider() -> StaticTokenProvider:
    return StaticTokenProvider("made")


def test_a_named_function_or_class_is_called_for_the_provider():
    assert token_provider_named(f"{__name__}:make_provider").token() == "made"
    with pytest.raises(ConfigError, match="making the provider failed: TypeError"):
        token_provider_named("support.sasl_front:StaticTokenProvider")  # needs a token


def test_the_fallback_backends_options_get_the_same_provider():
    from zkconsumer.fetch.kafka_client import kafka_client_options

    options = kafka_client_options({"security.protocol": "SASL_SSL",
                                    "sasl.mechanism": "OAUTHBEARER",
                                    "sasl.oauth.token.provider": f"{__name__}:PROVIDER"})
    assert options["sasl_oauth_token_provider"] is PROVIDER


def test_an_unknown_mechanism_is_a_config_error_on_every_path():
    with pytest.raises(ConfigError, match="kafka.sasl.mechanism='DIGEST-MD5'.*must be one of "
                                          "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER"):
        credentials_from({**OAUTH, "sasl_mechanism": "DIGEST-MD5"})


# -- GSSAPI ------------------------------------------------------------------------------------

def wrapped(message: bytes) -> bytes:
    return b"MIC[" + message + b"]"


class ScriptedContext:
    """A security context following a script: the token expected at each step, the token it
    answers, and whether it is established after it; wrapping is a visible marker."""

    def __init__(self, service: str, script: list[tuple[bytes | None, bytes | None, bool]]
                 ) -> None:
        self.service = service
        self._script = list(script)
        self.complete = False
        self.wrapped: list[bytes] = []

    def step(self, token: bytes | None) -> bytes | None:
        expected, answer, complete = self._script.pop(0)
        assert token == expected
        self.complete = complete
        return answer

    def wrap(self, message: bytes) -> bytes:
        self.wrapped.append(message)
        return wrapped(message)

    def unwrap(self, message: bytes) -> bytes:
        if not (message.startswith(b"MIC[") and message.endswith(b"]")):
            raise SaslLoginError("the broker's security-layer offer failed: bad MIC")
        return message[4:-1]


MUTUAL = [(None, b"AP-REQ", False), (b"AP-REP", None, True)]


def kerberos_exchange(script=MUTUAL, **login) -> tuple[SaslExchange, list[ScriptedContext]]:
    made: list[ScriptedContext] = []

    def new_context(service: str) -> ScriptedContext:
        made.append(ScriptedContext(service, script))
        return made[-1]

    settings = {"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI", **login}
    kerberos = credentials_from(settings)
    assert isinstance(kerberos, Kerberos)
    exchange = SaslExchange("broker1.example:9093", kerberos._replace(new_context=new_context),
                            SaslVersions(1, 1), host="broker1.example")
    return exchange, made


def test_gssapi_trades_context_tokens_then_answers_the_offer_with_no_security_layer():
    exchange, (context,) = kerberos_exchange()
    assert context.service == "kafka@broker1.example"  # the default service, the broker's host
    assert exchange.handshake_answered(HANDSHAKE_OK) == b"AP-REQ"
    assert exchange.token_answered(b"AP-REP") == b""  # established: the broker goes on
    assert not exchange.final
    offer = wrapped(bytes([0x07]) + (65536).to_bytes(3, "big"))  # none, integrity, privacy
    answer = exchange.token_answered(offer)
    assert answer == wrapped(b"\x01\x00\x00\x00") and context.wrapped == [b"\x01\x00\x00\x00"]
    assert exchange.final and not exchange.done
    assert exchange.token_answered(b"") is None and exchange.done


def test_a_context_established_at_once_asks_the_broker_for_its_offer_with_an_empty_token():
    exchange, _ = kerberos_exchange([(None, b"AP-REQ", True)])
    assert exchange.handshake_answered(HANDSHAKE_OK) == b"AP-REQ"
    assert exchange.token_answered(b"") == b""
    assert exchange.token_answered(wrapped(b"\x01\x00\x00\x00")) == wrapped(b"\x01\x00\x00\x00")


def test_the_service_and_domain_names_follow_kafka_pythons_settings():
    _, (context,) = kerberos_exchange(sasl_kerberos_service_name="kafka-prod",
                                      sasl_kerberos_domain_name="kafka.example.com")
    assert context.service == "kafka-prod@kafka.example.com"
    _, (context,) = kerberos_exchange(sasl_kerberos_name="brokers@realm-host")
    assert context.service == "brokers@realm-host"


@pytest.mark.parametrize(("offer", "complaint"), [
    (wrapped(b"\x01\x00\x00"), "offer is 3 bytes, not the 4 of RFC 4752"),
    (wrapped(b"\x01\x00\x00\x00\x00"), "offer is 5 bytes, not the 4 of RFC 4752"),
    (wrapped(b"\x06\x00\x10\x00"), "offer \\(layers 0x06\\) does not include running without"),
    (b"\x01\x00\x00\x00", "offer failed: bad MIC"),
])
def test_a_malformed_security_layer_offer_is_one_named_login_error(offer, complaint):
    exchange, (context,) = kerberos_exchange()
    exchange.handshake_answered(HANDSHAKE_OK)
    exchange.token_answered(b"AP-REP")
    with pytest.raises(SaslLoginError, match=r"broker broker1.example:9093 failed \(mechanism "
                                             r"GSSAPI, service kafka@broker1.example\): .*"
                                             + complaint):
        exchange.token_answered(offer)
    assert context.wrapped == []


def test_a_refused_gssapi_login_names_the_service():
    exchange, _ = kerberos_exchange()
    exchange.handshake_answered(HANDSHAKE_OK)
    with pytest.raises(SaslLoginError, match=r"\(mechanism GSSAPI, service kafka@broker1."
                                             r"example\): Authentication failed"):
        exchange.authenticate_answered(authenticate_answer(58, "Authentication failed"))


def test_without_the_gssapi_package_gssapi_is_one_config_error_saying_what_to_install(
        monkeypatch):
    monkeypatch.setitem(sys.modules, "gssapi", None)  # an import of it fails, as uninstalled
    with pytest.raises(ConfigError, match="kafka.sasl.mechanism='GSSAPI'.*pip install gssapi"):
        gssapi_contexts()
    with pytest.raises(ConfigError, match="pip install gssapi"):
        broker_login({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI"})

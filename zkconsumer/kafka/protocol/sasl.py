"""Logging in to a broker with SASL: PLAIN, SCRAM-SHA-256/512, OAUTHBEARER and GSSAPI, as
protocol state.

A SASL listener takes no request but ApiVersions before the login: the client names its
mechanism (SaslHandshake), then trades tokens with the broker until the mechanism is satisfied.
Brokers from 1.0 on (SaslHandshake v1) carry each token in a SaslAuthenticate request, whose
answer has an error code and message; those from 0.10.0 to 0.11 (SaslHandshake v0) take the
tokens as bare length-prefixed frames and reject a login by closing the connection.

SCRAM (RFC 5802, with the hashes of RFC 7677) never sends the password: the client proves it
knows the salted password, and checks the broker's signature in turn, so a front that does not
know the password cannot pass for the broker.

OAUTHBEARER (RFC 7628, KIP-255/342) sends a bearer token, and optional extensions, from the
user's token provider (kafka-python's `sasl_oauth_token_provider`: an object with `token()`
and optionally `extensions()`); a broker refusing it sends a JSON error, answered by a lone
0x01, and then fails the login. GSSAPI (Kerberos, RFC 4752) trades the tokens of a GSS-API
security context until it is established, then answers the broker's offer of security layers
with "none": the context itself (the `gssapi` package's, see `kafka.io.logins`) is handed
in, so the decisions here run without Kerberos.

Pure: the encodings and the mechanisms' steps, no sockets; `sasl_login` in `kafka.io.channel`
drives one exchange over a connection.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
import struct
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol, TypeVar

from zkconsumer.errors import ConfigError
from zkconsumer.kafka.errors import FetchError

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 33, 34, 58
SASL_SECURITY_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
_SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
PASSWORD_MECHANISMS = ("PLAIN", *_SCRAM_HASHES)
# Every mechanism kafka-python speaks, and so every one `kafka.sasl.mechanism` may name.
WIRE_MECHANISMS = (*PASSWORD_MECHANISMS, "OAUTHBEARER", "GSSAPI")
TOKEN_PROVIDER_KEY = "kafka.sasl.oauth.token.provider"
# RFC 6750's b64token (a JWT is one), RFC 7628's extension key, and KIP-342's extension value.
_BEARER_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7e \t\r\n]+")
_KVSEP = b"\x01"
# RFC 4752's security layers: the bit of "none" in the broker's offer and in the answer.
NO_SECURITY_LAYER = 0x01
# Kafka stores SCRAM credentials with 4,096 to 16,384 iterations and refuses any other count.
# A broker asking for fewer is not one to trust with a proof; one asking for more would hold
# the login computing PBKDF2 for as long as it likes (2^31 iterations take minutes).
MIN_SCRAM_ITERATIONS, MAX_SCRAM_ITERATIONS = 4096, 16384
# What a broker's SCRAM message, error message or field can put into one error line.
_SHOWN_CHARACTERS = 60
_ERROR_NAMES = {UNSUPPORTED_SASL_MECHANISM: "UNSUPPORTED_SASL_MECHANISM",
                ILLEGAL_SASL_STATE: "ILLEGAL_SASL_STATE",
                SASL_AUTHENTICATION_FAILED: "SASL_AUTHENTICATION_FAILED"}
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
Payload = bytes | bytearray  # a response as the channel reads it, correlation id first
_Answer = TypeVar("_Answer")


class SaslLoginError(FetchError):
    """The broker refused the login, or the login cannot be made: no retry can cure it."""


class SaslProtocolError(ValueError):
    """A SASL answer did not parse."""


class Credentials(NamedTuple):
    mechanism: str
    username: str
    password: str

    def __repr__(self) -> str:
        return f"Credentials({self.mechanism!r}, {self.username!r}, '***')"


class SaslVersions(NamedTuple):
    """SaslHandshake's version, and SaslAuthenticate's (None: the bare frames of
    SaslHandshake v0)."""

    handshake: int
    authenticate: int | None


LEGACY_SASL = SaslVersions(0, None)


def sasl_versions(offered: Mapping[int, tuple[int, int]]) -> SaslVersions:
    """The versions to log in with, from a broker's ApiVersions answer; v2 of SaslAuthenticate
    (flexible encoding) adds nothing a login needs."""
    if SASL_HANDSHAKE not in offered:
        return LEGACY_SASL
    handshake = min(1, offered[SASL_HANDSHAKE][1])
    if handshake < 1 or SASL_AUTHENTICATE not in offered:
        return SaslVersions(handshake, None)
    return SaslVersions(handshake, min(1, offered[SASL_AUTHENTICATE][1]))


class OAuthBearer(NamedTuple):
    """An OAUTHBEARER login: the token provider, asked for a token at each login (tokens
    expire)."""

    provider: Any
    mechanism: str = "OAUTHBEARER"


class GssContext(Protocol):
    """What a GSSAPI login needs of a GSS-API security context (initiator side); every
    failure of its own is a SaslLoginError."""

    @property
    def complete(self) -> bool: ...

    def step(self, token: bytes | None) -> bytes | None: ...

    def wrap(self, message: bytes) -> bytes: ...

    def unwrap(self, message: bytes) -> bytes: ...


class Kerberos(NamedTuple):
    """A GSSAPI login to the service `service_name@domain_name` (the broker's host when no
    domain is set), or to `principal` as given; `new_context` makes the security context for a
    service name (None until the opener binds the gssapi package's)."""

    service_name: str
    domain_name: str | None
    principal: str | None = None
    new_context: Callable[[str], GssContext] | None = None
    mechanism: str = "GSSAPI"

    def target(self, host: str) -> str:
        return self.principal or f"{self.service_name}@{self.domain_name or host}"


BrokerLogin = Credentials | OAuthBearer | Kerberos


def credentials_from(settings: Mapping[str, Any]) -> BrokerLogin | None:
    """The login the kafka-python settings ask for; None without SASL. The one place that
    reads the SASL settings, for every path that opens a connection. Kafka's own default
    mechanism is GSSAPI and kafka-python has none, so none is not guessed. ConfigError: a
    setting missing or unusable."""
    if settings.get("security_protocol", "PLAINTEXT") not in SASL_SECURITY_PROTOCOLS:
        return None
    mechanism = settings.get("sasl_mechanism")
    if mechanism is None:
        raise ConfigError("kafka.sasl.mechanism", "<unset>",
                          f"{settings['security_protocol']} needs one: "
                          f"{', '.join(WIRE_MECHANISMS)}")
    if mechanism not in WIRE_MECHANISMS:
        raise ConfigError("kafka.sasl.mechanism", mechanism,
                          f"must be one of {', '.join(WIRE_MECHANISMS)}")
    if mechanism == "OAUTHBEARER":
        return OAuthBearer(checked_token_provider(settings.get("sasl_oauth_token_provider")))
    if mechanism == "GSSAPI":
        principal = settings.get("sasl_kerberos_name")
        return Kerberos(settings.get("sasl_kerberos_service_name") or "kafka",
                        settings.get("sasl_kerberos_domain_name") or None,
                        None if principal is None else str(principal))
    for key in ("sasl_plain_username", "sasl_plain_password"):
        if not settings.get(key):
            raise ConfigError("kafka." + key.replace("_", "."), "<unset>",
                              f"SASL {mechanism} needs it")
    return Credentials(mechanism, settings["sasl_plain_username"],
                       settings["sasl_plain_password"])


def checked_token_provider(provider: Any) -> Any:
    """The OAUTHBEARER token provider, if it is one: an object with a `token()` method and
    optionally `extensions()`, as kafka-python's AbstractTokenProvider. Text is for a
    properties file, where `kafka.io.logins.token_provider_named` reads it first."""
    if provider is None:
        raise ConfigError(TOKEN_PROVIDER_KEY, "<unset>",
                          "SASL OAUTHBEARER needs a token provider: module:attribute naming "
                          "one, or the object itself through the Python API")
    if isinstance(provider, str):
        raise ConfigError(TOKEN_PROVIDER_KEY, provider,
                          "text names a provider as module:attribute only in properties; "
                          "through the Python API give the provider object itself")
    if not callable(getattr(provider, "token", None)):
        raise ConfigError(TOKEN_PROVIDER_KEY, type(provider).__name__,
                          "is not a token provider: it has no token() method")
    extensions = getattr(provider, "extensions", None)
    if extensions is not None and not callable(extensions):
        raise ConfigError(TOKEN_PROVIDER_KEY, type(provider).__name__,
                          "is not a token provider: its extensions is not a method")
    return provider


# -- the requests ----------------------------------------------------------------------------

def handshake_request(mechanism: str) -> bytes:
    return _string(mechanism)


def decode_handshake(payload: Payload) -> tuple[int, list[str]]:
    """(error code, the mechanisms the broker enables)."""
    reader = _Reader(payload)
    error = reader.int16()
    mechanisms = [reader.string() for _ in range(reader.int32())]
    reader.expect_end()
    return error, mechanisms


def authenticate_request(token: bytes) -> bytes:
    return _INT32.pack(len(token)) + token


def decode_authenticate(payload: Payload) -> tuple[int, str | None, bytes]:
    """(error code, error message, the broker's token); v1's session lifetime is not used."""
    reader = _Reader(payload)
    error = reader.int16()
    message = reader.nullable_string()
    token = reader.blob()
    return error, message, token


def error_text(code: int) -> str:
    return f"error {code} {_ERROR_NAMES.get(code, 'UNKNOWN')}"


# -- the mechanisms --------------------------------------------------------------------------

class PlainClient:
    """RFC 4616: one token with the user name and password; the broker's empty answer ends it."""

    final = False
    refusal: str | None = None

    def __init__(self, credentials: Credentials) -> None:
        self._credentials = credentials
        self.who = f"user {credentials.username}"
        self.done = False

    def first_token(self) -> bytes:
        return b"\0" + self._credentials.username.encode() + b"\0" + \
            self._credentials.password.encode()

    def next_token(self, challenge: bytes) -> bytes | None:
        self.done = True
        return None


class ScramClient:
    """RFC 5802 without channel binding (the gs2 header "n,,"), as Kafka speaks it: the first
    message names the user with a fresh nonce, the second proves the password against the salt
    and iteration count the broker sent, and the broker's last message must carry the signature
    only a holder of the stored keys can make."""

    final = False
    refusal: str | None = None

    def __init__(self, credentials: Credentials, nonce: str | None = None) -> None:
        self._hash = _SCRAM_HASHES[credentials.mechanism]
        self._credentials = credentials
        self.who = f"user {credentials.username}"
        self._nonce = nonce or base64.b64encode(secrets.token_bytes(24)).decode()
        self._first_bare = f"n={_sasl_name(credentials.username)},r={self._nonce}"
        self._server_signature: bytes | None = None
        self.done = False

    def first_token(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def next_token(self, challenge: bytes) -> bytes | None:
        if self._server_signature is None:
            return self._final_message(challenge.decode(errors="replace"))
        self._verify(challenge.decode(errors="replace"))
        self.done = True
        return None

    def _final_message(self, server_first: str) -> bytes:
        fields = _scram_fields(server_first)
        nonce, salt, iterations = fields.get("r", ""), fields.get("s"), fields.get("i", "")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise SaslLoginError("the broker's SCRAM nonce does not extend ours")
        if not nonce.isascii() or not nonce.isprintable():
            raise SaslLoginError(f"the broker's SCRAM nonce {_shown(nonce)} is not printable "
                                 "ASCII, as RFC 5802 asks")
        if salt is None or "i" not in fields:
            raise SaslLoginError("the broker's first SCRAM message has no salt or iterations")
        salted = hashlib.pbkdf2_hmac(self._hash, self._credentials.password.encode(),
                                     _scram_salt(salt), _scram_iterations(iterations))
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{server_first},{without_proof}".encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify(self, server_final: str) -> None:
        fields = _scram_fields(server_final)
        if "e" in fields:
            raise SaslLoginError(f"the broker ended SCRAM with error {_shown(fields['e'])}")
        verifier = fields.get("v", "")
        if not hmac.compare_digest(verifier.encode(),
                                   base64.b64encode(self._server_signature or b"")):
            raise SaslLoginError("the broker's SCRAM signature is wrong: it does not hold this "
                                 "user's credentials")

    def _hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self._hash).digest()


class OAuthBearerClient:
    """RFC 7628's client: one message with the bearer token (and the provider's extensions,
    KIP-342); the broker's empty answer ends it. A broker refusing the token answers with a
    JSON error instead, which the client acknowledges with a lone 0x01 (RFC 7628 section 3.2.3)
    before the broker fails the login; the error's status is then kept as `refusal`."""

    final = False

    def __init__(self, login: OAuthBearer) -> None:
        self._provider = login.provider
        self.who = ""
        self.refusal: str | None = None
        self.done = False

    def first_token(self) -> bytes:
        token = self._asked("token")
        if not isinstance(token, str) or not _BEARER_TOKEN.fullmatch(token):
            raise SaslLoginError(f"the token provider ({TOKEN_PROVIDER_KEY}) gave "
                                 f"{_described(token, shown=False)}, not a bearer token (a non-empty "
                                 "string of RFC 6750 token characters)")
        extensions = self._extensions()
        pairs = [f"auth=Bearer {token}".encode()]
        pairs += [f"{key}={value}".encode() for key, value in sorted(extensions.items())]
        return b"n,," + _KVSEP + b"".join(pair + _KVSEP for pair in pairs) + _KVSEP

    def next_token(self, challenge: bytes) -> bytes | None:
        if self.refusal is not None:
            raise SaslLoginError(f"the broker answered after refusing the token: {self.refusal}")
        if not challenge:
            self.done = True
            return None
        self.refusal = _oauth_error(challenge)
        return _KVSEP

    def _extensions(self) -> dict[str, str]:
        if getattr(self._provider, "extensions", None) is None:
            return {}
        extensions = self._asked("extensions")
        if extensions is None:
            return {}
        if not isinstance(extensions, Mapping):
            raise SaslLoginError(f"the token provider's extensions() gave "
                                 f"{_described(extensions)}, not a dict")
        for key, value in extensions.items():
            if not isinstance(key, str) or not _EXTENSION_KEY.fullmatch(key) or key == "auth":
                raise SaslLoginError(f"the token provider's extension name {_described(key)} "
                                     "is not one RFC 7628 allows (letters only, not 'auth')")
            if not isinstance(value, str) or not _EXTENSION_VALUE.fullmatch(value):
                raise SaslLoginError(f"the token provider's extension {key} has the value "
                                     f"{_described(value)}: not printable ASCII")
        return dict(extensions)

    def _asked(self, method: str) -> Any:
        try:
            return getattr(self._provider, method)()
        except Exception as exc:  # the user's code: any failure ends the login in one line
            raise SaslLoginError(f"the token provider's {method}() failed: "
                                 f"{type(exc).__name__}: {_shown(str(exc))}") from exc


def _oauth_error(challenge: bytes) -> str:
    """What a broker's RFC 7628 error says: its status, and the scope it asks for."""
    try:
        error = json.loads(challenge.decode())
    except (UnicodeDecodeError, ValueError, RecursionError):  # "[[[[..." nests past the stack
        error = None
    if not isinstance(error, dict) or not isinstance(error.get("status"), str):
        raise SaslLoginError("the broker's OAUTHBEARER answer is neither empty nor an RFC 7628 "
                             f"error: {_shown(challenge.decode(errors='replace'))}")
    scope = error.get("scope")
    scoped = f", scope {_shown(scope)}" if isinstance(scope, str) else ""
    return f"the broker refused the token (status {_shown(error['status'])}{scoped})"


class GssapiClient:
    """RFC 4752's client: the security context's tokens until it is established (an empty
    token asks the broker to go on once the context needs nothing more), then the broker's
    wrapped offer of security layers (4 bytes: a bit mask and a maximum message size), answered
    wrapped with no security layer, a maximum size of 0 (RFC 4752: none without a layer) and no
    authorization identity. That answer is the last token: `final` then tells a connection
    speaking bare frames, where the broker answers nothing more, not to wait for one."""

    refusal: str | None = None

    def __init__(self, login: Kerberos, host: str) -> None:
        if login.new_context is None:
            raise SaslLoginError("no GSS-API security context is bound to the GSSAPI login")
        self.who = f"service {login.target(host)}"
        self._context = login.new_context(login.target(host))
        self._asked_for_offer = False
        self.final = False
        self.done = False

    def first_token(self) -> bytes:
        return self._context.step(None) or b""

    def next_token(self, challenge: bytes) -> bytes | None:
        if self.final:
            self.done = True
            return None
        if not self._context.complete:
            return self._context.step(challenge) or b""
        if not challenge and not self._asked_for_offer:
            self._asked_for_offer = True
            return b""
        return self._answer_offer(self._context.unwrap(challenge))

    def _answer_offer(self, offer: bytes) -> bytes:
        if len(offer) != 4:
            raise SaslLoginError(f"the broker's GSSAPI security-layer offer is {len(offer)} "
                                 "bytes, not the 4 of RFC 4752")
        if not offer[0] & NO_SECURITY_LAYER:
            raise SaslLoginError(f"the broker's GSSAPI offer (layers {offer[0]:#04x}) does not "
                                 "include running without a security layer, as Kafka does")
        self.final = True
        return self._context.wrap(bytes([NO_SECURITY_LAYER]) + b"\0\0\0")


Mechanism = PlainClient | ScramClient | OAuthBearerClient | GssapiClient


def mechanism_client(login: BrokerLogin, host: str = "", nonce: str | None = None
                     ) -> Mechanism:
    if isinstance(login, OAuthBearer):
        return OAuthBearerClient(login)
    if isinstance(login, Kerberos):
        return GssapiClient(login, host)
    if login.mechanism == "PLAIN":
        return PlainClient(login)
    return ScramClient(login, nonce)


class SaslExchange:
    """One login to one broker: what to send next, and what each answer means.

    `handshake()` gives the SaslHandshake body; `handshake_answered` checks the answer and
    gives the first token; each broker token goes to `token_answered`, which gives the next
    token or None once the login is complete. Failures raise SaslLoginError naming the broker,
    the mechanism and whom it logs in as (user, Kerberos service): one line, the password or
    token never in it. `host` is the broker's host, GSSAPI's default service domain.
    """

    def __init__(self, address: str, credentials: BrokerLogin, versions: SaslVersions,
                 nonce: str | None = None, host: str | None = None) -> None:
        self.address = address
        self.versions = versions
        self._credentials = credentials
        try:
            self._mechanism = mechanism_client(credentials, host or _host_of(address), nonce)
        except SaslLoginError as exc:
            raise self._failure(credentials.mechanism, "", str(exc)) from None

    def handshake(self) -> bytes:
        return handshake_request(self._credentials.mechanism)

    def handshake_answered(self, payload: Payload) -> bytes:
        error, enabled = self._parsed(decode_handshake, payload, "SaslHandshake")
        if error == UNSUPPORTED_SASL_MECHANISM:
            raise self.failure(f"the broker does not enable this mechanism (it enables "
                               f"{_shown(', '.join(enabled)) if enabled else 'none'})")
        if error:
            raise self.failure(f"SaslHandshake answered {error_text(error)}")
        try:
            return self._mechanism.first_token()
        except SaslLoginError as exc:
            raise self.failure(str(exc)) from None

    def authenticate_answered(self, payload: Payload) -> bytes | None:
        """A SaslAuthenticate answer: its error, or its token for the mechanism."""
        error, message, token = self._parsed(decode_authenticate, payload, "SaslAuthenticate")
        if error:
            raise self.failure(f"{_shown(message) if message else 'authentication failed'} "
                               f"({error_text(error)})")
        return self.token_answered(token)

    def token_answered(self, token: bytes) -> bytes | None:
        try:
            return self._mechanism.next_token(token)
        except SaslLoginError as exc:
            raise self.failure(str(exc)) from None

    def closed(self, reason: str) -> SaslLoginError:
        """The broker closed the connection during the login: with bare frames (SaslHandshake
        v0) that is how it rejects credentials."""
        if self.versions.authenticate is None:
            return self.failure(f"the broker closed the connection ({reason}); with "
                                "SaslHandshake v0 that is how it rejects a login, most often "
                                "for a wrong user name or password")
        return self.failure(f"the broker closed the connection ({reason})")

    def failure(self, reason: str) -> SaslLoginError:
        refusal = self._mechanism.refusal
        return self._failure(self._credentials.mechanism, self._mechanism.who,
                             f"{reason}; {refusal}" if refusal else reason)

    def _failure(self, mechanism: str, who: str, reason: str) -> SaslLoginError:
        named = f"mechanism {mechanism}, {who}" if who else f"mechanism {mechanism}"
        return SaslLoginError(f"SASL login to broker {self.address} failed ({named}): {reason}")

    @property
    def who(self) -> str:
        """Whom the login is made as, for a log line: "user alice", "service kafka@b1"."""
        return self._mechanism.who

    @property
    def done(self) -> bool:
        return self._mechanism.done

    @property
    def final(self) -> bool:
        """The token just given is the login's last: in bare frames no answer follows it."""
        return self._mechanism.final

    def _parsed(self, decode: Callable[[Payload], _Answer], payload: Payload, what: str
                ) -> _Answer:
        try:
            return decode(payload)
        except SaslProtocolError as exc:
            raise self.failure(f"its {what} answer does not parse ({exc})") from None


# -- small codecs ----------------------------------------------------------------------------

def _shown(text: str) -> str:
    """Text a broker wrote, fit for one line of an error: as it is when it is short printable
    ASCII, otherwise quoted with its control characters escaped (no newline can start a line
    that looks like ours) and cut to a few words."""
    if len(text) <= _SHOWN_CHARACTERS and text.isascii() and text.isprintable():
        return text
    quoted = repr(text)
    return quoted if len(quoted) <= _SHOWN_CHARACTERS else quoted[:_SHOWN_CHARACTERS - 3] + "..."


def _described(value: object, shown: bool = True) -> str:
    """A value the user's code gave, for an error line: its type, and itself when it is text
    that may be shown (never a token)."""
    if isinstance(value, str) and value:
        return f"the text {_shown(value)}" if shown else f"a text of {len(value)} characters"
    return "an empty string" if isinstance(value, str) else f"a {type(value).__name__}"


def _host_of(address: str) -> str:
    host = address.rpartition(":")[0] or address
    return host.removeprefix("[").removesuffix("]")


def _scram_iterations(text: str) -> int:
    """The broker's iteration count, if Kafka could have stored it: ASCII digits only (`int`
    would take other scripts' digits and spaces) and within Kafka's bounds, so that no answer
    can hold a login in PBKDF2 for longer than a real broker's credentials do."""
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise SaslLoginError(f"the broker's SCRAM iteration count {_shown(text)} is not a "
                             "number of iterations")
    iterations = int(text)
    if not MIN_SCRAM_ITERATIONS <= iterations <= MAX_SCRAM_ITERATIONS:
        raise SaslLoginError(f"the broker asks for {iterations} SCRAM iterations; Kafka stores "
                             f"credentials with {MIN_SCRAM_ITERATIONS} to "
                             f"{MAX_SCRAM_ITERATIONS}")
    return iterations


def _scram_salt(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error):
        raise SaslLoginError(f"the broker's SCRAM salt {_shown(text)} is not base64") from None


def _sasl_name(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _scram_fields(message: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for part in message.split(","):
        key, separator, value = part.partition("=")
        if separator and len(key) == 1:
            fields.setdefault(key, value)
    return fields


def _string(text: str) -> bytes:
    encoded = text.encode()
    return _INT16.pack(len(encoded)) + encoded


class _Reader:
    """Reads a response body after its correlation id."""

    def __init__(self, payload: Payload) -> None:
        self._payload = payload
        self._offset = 4

    def int16(self) -> int:
        return self._unpack(_INT16)

    def int32(self) -> int:
        return self._unpack(_INT32)

    def string(self) -> str:
        text = self.nullable_string()
        if text is None:
            raise SaslProtocolError("a null string where one is required")
        return text

    def nullable_string(self) -> str | None:
        size = self.int16()
        return None if size < 0 else self._take(size).decode(errors="replace")

    def blob(self) -> bytes:
        size = self.int32()
        return b"" if size < 0 else self._take(size)

    def expect_end(self) -> None:
        if self._offset != len(self._payload):
            raise SaslProtocolError(f"{len(self._payload) - self._offset} bytes left over")

    def _unpack(self, layout: struct.Struct) -> int:
        return layout.unpack(self._take(layout.size))[0]

    def _take(self, size: int) -> bytes:
        end = self._offset + size
        if size < 0 or end > len(self._payload):
            raise SaslProtocolError("the answer ends early")
        chunk = bytes(self._payload[self._offset:end])
        self._offset = end
        return chunk

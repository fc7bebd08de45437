"""A SASL front for a real broker: it checks logins as Kafka does and relays the rest.

Tansu 0.6's own `--authentication` cannot test a client's SASL (with memory storage it keeps no
SCRAM users, lets unknown users through and has no PLAIN), and the 0.9.0.1 broker predates
SaslHandshake. So tests put this in front of one: on each connection it answers ApiVersions
(the broker's list, with SaslHandshake v0-v1 and SaslAuthenticate v0-v1 added), takes
SaslHandshake, verifies PLAIN or SCRAM-SHA-256/512 (RFC 5802/7677) against its own user table,
or OAUTHBEARER (RFC 7628) against its own table of tokens (`oauth_tokens`: Kafka's unsecured
tokens, `unsecured_token`), or GSSAPI (RFC 4752) with the gssapi package's acceptor and the
broker's service keytab (`kerberos_keytab`, a realm of `support.kdc`), and answers a failed login with error 58 (SASL_AUTHENTICATION_FAILED) and closes, or with
`bare_tokens` speaks only SaslHandshake v0 and its bare token frames, closing on a failure as
brokers before 1.0 did. Any other request before a login closes the connection, as Kafka does.
After a login every byte goes to the broker and back, except Metadata and FindCoordinator
answers, whose brokers are rewritten to the front's own address so that clients stay behind it.

With no user table it is a plain relay with the same ApiVersions answer (less the SASL requests)
and the same rewriting, so that a measurement through it costs the same as one through the SASL
front. Optionally TLS (SASL_SSL). A 0.9 broker answers no ApiVersions: the front then offers the
versions it is given (`KAFKA_0_9_VERSIONS`), as a 0.10 broker with the same requests would.

The SCRAM server is written here from the RFCs, not shared with zkconsumer's client: a test
that passes proves two independent implementations agree (and kafka-python's client logs in
through it too). Metadata is re-encoded with kafka-python's protocol classes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import socket
import ssl
import struct
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafka.protocol.metadata import MetadataResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse

API_VERSIONS, METADATA, FIND_COORDINATOR, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 3, 10, 17, 36
UNSUPPORTED_VERSION, UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED = 35, 33, 58
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = ("PLAIN", *SCRAM_HASHES)
SCRAM_ITERATIONS = 4096
# The requests Kafka 0.9.0.1 serves, and their versions, as a 0.10 broker would list them.
KAFKA_0_9_VERSIONS = {0: (0, 1), 1: (0, 1), 2: (0, 0), 3: (0, 0), 4: (0, 0), 5: (0, 0),
                      6: (0, 1), 7: (1, 1), 8: (0, 2), 9: (0, 1), 10: (0, 0), 11: (0, 0),
                      12: (0, 0), 13: (0, 0), 14: (0, 0), 15: (0, 0), 16: (0, 0)}
_REQUEST_HEAD = struct.Struct(">hhih")  # api key, version, correlation id, client id length
# The answers that name brokers, which the front rewrites to name itself.
_NAMING_BROKERS = {METADATA: MetadataResponse, FIND_COORDINATOR: FindCoordinatorResponse}


@dataclass(frozen=True)
class Login:
    user: str
    mechanism: str
    accepted: bool


class LoginRefused(Exception):
    """The client's credentials or messages are wrong; the text is what Kafka would answer."""


@dataclass
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes


def scram_credential(hash_name: str, password: str) -> ScramCredential:
    """What a broker stores for a SCRAM user: never the password, only keys derived from it."""
    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, SCRAM_ITERATIONS)
    client_key = hmac.new(salted, b"Client Key", hash_name).digest()
    return ScramCredential(salt, hashlib.new(hash_name, client_key).digest(),
                            hmac.new(salted, b"Server Key", hash_name).digest())


def _attributes(message: str) -> dict[str, str]:
    return {part[0]: part[2:] for part in message.split(",") if len(part) > 1 and part[1] == "="}


class ScramServer:
    """The server side of one SCRAM exchange (RFC 5802 section 3, without channel binding)."""

    def __init__(self, mechanism: str, credentials: Mapping[str, ScramCredential]) -> None:
        self.mechanism = mechanism
        self._hash = SCRAM_HASHES[mechanism]
        self._credentials = credentials
        self.user: str | None = None
        self._step = 0

    def respond(self, token: bytes) -> tuple[bytes, bool]:
        """The answer to the client's token, and whether the login is complete."""
        self._step += 1
        if self._step == 1:
            return self._server_first(token.decode()), False
        return self._server_final(token.decode()), True

    def _server_first(self, client_first: str) -> bytes:
        if not client_first.startswith("n,,"):
            raise LoginRefused("Invalid SCRAM client first message")
        self._client_first_bare = client_first[3:]
        fields = _attributes(self._client_first_bare)
        self.user = fields.get("n", "").replace("=2C", ",").replace("=3D", "=")
        self._credential = self._credentials.get(self.user)
        if self._credential is None or "r" not in fields:
            raise LoginRefused(self._invalid())
        self._nonce = fields["r"] + base64.b64encode(secrets.token_bytes(18)).decode()
        self._server_first_message = (f"r={self._nonce},s="
                                      f"{base64.b64encode(self._credential.salt).decode()},"
                                      f"i={SCRAM_ITERATIONS}")
        return self._server_first_message.encode()

    def _server_final(self, client_final: str) -> bytes:
        without_proof, _, proof = client_final.rpartition(",p=")
        fields = _attributes(without_proof)
        if fields.get("c") != "biws" or fields.get("r") != self._nonce:
            raise LoginRefused(self._invalid())
        auth_message = ",".join((self._client_first_bare, self._server_first_message,
                                 without_proof)).encode()
        signature = hmac.new(self._credential.stored_key, auth_message, self._hash).digest()
        try:
            client_key = bytes(a ^ b for a, b in zip(base64.b64decode(proof), signature,
                                                     strict=True))
        except (ValueError, TypeError):
            raise LoginRefused(self._invalid()) from None
        if not hmac.compare_digest(hashlib.new(self._hash, client_key).digest(),
                                   self._credential.stored_key):
            raise LoginRefused(self._invalid())
        server_signature = hmac.new(self._credential.server_key, auth_message,
                                    self._hash).digest()
        return f"v={base64.b64encode(server_signature).decode()}".encode()

    def _invalid(self) -> str:
        return ("Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {self.mechanism}")


def unsecured_token(subject: str) -> str:
    """A token as Kafka's unsecured OAUTHBEARER login makes it: an unsigned JWS (header
    `alg: none`, a payload naming the subject, an empty signature), base64url without padding."""
    def part(claims: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'iat': 0})}."


class StaticTokenProvider:
    """A token provider as kafka-python's AbstractTokenProvider: `token()`, `extensions()`."""

    def __init__(self, token: str, extensions: Mapping[str, str] | None = None) -> None:
        self._token = token
        self._extensions = dict(extensions or {})

    def token(self) -> str:
        return self._token

    def extensions(self) -> dict[str, str]:
        return dict(self._extensions)


class OAuthBearerServer:
    """RFC 7628's server side as Kafka's: the client's first message carries `auth=Bearer
    <token>`; a token the front knows logs in its subject, any other gets the JSON error
    challenge, and once the client acknowledged it with 0x01 the login fails."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        self.mechanism = "OAUTHBEARER"
        self._tokens = tokens  # token -> the principal it logs in
        self.user: str | None = None
        self.extensions: dict[str, str] = {}
        self._refused = False

    def respond(self, token: bytes) -> tuple[bytes, bool]:
        if self._refused:
            raise LoginRefused("Authentication failed: invalid_token" if token == b"\x01"
                               else "Invalid OAUTHBEARER client response after an error")
        header, separator, rest = token.partition(b"\x01")
        if header != b"n,," or not separator or not rest.endswith(b"\x01\x01"):
            raise LoginRefused("Invalid OAUTHBEARER client first message")
        pairs = dict(pair.decode().partition("=")[::2] for pair in rest[:-2].split(b"\x01"))
        scheme, _, bearer = pairs.pop("auth", "").partition(" ")
        self.extensions = pairs
        self.user = self._tokens.get(bearer) if scheme == "Bearer" else None
        if self.user is None:
            self._refused = True
            return json.dumps({"status": "invalid_token"}).encode(), False
        return b"", True


class GssapiServer:
    """RFC 4752's server side as Kafka's (Java's GSSAPI server): the context's tokens until it
    is established, then, at the client's next (empty) token, the wrapped offer of "no security
    layer" with a maximum size; the client's wrapped answer must choose it. Its last answer is
    None: in bare frames Kafka sends nothing then."""

    OFFER = bytes([0x01]) + (65536).to_bytes(3, "big")

    def __init__(self, keytab: str) -> None:
        import gssapi

        self._gssapi = gssapi
        self.mechanism = "GSSAPI"
        self.user: str | None = None
        credentials = gssapi.Credentials(usage="accept", store={"keytab": keytab})
        self._context = gssapi.SecurityContext(creds=credentials, usage="accept")
        self._offered = False

    def respond(self, token: bytes) -> tuple[bytes | None, bool]:
        try:
            if not self._context.complete:
                answer = self._context.step(token)
                if self._context.complete:
                    self.user = str(self._context.initiator_name)
                return answer or b"", False
            if not self._offered:
                self._offered = True
                return self._context.wrap(self.OFFER, False).message, False
            chosen = self._context.unwrap(token).message
        except self._gssapi.exceptions.GSSError as exc:
            raise LoginRefused(f"GSSAPI failed: {' '.join(str(exc).split())}") from None
        if len(chosen) < 4 or chosen[0] != 0x01:
            raise LoginRefused("Invalid GSSAPI security layer chosen")
        return None, True


class PlainServer:
    def __init__(self, passwords: Mapping[str, str]) -> None:
        self.mechanism = "PLAIN"
        self._passwords = passwords
        self.user: str | None = None

    def respond(self, token: bytes) -> tuple[bytes, bool]:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise LoginRefused("Invalid SASL/PLAIN message")
        _authorization, user, password = (part.decode() for part in parts)
        self.user = user
        expected = self._passwords.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise LoginRefused("Authentication failed: Invalid username or password")
        return b"", True


@dataclass
class SaslFront:
    """Listens on 127.0.0.1:`port` for the broker at `upstream` ("host:port")."""

    upstream: str
    users: Mapping[str, str] | None  # None: a plain relay, no login
    mechanisms: tuple[str, ...] = MECHANISMS
    # OAUTHBEARER tokens it accepts, each with the principal it logs in; given, OAUTHBEARER
    # is enabled beside `mechanisms`.
    oauth_tokens: Mapping[str, str] | None = None
    # The broker's service keytab (`support.kdc.Realm.service_keytab`); given, GSSAPI is
    # enabled too.
    kerberos_keytab: str | None = None
    bare_tokens: bool = False
    tls: ssl.SSLContext | None = None
    # What to offer for a broker that answers no ApiVersions (0.9: `KAFKA_0_9_VERSIONS`);
    # None: ask the broker.
    broker_versions: Mapping[int, tuple[int, int]] | None = None
    logins: list[Login] = field(default_factory=list)

    def __post_init__(self) -> None:
        host, _, port = self.upstream.rpartition(":")
        self._upstream = (host, int(port))
        self._scram = {mechanism: {user: scram_credential(hash_name, password)
                                   for user, password in (self.users or {}).items()}
                       for mechanism, hash_name in SCRAM_HASHES.items()}
        self._offered = self._broker_versions()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="sasl-front", daemon=True).start()

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._listener.close()
        with self._lock:
            for sock in list(self._sockets):
                _close(sock)

    # -- connections ------------------------------------------------------------------------

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        self._track(client)
        try:
            if self.tls is not None:
                plain, client = client, self.tls.wrap_socket(client, server_side=True)
                self._track(client)
                self._forget(plain)  # detached by the wrapping: only the set holds it
            first = self._log_in(client) if self.users is not None else self._greet(client)
            if first is None:
                return
            broker = socket.create_connection(self._upstream, timeout=30)
            broker.settimeout(None)
            self._track(broker)
            self._relay(client, broker, first)
        except OSError:
            pass
        finally:
            self._forget(client)

    def _greet(self, client: socket.socket) -> bytearray | None:
        """A plain relay's start: ApiVersions answered here as the SASL front answers it (a
        0.9 broker would leave it unanswered); the first other request, to be relayed."""
        while (frame := _read_frame(client)) is not None:
            api_key, version, correlation, _ = _parse_request(frame)
            if api_key != API_VERSIONS:
                return frame
            client.sendall(self._api_versions_answer(correlation, version))
        return None

    def _log_in(self, client: socket.socket) -> bytearray | None:
        """The exchange until the login is complete: then the first request after it, to be
        relayed (None: the connection is to be closed, or the client closed it)."""
        server = None
        complete = False
        while (frame := _read_frame(client)) is not None:
            if complete:
                return frame
            if server is not None and self.bare_tokens:
                token = frame
            else:
                api_key, version, correlation, body = _parse_request(frame)
                if api_key == API_VERSIONS:
                    client.sendall(self._api_versions_answer(correlation, version))
                    continue
                if server is None and api_key == SASL_HANDSHAKE:
                    server = self._handshake(client, correlation, body)
                    if server is None:
                        return None
                    continue
                if server is None or api_key != SASL_AUTHENTICATE or version > 1:
                    return None  # Kafka closes a connection that skips the login
                token = body[4:4 + struct.unpack_from(">i", body)[0]]
            try:
                answer, complete = server.respond(token)
            except LoginRefused as refusal:
                self.logins.append(Login(server.user or "", server.mechanism, False))
                if not self.bare_tokens:
                    client.sendall(_authenticate_answer(correlation, version,
                                                        SASL_AUTHENTICATION_FAILED,
                                                        str(refusal), b""))
                return None
            if self.bare_tokens:
                if answer is not None:  # GSSAPI's last step has none in bare frames
                    client.sendall(struct.pack(">i", len(answer)) + answer)
            else:
                client.sendall(_authenticate_answer(correlation, version, 0, None,
                                                    answer or b""))
            if complete:
                self.logins.append(Login(server.user or "", server.mechanism, True))
        return None

    def _handshake(self, client: socket.socket, correlation: int, body: bytes
                   ) -> PlainServer | ScramServer | OAuthBearerServer | GssapiServer | None:
        (size,) = struct.unpack_from(">h", body)
        mechanism = body[2:2 + size].decode()
        enabled = (list(self.mechanisms) + (["OAUTHBEARER"] if self.oauth_tokens else [])
                   + (["GSSAPI"] if self.kerberos_keytab else []))
        usable = mechanism in enabled
        names = b"".join(struct.pack(">h", len(m)) + m.encode() for m in enabled)
        client.sendall(_frame(struct.pack(">ih", correlation,
                                          0 if usable else UNSUPPORTED_SASL_MECHANISM)
                              + struct.pack(">i", len(enabled)) + names))
        if not usable:
            return None
        if mechanism == "OAUTHBEARER":
            return OAuthBearerServer(self.oauth_tokens or {})
        if mechanism == "GSSAPI" and self.kerberos_keytab:
            return GssapiServer(self.kerberos_keytab)
        if mechanism == "PLAIN":
            return PlainServer(self.users or {})
        return ScramServer(mechanism, self._scram[mechanism])

    def _api_versions_answer(self, correlation: int, version: int) -> bytes:
        """ApiVersions v0's layout; a newer request gets it with UNSUPPORTED_VERSION, which
        tells the client to ask again in v0, as Kafka answers a version it does not know."""
        offered = {key: versions for key, versions in self._offered.items()
                   if key not in (SASL_HANDSHAKE, SASL_AUTHENTICATE)}
        offered[API_VERSIONS] = (0, 0)
        if self.users is not None:
            offered[SASL_HANDSHAKE] = (0, 0 if self.bare_tokens else 1)
            if not self.bare_tokens:
                offered[SASL_AUTHENTICATE] = (0, 1)
        body = b"".join(struct.pack(">hhh", key, low, high)
                        for key, (low, high) in sorted(offered.items()))
        error = 0 if version == 0 else UNSUPPORTED_VERSION
        return _frame(struct.pack(">ihi", correlation, error, len(offered)) + body)

    def _broker_versions(self) -> dict[int, tuple[int, int]]:
        if self.broker_versions is not None:
            return dict(self.broker_versions)
        with socket.create_connection(self._upstream, timeout=10) as broker:
            broker.sendall(_frame(_REQUEST_HEAD.pack(API_VERSIONS, 0, 1, 5) + b"front"))
            answer = _read_frame(broker)
        if answer is None:
            raise ConnectionError(f"the broker at {self.upstream} did not answer ApiVersions")
        (count,) = struct.unpack_from(">i", answer, 6)
        return {key: (low, high) for key, low, high in
                (struct.unpack_from(">hhh", answer, 10 + 6 * i) for i in range(count))}

    def _relay(self, client: socket.socket, broker: socket.socket, first: bytearray) -> None:
        """Requests to the broker in this thread, `first` first, answers back in another;
        Metadata and FindCoordinator answers with this front in place of the brokers."""
        rewritten: dict[int, tuple[int, int]] = {}  # correlation id -> (API key, version)

        def answers() -> None:
            try:
                while (frame := _read_frame(broker)) is not None:
                    asked = rewritten.pop(struct.unpack_from(">i", frame)[0], None)
                    if asked is not None:
                        frame = self._rewritten(frame, *asked)
                    client.sendall(struct.pack(">i", len(frame)) + frame)
            except OSError:
                pass
            finally:
                self._forget(client)
                self._forget(broker)

        threading.Thread(target=answers, daemon=True).start()
        frame: bytearray | None = first
        try:
            while frame is not None:
                api_key, version, correlation = struct.unpack_from(">hhi", frame)
                if api_key in _NAMING_BROKERS:
                    rewritten[correlation] = (api_key, version)
                broker.sendall(struct.pack(">i", len(frame)) + frame)
                frame = _read_frame(client)
        except OSError:
            pass
        finally:
            self._forget(broker)

    def _rewritten(self, frame: bytearray, api_key: int, version: int) -> bytes:
        """The answer with every broker address it names replaced by the front's."""
        kind = _NAMING_BROKERS[api_key]
        # The response header: the correlation id, then in flexible versions an empty tag
        # buffer.
        header_size = 5 if kind.flexible_version_q(version) else 4
        answer = kind.decode(bytes(frame[header_size:]), version=version)
        answer._header = None  # a decoded message has no header slot, which encode reads
        named = (answer.brokers if api_key == METADATA
                 else answer.coordinators if version >= 4 else [answer])
        for broker in named:
            if broker.host:
                broker.host, broker.port = "127.0.0.1", self.port
        return bytes(frame[:header_size]) + answer.encode(version=version)

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.add(sock)

    def _forget(self, sock: socket.socket) -> None:
        _close(sock)
        with self._lock:
            self._sockets.discard(sock)


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A throw-away self-signed certificate and key for 127.0.0.1 (PEM), made with openssl."""
    directory.mkdir(parents=True, exist_ok=True)
    certificate, key = directory / "front.pem", directory / "front-key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(certificate)],
                   check=True, capture_output=True, timeout=60, env={**os.environ})
    return certificate, key


def server_tls(certificate: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(certificate), str(key))
    return context


def _parse_request(frame: bytearray) -> tuple[int, int, int, bytes]:
    """(api key, version, correlation id, body) of a request in a non-flexible header; the
    body is only read for requests whose header is never flexible here (SaslHandshake,
    SaslAuthenticate v0-v1)."""
    api_key, version, correlation, client_length = _REQUEST_HEAD.unpack_from(frame)
    start = _REQUEST_HEAD.size + max(client_length, 0)
    return api_key, version, correlation, bytes(frame[start:])


def _authenticate_answer(correlation: int, version: int, error: int, message: str | None,
                         token: bytes) -> bytes:
    text = b"\xff\xff" if message is None else struct.pack(">h", len(message)) + message.encode()
    body = struct.pack(">ih", correlation, error) + text + struct.pack(">i", len(token)) + token
    if version >= 1:
        body += struct.pack(">q", 0)  # session lifetime: none
    return _frame(body)


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _read_frame(sock: socket.socket) -> bytearray | None:
    """The next size-prefixed frame; None once the other side closed the connection."""
    head = _read_exactly(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    return _read_exactly(sock, size) if size > 0 else bytearray()


def _read_exactly(sock: socket.socket, size: int) -> bytearray | None:
    buffer = bytearray(size)
    view = memoryview(buffer)
    received = 0
    while received < size:
        count = sock.recv_into(view[received:], size - received)
        if count == 0:
            return None
        received += count
    return buffer


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()

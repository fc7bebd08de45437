"""ZooKeeper over TLS: the client's SSL context from Kafka's store settings, and a handshake
of our own with the servers before kazoo gets to them.

kazoo shows a refused handshake only as a connection that times out, with the SSL error in its
debug log; so `check_servers` shakes hands with each server first and turns what failed into one
error naming the server, what failed and the key to look at: a server certificate the
truststore does not trust, a host name it was not made for, a client certificate the server
refuses, a plaintext port. `refuse_if_tls` explains the reverse, a plaintext client at a TLS port.

PKCS12 stores are read with the `openssl` command (Python's `ssl` reads PEM only): the store's
password goes to it in its environment, never on a command line; the certificates come back in
memory, and the client's key, encrypted with a password made for the purpose, passes through a
private (0600) temporary file removed as soon as it is loaded.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import ssl
import subprocess
import tempfile

from kazoo.hosts import collect_hosts

from zkconsumer.config import Store, ZookeeperTls
from zkconsumer.config.values import Invalid, openssl_cipher
from zkconsumer.errors import ZkConsumerError

_VERSIONS = {"TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
             "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_PEM_CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----",
                              re.DOTALL)
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z ]+)-----.+?-----END \1-----", re.DOTALL)
_PASSWORD_VARIABLE = "ZKCONSUMER_STORE_PASSWORD"
PROBE_TIMEOUT_S = 5.0
# A TLS server answers a ClientHello at once: asking what a silent plaintext server speaks
# must not add much to the time it took to find it silent.
SNIFF_TIMEOUT_S = 1.0
# How long a TLS 1.3 client waits after its handshake for the server to refuse its certificate
# (in TLS 1.3 the refusal comes after the client's side of the handshake is done).
REFUSAL_WAIT_S = 1.0
_CLIENT_CERTIFICATE_REFUSED = ("BAD_CERTIFICATE", "CERTIFICATE_REQUIRED", "CERTIFICATE_UNKNOWN",
                               "UNKNOWN_CA", "UNSUPPORTED_CERTIFICATE", "CERTIFICATE_EXPIRED",
                               "CERTIFICATE_REVOKED", "ACCESS_DENIED")
_NOT_TLS = ("WRONG_VERSION_NUMBER", "PACKET_LENGTH_TOO_LONG", "RECORD_LAYER_FAILURE",
            "UNEXPECTED_EOF", "EOF OCCURRED", "HTTP_REQUEST", "UNKNOWN_PROTOCOL")


class ZookeeperTlsError(ZkConsumerError):
    """TLS with ZooKeeper cannot work as configured: one line naming the server or store, what
    failed and the key to look at. Never transient, so never retried."""


class NotTlsError(ZookeeperTlsError):
    """The server answered a TLS handshake as no TLS server does: a plaintext port."""


def ssl_context(tls: ZookeeperTls) -> ssl.SSLContext:
    """The client side of every TLS connection to the ensemble."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    versions = [_VERSIONS[name] for name in tls.protocols]
    context.minimum_version, context.maximum_version = min(versions), max(versions)
    if tls.cipher_suites:
        names = [name for name in map(_cipher, tls.cipher_suites) if name]
        try:
            if names:
                context.set_ciphers(":".join(names))
        except ssl.SSLError:
            raise ZookeeperTlsError(
                "none of the cipher suites in zookeeper.ssl.cipher.suites is offered by this "
                f"system's OpenSSL ({ssl.OPENSSL_VERSION})") from None
    context.check_hostname = tls.check_hostname
    context.verify_mode = ssl.CERT_REQUIRED
    if tls.truststore is None:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    else:
        _trust(context, tls.truststore)
    if tls.keystore is not None:
        _load_key_pair(context, tls.keystore)
    return context


def x509_identity(store: Store) -> str:
    """The client certificate's subject as ZooKeeper's x509 provider names the session
    (RFC 2253, as Java's `X500Principal.getName()`), the id of the znodes' x509 ACL."""
    certificates = _PEM_CERTIFICATE.findall(_store_pem(store, keys=False, client_only=True))
    if not certificates:
        raise ZookeeperTlsError(f"{store.location} holds no certificate; check "
                                f"{store.key}.location")
    answer = _openssl(["x509", "-noout", "-subject", "-nameopt", "RFC2253"], certificates[0],
                      store)
    return answer.strip().partition("=")[2].strip()


def check_servers(connect_string: str, context: ssl.SSLContext,
                  timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Shake hands with the servers until one accepts; raise the first failure when none does
    but some answered. Servers out of reach are left to the session's own time-out."""
    failure: ZookeeperTlsError | None = None
    for host, port in _hosts(connect_string):
        outcome = _shake_hands(context, host, port, min(timeout_s, PROBE_TIMEOUT_S))
        if outcome is None:
            return
        if isinstance(outcome, ZookeeperTlsError) and failure is None:
            failure = outcome
    if failure is not None:
        raise failure


def refuse_if_tls(connect_string: str, timeout_s: float = SNIFF_TIMEOUT_S) -> None:
    """After a plaintext session found no server: raise when one of them speaks TLS."""
    sniffer = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    sniffer.check_hostname = False
    sniffer.verify_mode = ssl.CERT_NONE
    for host, port in _hosts(connect_string):
        outcome = _shake_hands(sniffer, host, port, timeout_s)
        if outcome is None or (isinstance(outcome, ZookeeperTlsError)
                               and not isinstance(outcome, NotTlsError)):
            raise ZookeeperTlsError(
                f"ZooKeeper at {host}:{port} speaks TLS on this port and the session spoke "
                "plaintext: set zookeeper.ssl.client.enable=true and "
                "zookeeper.ssl.truststore.location (and zookeeper.ssl.keystore.location if it "
                "asks for a client certificate), or give its plaintext clientPort")


def _hosts(connect_string: str) -> list[tuple[str, int]]:
    hosts, _chroot = collect_hosts(connect_string)
    return list(hosts)


def _shake_hands(context: ssl.SSLContext, host: str, port: int,
                 timeout_s: float) -> ZookeeperTlsError | bool | None:
    """None when the handshake succeeded, a ZookeeperTlsError when it failed, False when the
    server could not be reached."""
    server = f"{host}:{port}"
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except OSError:
        return False
    try:
        with context.wrap_socket(sock, server_hostname=host) as tls_socket:
            if tls_socket.version() == "TLSv1.3":
                _await_refusal(tls_socket)
        return None
    except ssl.SSLCertVerificationError as exc:
        return _verification_failure(server, exc)
    except ssl.SSLError as exc:
        return _handshake_failure(server, exc)
    except (TimeoutError, socket.timeout):
        return NotTlsError(
            f"TLS to ZooKeeper at {server} failed: no TLS handshake answer within "
            f"{timeout_s:g}s; the port does not speak TLS (is it the plaintext clientPort? "
            "TLS is served on secureClientPort); check zookeeper.connect")
    except OSError as exc:
        return _not_tls(server, exc.strerror or type(exc).__name__)
    finally:
        sock.close()


def _await_refusal(tls_socket: ssl.SSLSocket) -> None:
    tls_socket.settimeout(REFUSAL_WAIT_S)
    try:
        closed = tls_socket.recv(1) == b""
    except (TimeoutError, socket.timeout):
        return
    if closed:
        raise ssl.SSLError(ssl.SSL_ERROR_SSL, "connection closed after the handshake "
                           "(CERTIFICATE_REQUIRED)")


def _verification_failure(server: str, exc: ssl.SSLCertVerificationError) -> ZookeeperTlsError:
    reason = exc.verify_message or exc.reason or "verification failed"
    if exc.verify_code == 62 or "hostname" in str(reason).lower() \
            or "IP address mismatch" in str(reason):
        return ZookeeperTlsError(
            f"TLS to ZooKeeper at {server} failed: the host name does not match the server's "
            f"certificate ({reason}); connect by a name the certificate holds, or check "
            "zookeeper.ssl.endpoint.identification.algorithm (empty turns the check off)")
    return ZookeeperTlsError(
        f"TLS to ZooKeeper at {server} failed: the server's certificate is not trusted "
        f"({reason}); check zookeeper.ssl.truststore.location")


def _handshake_failure(server: str, exc: ssl.SSLError) -> ZookeeperTlsError:
    text = f"{exc.reason or ''} {exc}".upper()
    if any(word in text for word in _NOT_TLS):
        return _not_tls(server, exc.reason or str(exc))
    if any(word in text for word in _CLIENT_CERTIFICATE_REFUSED):
        return ZookeeperTlsError(
            f"TLS to ZooKeeper at {server} failed: the server refused the client certificate "
            f"({(exc.reason or str(exc)).lower()}); check zookeeper.ssl.keystore.location (the "
            "server must trust its issuer)")
    return ZookeeperTlsError(
        f"TLS to ZooKeeper at {server} failed: the handshake was refused "
        f"({(exc.reason or str(exc)).lower()}); check zookeeper.ssl.keystore.location, "
        "zookeeper.ssl.enabled.protocols and zookeeper.ssl.cipher.suites")


def _not_tls(server: str, reason: str) -> NotTlsError:
    return NotTlsError(
        f"TLS to ZooKeeper at {server} failed: the server does not speak TLS on this port "
        f"({str(reason).lower()}; is it the plaintext clientPort? TLS is served on "
        "secureClientPort); check zookeeper.connect and zookeeper.ssl.client.enable")


# -- stores ----------------------------------------------------------------------------------

def _cipher(suite: str) -> str | None:
    try:
        return openssl_cipher(suite)
    except Invalid as exc:  # checked when the config was read; a hand-made ZookeeperTls
        raise ZookeeperTlsError(f"zookeeper.ssl.cipher.suites: {exc}") from None


def _trust(context: ssl.SSLContext, store: Store) -> None:
    certificates = _PEM_CERTIFICATE.findall(_store_pem(store, keys=False))
    if not certificates:
        raise ZookeeperTlsError(f"{store.location} holds no certificate to trust; check "
                                f"{store.key}.location")
    try:
        context.load_verify_locations(cadata="\n".join(certificates))
    except ssl.SSLError as exc:
        raise ZookeeperTlsError(f"cannot use the certificates in {store.location} ({exc.reason}); "
                                f"check {store.key}.location") from None


def _load_key_pair(context: ssl.SSLContext, store: Store) -> None:
    """The client's certificate chain and key; the key passes through a 0600 file only
    encrypted, with a password made for this load."""
    one_time = secrets.token_urlsafe(24)
    if store.kind == "PEM":
        pem = _read(store)
        keys = [block[0] for block in _PEM_BLOCK.finditer(pem) if "PRIVATE KEY" in block[1]]
        if not keys:
            raise ZookeeperTlsError(f"{store.location} holds no private key; check "
                                    f"{store.key}.location")
        password = store.password
        pem = "\n".join(keys + _PEM_CERTIFICATE.findall(pem)) + "\n"
    else:
        pem = _store_pem(store, keys=True, key_password=one_time)
        password = one_time
    descriptor, path = tempfile.mkstemp(prefix="zkconsumer-key-", suffix=".pem")
    try:
        with os.fdopen(descriptor, "w") as private:
            private.write(pem)
        context.load_cert_chain(path, password=(password or "").encode() or None)
    except ssl.SSLError as exc:
        reason = (f"wrong password; check {store.key}.password" if store.kind == "PEM"
                  and (store.password or "BAD_DECRYPT" in str(exc).upper())
                  else f"{exc.reason or exc}; check {store.key}.location and {store.key}.type")
        raise ZookeeperTlsError(f"cannot load the client key in {store.location}: "
                                f"{reason}") from None
    finally:
        os.unlink(path)


def _store_pem(store: Store, *, keys: bool, key_password: str | None = None,
               client_only: bool = False) -> str:
    """A store's content as PEM text: the certificates, and with `keys` its key encrypted
    with `key_password`."""
    if store.kind == "JKS":
        raise ZookeeperTlsError(
            f"{store.location} is a JKS store, which cannot be read here; convert it once with "
            f"`keytool -importkeystore -srckeystore {store.location} -destkeystore STORE.p12 "
            f"-deststoretype PKCS12` and set {store.key}.location to it")
    if store.kind == "PEM":
        return _read(store)
    arguments = ["pkcs12", "-in", store.location, "-passin", f"env:{_PASSWORD_VARIABLE}"]
    if keys:
        arguments += ["-passout", "env:ZKCONSUMER_KEY_PASSWORD"]
    else:
        arguments += ["-nokeys"] + (["-clcerts"] if client_only else [])
    return _openssl(arguments, None, store, key_password)


def _read(store: Store) -> str:
    try:
        with open(store.location, encoding="ascii", errors="replace") as file:
            return file.read()
    except OSError as exc:
        raise ZookeeperTlsError(f"cannot read {store.location} ({exc.strerror}); check "
                                f"{store.key}.location") from None


def _openssl(arguments: list[str], text: str | None, store: Store,
             key_password: str | None = None) -> str:
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                   _PASSWORD_VARIABLE: store.password or "",
                   "ZKCONSUMER_KEY_PASSWORD": key_password or ""}
    for legacy in ([], ["-legacy"]):
        try:
            result = subprocess.run(["openssl", *arguments, *legacy], input=text,
                                    capture_output=True, text=True, env=environment,
                                    timeout=30, check=False)
        except FileNotFoundError:
            raise ZookeeperTlsError(f"reading {store.location} ({store.kind}) needs the openssl "
                                    "command, which is not installed; or give PEM files "
                                    f"({store.key}.type=PEM)") from None
        if result.returncode == 0:
            return result.stdout
        error = result.stderr.lower()
        if "invalid password" in error or "mac verify" in error:
            raise ZookeeperTlsError(f"cannot open {store.location}: wrong password; check "
                                    f"{store.key}.password")
        if legacy or "unsupported" not in error:
            first = next((line for line in result.stderr.splitlines() if line.strip()),
                         "not a store openssl reads")
            if not os.path.exists(store.location):
                first = "no such file"
            raise ZookeeperTlsError(f"cannot read {store.location} as {store.kind} "
                                    f"({first.strip()[:120]}); check {store.key}.location and "
                                    f"{store.key}.type")
    raise ZookeeperTlsError("unreachable: the legacy attempt returns or raises")

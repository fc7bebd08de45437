"""Certificates for ZooKeeper over TLS, made at test time with openssl and keytool, and a local
cluster whose ZooKeeper (Debian's 3.8) serves clients on a TLS port that requires a client
certificate, beside a plaintext port for the 0.9.0.1 broker."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.java import require_java
from zkconsumer.localcluster import LocalCluster, ZookeeperServerTls, find_java
from zkconsumer.localcluster.ensemble import package_available

STORE_PASSWORD = "s3cret-Store-pw"  # noqa: S105 - made up for the tests, grepped for in logs
CLIENT_IDENTITY = "CN=zkconsumer-client,O=zkconsumer"


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # PEM: the CA that signed the server's and the client's certificates
    server: Path  # PEM: the server's key and certificate (for 127.0.0.1 only)
    client_p12: Path  # PKCS12 keystore: the client's key and certificate, STORE_PASSWORD
    client_pem: Path  # PEM keystore: the same, the key encrypted with STORE_PASSWORD
    truststore_p12: Path  # PKCS12 truststore made by keytool: the CA, STORE_PASSWORD
    stranger_p12: Path  # a client certificate from a CA the server does not trust
    stranger_ca: Path  # PEM: that other CA, which did not sign the server's certificate


@dataclass(frozen=True)
class TlsCluster:
    local: LocalCluster
    files: TlsFiles

    @property
    def tls_connect(self) -> str:
        return self.local.zookeeper_tls_connect

    @property
    def plain_connect(self) -> str:
        return self.local.zookeeper_connect

    def properties(self, keystore: Path | None = None, **more: str) -> dict[str, str]:
        """The client's TLS keys: PKCS12 keystore and truststore, host name checked."""
        keys = {"zookeeper.ssl.client.enable": "true",
                "zookeeper.ssl.keystore.location": str(keystore or self.files.client_p12),
                "zookeeper.ssl.keystore.password": STORE_PASSWORD,
                "zookeeper.ssl.keystore.type": "PKCS12",
                "zookeeper.ssl.truststore.location": str(self.files.truststore_p12),
                "zookeeper.ssl.truststore.password": STORE_PASSWORD,
                "zookeeper.ssl.truststore.type": "PKCS12"}
        keys.update(more)
        return keys

    def property_args(self, **more: str) -> list[str]:
        return [f"{key}={value}" for key, value in self.properties(**more).items()]


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def _certificate(directory: Path, name: str, subject: str, ca: str | None,
                 san: str = "IP:127.0.0.1") -> tuple[Path, Path]:
    key, cert = directory / f"{name}.key", directory / f"{name}.pem"
    key_options = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                   "-keyout", str(key), "-subj", subject]
    if ca is None:
        _openssl("req", "-x509", *key_options, "-days", "2", "-out", str(cert))
        return key, cert
    request, extensions = directory / f"{name}.csr", directory / f"{name}.ext"
    extensions.write_text(f"subjectAltName={san}\n")
    _openssl("req", "-new", *key_options, "-out", str(request))
    _openssl("x509", "-req", "-in", str(request), "-CA", str(directory / f"{ca}.pem"),
             "-CAkey", str(directory / f"{ca}.key"), "-CAcreateserial", "-days", "2",
             "-extfile", str(extensions), "-out", str(cert))
    return key, cert


def make_tls_files(directory: Path) -> TlsFiles:
    directory.mkdir(parents=True, exist_ok=True)
    _certificate(directory, "ca", "/CN=zkconsumer-test-ca", None)
    _certificate(directory, "stranger-ca", "/CN=zkconsumer-stranger-ca", None)
    server_key, server_cert = _certificate(directory, "server", "/CN=127.0.0.1", "ca")
    server = directory / "server-keystore.pem"
    server.write_text(server_key.read_text() + server_cert.read_text())
    client_key, client_cert = _certificate(directory, "client",
                                           "/O=zkconsumer/CN=zkconsumer-client", "ca",
                                           "IP:127.0.0.1,DNS:localhost")
    stranger_key, stranger_cert = _certificate(directory, "stranger", "/CN=stranger",
                                               "stranger-ca", "IP:127.0.0.1,DNS:localhost")
    ca = directory / "ca.pem"
    stores = {}
    for name, key, cert, issuer in (("client", client_key, client_cert, ca),
                                    ("stranger", stranger_key, stranger_cert,
                                     directory / "stranger-ca.pem")):
        stores[name] = directory / f"{name}.p12"
        _openssl("pkcs12", "-export", "-inkey", str(key), "-in", str(cert), "-certfile",
                 str(issuer), "-name", name, "-out", str(stores[name]),
                 "-passout", f"pass:{STORE_PASSWORD}")
    encrypted = directory / "client-encrypted.key"
    _openssl("pkcs8", "-topk8", "-in", str(client_key), "-out", str(encrypted),
             "-passout", f"pass:{STORE_PASSWORD}")
    client_pem = directory / "client-keystore.pem"
    client_pem.write_text(encrypted.read_text() + client_cert.read_text())
    truststore = directory / "truststore.p12"
    keytool = str(Path(find_java()).resolve().with_name("keytool"))
    subprocess.run([keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", str(ca),
                    "-keystore", str(truststore), "-storetype", "PKCS12",
                    "-storepass", STORE_PASSWORD], check=True, capture_output=True, timeout=60)
    for secret in (client_key, stranger_key, encrypted):
        secret.chmod(0o600)
    return TlsFiles(ca, server, stores["client"], client_pem, truststore, stores["stranger"],
                    directory / "stranger-ca.pem")


@contextlib.contextmanager
def tls_cluster(work_dir: Path) -> Iterator[TlsCluster]:
    """One broker on a ZooKeeper whose clients must speak TLS with a certificate of our CA."""
    require_java()
    if not package_available():
        pytest.skip("Debian's zookeeper package is not installed (scripts/test installs it)")
    files = make_tls_files(work_dir / "certificates")
    local = LocalCluster.start(work_dir / "cluster", brokers=1,
                               zookeeper_tls=ZookeeperServerTls(files.server, files.ca))
    try:
        yield TlsCluster(local, files)
    finally:
        local.stop(remove_data=True)

"""A throw-away Kerberos realm for the GSSAPI tests: Debian's MIT KDC (`krb5-kdc`,
`krb5-admin-server`) on a free port, with its database, configuration and keytabs in one
directory, run as whatever user runs the tests (nothing in /etc is read or written).

The realm holds the broker's service principal (`kafka/127.0.0.1`) and a user (`alice`), each
with a keytab: the SASL front accepts with the service's, and the client gets its ticket from
its own through `KRB5_CLIENT_KTNAME` (no `kinit`), as the gssapi library finds credentials for
any user. `environment()` gives the variables a client needs.

It needs Debian's packages and the `gssapi` Python package (`pip install gssapi`, built against
`libkrb5-dev`); `unavailable()` says what is missing, for a test to skip with.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

from support.waiting import wait_until
from zkconsumer.localcluster.processes import free_port

REALM = "ZKC.TEST"
SERVICE_HOST = "127.0.0.1"
_TOOLS = {"krb5kdc": "krb5-kdc", "kdb5_util": "krb5-kdc", "kadmin.local": "krb5-admin-server"}
_SBIN = ("/usr/sbin", "/usr/bin")


def unavailable() -> str | None:
    """Why no realm can be run here, or None."""
    missing = sorted({package for tool, package in _TOOLS.items() if _tool(tool) is None})
    if missing:
        return f"Debian's {', '.join(missing)} missing (apt-get install {' '.join(missing)})"
    try:
        import gssapi  # noqa: F401
    except ImportError:
        return "the gssapi package is missing (apt-get install libkrb5-dev; pip install gssapi)"
    return None


def _tool(name: str) -> str | None:
    return shutil.which(name) or next((f"{d}/{name}" for d in _SBIN
                                       if Path(f"{d}/{name}").exists()), None)


class Realm:
    """A KDC of realm `REALM` with `service`/127.0.0.1 and `user`, until `stop()`."""

    def __init__(self, directory: Path, service: str = "kafka", user: str = "alice") -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.config = directory / "krb5.conf"
        self.service_keytab = directory / "service.keytab"
        self.client_keytab = directory / "client.keytab"
        self.user = user
        self._write_configuration()
        self._admin(_tool("kdb5_util"), "create", "-s", "-r", REALM, "-P", "master-Pa55")
        for principal, keytab in ((f"{service}/{SERVICE_HOST}", self.service_keytab),
                                  (user, self.client_keytab)):
            self._admin(_tool("kadmin.local"), "-r", REALM, "-q", f"addprinc -randkey {principal}")
            self._admin(_tool("kadmin.local"), "-r", REALM, "-q",
                        f"ktadd -k {keytab} {principal}")
        self._log = (directory / "kdc.out").open("wb")
        self._process = subprocess.Popen([_tool("krb5kdc"), "-n", "-r", REALM],
                                         env=self._env(), stdout=self._log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_until(self._listening, timeout=15, message=f"the KDC on port {self.port}")

    def environment(self) -> dict[str, str]:
        """A client's variables: this realm's configuration, its own ticket cache, and its
        keytab for the gssapi library to get a ticket from."""
        return {"KRB5_CONFIG": str(self.config),
                "KRB5CCNAME": f"FILE:{self.directory / 'client.ccache'}",
                "KRB5_CLIENT_KTNAME": str(self.client_keytab)}

    def stop(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._log.close()

    def _listening(self) -> bool:
        if self._process.poll() is not None:
            raise RuntimeError(f"the KDC exited: {(self.directory / 'kdc.out').read_text()}")
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def _write_configuration(self) -> None:
        self.config.write_text(
            f"[libdefaults]\n default_realm = {REALM}\n dns_lookup_kdc = false\n"
            " dns_lookup_realm = false\n rdns = false\n dns_canonicalize_hostname = false\n"
            " udp_preference_limit = 1\n"
            f"[realms]\n {REALM} = {{\n  kdc = 127.0.0.1:{self.port}\n }}\n")
        (self.directory / "kdc.conf").write_text(
            f"[kdcdefaults]\n kdc_ports = {self.port}\n kdc_tcp_ports = {self.port}\n"
            f"[realms]\n {REALM} = {{\n  database_name = {self.directory / 'principal'}\n"
            f"  key_stash_file = {self.directory / 'stash'}\n"
            f"  acl_file = {self.directory / 'kadm5.acl'}\n }}\n"
            f"[logging]\n kdc = FILE:{self.directory / 'kdc.log'}\n")

    def _env(self) -> dict[str, str]:
        return {"KRB5_CONFIG": str(self.config),
                "KRB5_KDC_PROFILE": str(self.directory / "kdc.conf"), "PATH": "/usr/bin:/bin"}

    def _admin(self, tool: str | None, *args: str) -> None:
        subprocess.run([str(tool), *args], env=self._env(), check=True, capture_output=True,
                       timeout=60, stdin=subprocess.DEVNULL)

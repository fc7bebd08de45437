"""Server addresses as users write them: `zookeeper.connect` (servers and a chroot) and
`bootstrap.servers`. IPv6 addresses go in brackets, as every Kafka and ZooKeeper tool expects."""

from __future__ import annotations

import re
from dataclasses import dataclass

from zkconsumer.config.values import Invalid
from zkconsumer.errors import ConfigError
from zkconsumer.model import format_address

DEFAULT_ZOOKEEPER_PORT = 2181
_HOST = re.compile(r"[^\s\[\]/,]+")


@dataclass(frozen=True)
class ZookeeperConnect:
    """`zookeeper.connect` split up, because the chroot decides where every znode lives."""

    servers: tuple[tuple[str, int], ...]
    chroot: str = ""

    @classmethod
    def parse(cls, text: str, source: str | None = None) -> ZookeeperConnect:
        try:
            return zookeeper_connect(text.strip())
        except Invalid as exc:
            raise ConfigError("zookeeper.connect", text, str(exc), source) from None

    @property
    def servers_string(self) -> str:
        return ",".join(format_address(host, port) for host, port in self.servers)

    @property
    def connect_string(self) -> str:
        return self.servers_string + self.chroot

    def __str__(self) -> str:
        return self.connect_string


def bootstrap_servers(text: str) -> str:
    """`host:port,...`, each with a port: a broker has no default one worth guessing."""
    servers = []
    for entry in text.split(","):
        entry = entry.strip()
        host, port = _server(entry)
        if not entry.endswith(f":{port}"):
            raise Invalid(f"server {entry!r} needs a port, as in host:9092")
        servers.append(format_address(host, port))
    return ",".join(servers)


def zookeeper_connect(text: str) -> ZookeeperConnect:
    hosts, slash, path = text.partition("/")
    chroot = _chroot(slash + path)
    return ZookeeperConnect(tuple(_server(entry.strip()) for entry in hosts.split(",")), chroot)


def _chroot(path: str) -> str:
    """ZooKeeper treats a bare `/` as no chroot and rejects other malformed paths."""
    if path in ("", "/"):
        return ""
    if path.endswith("/"):
        raise Invalid(f"chroot {path!r} must not end with '/'")
    if any(segment in ("", ".", "..") for segment in path[1:].split("/")):
        raise Invalid(f"chroot {path!r} has an empty, '.' or '..' segment")
    return path


def _server(entry: str) -> tuple[str, int]:
    if entry.startswith("["):
        host, bracket, rest = entry[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise Invalid(f"server {entry!r} must look like [ipv6-address]:port")
        port_text = rest[1:] if rest else None
    else:
        host, colon, port_text = entry.partition(":")
        port_text = port_text if colon else None
        if ":" in (port_text or ""):
            raise Invalid(f"server {entry!r}: write IPv6 addresses as [address]:port")
    if not _HOST.fullmatch(host):
        raise Invalid(f"server {entry!r} has no valid host")
    if port_text is None:
        return host, DEFAULT_ZOOKEEPER_PORT
    if not (port_text.isascii() and port_text.isdigit()) or not 1 <= int(port_text) <= 65535:
        raise Invalid(f"server {entry!r} has an invalid port (1-65535)")
    return host, int(port_text)

"""Where and how to connect: the `host:port` lists users write, and the TLS context kafka-python
would build from the same options, so both clients reach a broker the same way."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

_TLS_PROTOCOLS = ("SSL", "SASL_SSL")


def parse_servers(servers: str) -> list[tuple[str, int]]:
    addresses = []
    for server in servers.split(","):
        host, _, port = server.strip().rpartition(":")
        addresses.append((host.strip("[]"), int(port)))
    return addresses


def ssl_context_for(settings: Mapping[str, Any]) -> ssl.SSLContext | None:
    """The same TLS set-up kafka-python makes from the same options."""
    if settings.get("security_protocol", "PLAINTEXT") not in _TLS_PROTOCOLS:
        return None
    context = ssl.create_default_context(cafile=settings.get("ssl_cafile"))
    context.check_hostname = bool(settings.get("ssl_check_hostname", True))
    if settings.get("ssl_certfile"):
        context.load_cert_chain(settings["ssl_certfile"], settings.get("ssl_keyfile"),
                                settings.get("ssl_password"))
    if settings.get("ssl_crlfile"):
        context.load_verify_locations(settings["ssl_crlfile"])
        context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
    if settings.get("ssl_ciphers"):
        context.set_ciphers(settings["ssl_ciphers"])
    return context

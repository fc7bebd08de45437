"""Broker registrations (/brokers/ids/<id>), every format brokers have written (versions 1-5).

A consumer only needs one thing from them, the address to fetch from, but which field holds it
changed over the years: v1 has just host/port, v2+ list endpoints, and v4+ name endpoints by
listener and map listener names to security protocols. `address_for` hides that history.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zkconsumer.znodes.json_fields import JsonObject, describe, dump_json

PLAINTEXT = "PLAINTEXT"
_MAX_PORT = 65535
# <listener>://<host>:<port>; an IPv6 host is bracketed. The host may be empty (the broker then
# binds every interface, and no client can use that endpoint).
_ENDPOINT = re.compile(
    r"(?P<listener>[^:/\s]+)://"
    r"(?:\[(?P<bracketed>[^\[\]/\s]+)\]|(?P<host>[^\[\]/\s]*))"
    r":(?P<port>[0-9]{1,5})"
)


@dataclass(frozen=True)
class Endpoint:
    """One advertised address; `security_protocol` is resolved from the listener map if any."""

    listener: str
    security_protocol: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


@dataclass(frozen=True)
class BrokerRegistration:
    """A broker's registration. v1 keeps its address in host/port and has no endpoints; from v2
    on host/port are only the legacy PLAINTEXT address (None when the broker wrote null/-1)."""

    version: int
    host: str | None
    port: int | None
    endpoints: tuple[Endpoint, ...] = ()
    listener_security_protocol_map: Mapping[str, str] = field(default_factory=dict)
    rack: str | None = None
    jmx_port: int | None = None
    timestamp: str | None = None
    features: Mapping[str, Any] | None = None

    @classmethod
    def decode(cls, path: str, data: bytes) -> BrokerRegistration:
        fields = JsonObject.load(path, data)
        version = fields.integer("version", minimum=1)
        protocols = _protocol_map(fields)
        features = fields.optional_obj("features")
        common: dict[str, Any] = {
            "listener_security_protocol_map": protocols,
            "rack": fields.optional_string("rack"),
            "jmx_port": fields.optional_integer("jmx_port"),
            "timestamp": fields.optional_string("timestamp"),
            "features": None if features is None else features.value,
        }
        if version == 1:
            host = fields.string("host")
            if not host:
                raise fields.fail("field 'host' is empty; a version 1 broker has no other address")
            return cls(
                version, host, fields.integer("port", minimum=0, maximum=_MAX_PORT), **common
            )
        endpoints = tuple(
            _parse_endpoint(fields, text, protocols) for text in fields.string_list("endpoints")
        )
        port = fields.optional_integer("port", minimum=-1, maximum=_MAX_PORT)
        return cls(
            version,
            fields.optional_string("host"),
            None if port == -1 else port,
            endpoints,
            **common,
        )

    def encode(self) -> bytes:
        doc: dict[str, Any] = {
            "version": self.version,
            "host": self.host,
            "port": -1 if self.port is None else self.port,
        }
        if self.jmx_port is not None:
            doc["jmx_port"] = self.jmx_port
        if self.timestamp is not None:
            doc["timestamp"] = self.timestamp
        if self.version >= 2:
            doc["endpoints"] = [str(endpoint) for endpoint in self.endpoints]
        if self.listener_security_protocol_map:
            doc["listener_security_protocol_map"] = dict(self.listener_security_protocol_map)
        if self.rack is not None:
            doc["rack"] = self.rack
        if self.features is not None:
            doc["features"] = dict(self.features)
        return dump_json(doc)

    def address_for(
        self, security_protocol: str = PLAINTEXT, listener: str | None = None
    ) -> tuple[str, int] | None:
        """Where a client should connect, or None if the broker offers no such endpoint.

        A named `listener` wins over `security_protocol`. Otherwise, when several listeners use
        the protocol (INTERNAL and EXTERNAL both PLAINTEXT, say), the listener named after the
        protocol is preferred, then registration order; a client that must reach a particular
        one should name it.
        """
        if self.version == 1:
            plaintext = security_protocol == PLAINTEXT and listener in (None, PLAINTEXT)
            return (
                (self.host, self.port)
                if plaintext and self.host and self.port is not None
                else None
            )
        if listener is not None:
            candidates = [e for e in self.endpoints if e.listener == listener]
        else:
            candidates = [e for e in self.endpoints if e.security_protocol == security_protocol]
            candidates.sort(key=lambda e: e.listener != security_protocol)
        return next(((e.host, e.port) for e in candidates if e.host), None)


def _protocol_map(fields: JsonObject) -> dict[str, str]:
    mapping = fields.optional_obj("listener_security_protocol_map")
    if mapping is None:
        return {}
    return {name: mapping.check_str(name, value) for name, value in mapping.items()}


def _parse_endpoint(fields: JsonObject, text: str, protocols: Mapping[str, str]) -> Endpoint:
    match = _ENDPOINT.fullmatch(text)
    if match is None or int(match["port"]) > _MAX_PORT:
        raise fields.fail(f"endpoint {describe(text)} is not <listener>://<host>:<port>")
    listener = match["listener"]
    if protocols:
        if listener not in protocols:
            raise fields.fail(
                f"endpoint {describe(text)} uses listener {describe(listener)}, "
                "which is not in listener_security_protocol_map"
            )
        protocol = protocols[listener]
    else:
        protocol = listener  # before named listeners, the listener name was the protocol name
    host = match["bracketed"] if match["bracketed"] is not None else match["host"]
    return Endpoint(listener, protocol, host, int(match["port"]))

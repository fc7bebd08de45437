"""Opening a connection to a broker, said once: TCP (and TLS) with the user's settings, the
versions the broker speaks (ApiVersions, with the 0.9 reconnect), then the SASL login.

The wire fetcher, the coordination's connections to the group coordinator and the first contact
with a cluster (`fetch/first_contact.py`) all open theirs here. What versions mean to each of them differs (fetch
and metadata versions, or the group requests'): that part is the caller's `VersionsPort`, pure
and told only what the broker answered, while the order of the steps, the timeouts and the
closing of a connection that failed half-way are this module's.

0.9.0.1 brokers do not know ApiVersions and leave the question unanswered, logging an exception,
until the client gives up: the question waits at most `API_VERSIONS_TIMEOUT_S` (not a whole
request timeout), and the silent connection, of no more use, is replaced by a new one spoken to
in the legacy versions.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from zkconsumer.kafka.errors import ChannelError
from zkconsumer.kafka.io.channel import BrokerChannel, sasl_login
from zkconsumer.kafka.io.connect import ssl_context_for
from zkconsumer.kafka.io.logins import broker_login
from zkconsumer.kafka.protocol import codec
from zkconsumer.kafka.protocol.sasl import BrokerLogin, SaslExchange, SaslVersions
from zkconsumer.logs import get_logger

log = get_logger(__name__)

# A broker that speaks ApiVersions answers it at once; 0.9 never does, so waiting for it is
# bounded by this rather than by `request_timeout_ms`.
API_VERSIONS_TIMEOUT_S = 5.0

Known = TypeVar("Known")


class VersionsPort(Protocol[Known]):
    """What a kind of connection knows of a broker's versions (`Known`), and how it learns it."""

    def known(self, address: str) -> Known | None:
        """The versions to speak on a new connection to `address` without asking (None: ask)."""

    def answered(self, address: str, payload: bytearray) -> Known:
        """The broker answered ApiVersions (v0) with `payload`."""

    def unanswered(self, address: str, failure: ChannelError) -> Known:
        """The question failed: the legacy versions when that means a broker older than 0.10
        (a new connection is opened for them), else raise."""

    def sasl(self, known: Known) -> SaslVersions:
        """The versions of the SASL login on a connection that speaks `known`."""


@dataclass(frozen=True)
class Dialer:
    """How to reach brokers, from the kafka-python settings every Kafka path is given
    (`kafka.*` properties): client id, request timeout, TLS, SASL (any mechanism:
    `logins.broker_login`), receive buffer."""

    client_id: str
    timeout_s: float
    ssl_context: ssl.SSLContext | None
    credentials: BrokerLogin | None
    receive_buffer_bytes: int = 0

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> Dialer:
        """OSError or ValueError: the TLS files cannot be read; ConfigError: the SASL
        settings are missing or unusable."""
        return cls(client_id=settings.get("client_id", "zkconsumer"),
                   timeout_s=settings.get("request_timeout_ms", 30000) / 1000.0,
                   ssl_context=ssl_context_for(settings),
                   credentials=broker_login(settings),
                   receive_buffer_bytes=settings.get("receive_buffer_bytes") or 0)

    @property
    def api_versions_timeout_s(self) -> float:
        return min(self.timeout_s, API_VERSIONS_TIMEOUT_S)

    def connect(self, host: str, port: int) -> BrokerChannel:
        """TCP and TLS only: ChannelError when the broker cannot be reached."""
        return BrokerChannel(host, port, client_id=self.client_id, timeout_s=self.timeout_s,
                             ssl_context=self.ssl_context,
                             receive_buffer_bytes=self.receive_buffer_bytes)


@dataclass(frozen=True)
class Opened(Generic[Known]):
    channel: BrokerChannel
    known: Known


def open_broker(dialer: Dialer, host: str, port: int, versions: VersionsPort[Known]
                ) -> Opened[Known]:
    """A connection to the broker at `host:port`, in the versions `versions` knows for it or
    learns from its ApiVersions answer, logged in if SASL is set. ChannelError: the connection
    failed; whatever `versions` or the login raise (a refused login: SaslLoginError). A
    connection that fails half-way is closed."""
    channel = dialer.connect(host, port)
    try:
        known = versions.known(channel.address)
        if known is None:
            try:
                payload = channel.request(codec.API_VERSIONS, 0, codec.API_VERSIONS_REQUEST,
                                          timeout_s=dialer.api_versions_timeout_s)
            except ChannelError as exc:
                known = versions.unanswered(channel.address, exc)
                channel.close()
                channel = dialer.connect(host, port)
            else:
                known = versions.answered(channel.address, payload)
        if dialer.credentials is not None:
            exchange = SaslExchange(channel.address, dialer.credentials, versions.sasl(known),
                                    host=host)
            sasl_login(channel, exchange)
            log.debug("logged in", broker=channel.address,
                      mechanism=dialer.credentials.mechanism, who=exchange.who)
    except BaseException:
        channel.close()
        raise
    return Opened(channel, known)

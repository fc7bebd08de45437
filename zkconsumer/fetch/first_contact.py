"""One look at the brokers through the wire client before a kafka-python client is opened.

kafka-python hides why it cannot bootstrap: a refused SASL login, an unreachable broker and a
0.9 broker (which leaves ApiVersions unanswered, so kafka-python 3 never learns its version)
all end, after its whole bootstrap timeout, in "Unable to bootstrap", with the cause only in
its retry lines. One connection of our own tells them apart within seconds: the login is made
as the wire fetcher makes it, and its refusal is the error; a broker that answers no
ApiVersions on an open connection is a 0.9 broker, and kafka-python is told so; a broker that
cannot be reached is named with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zkconsumer.kafka.errors import ChannelError, FetchError
from zkconsumer.kafka.io.connect import parse_servers, ssl_context_for
from zkconsumer.kafka.io.logins import broker_login
from zkconsumer.kafka.io.opener import API_VERSIONS_TIMEOUT_S, Dialer, open_broker
from zkconsumer.kafka.protocol import codec as protocol
from zkconsumer.kafka.protocol.sasl import LEGACY_SASL, SaslVersions, sasl_versions
from zkconsumer.kafka.protocol.versions import asks_api_versions, legacy_after_silence

PRE_API_VERSIONS_BROKER = (0, 9)


class KafkaUnreachable(FetchError):
    """No bootstrap broker could be connected to."""


def checked_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """kafka-python options after a first contact: with `api_version` (0, 9) added when the
    broker left ApiVersions unanswered. Raises SaslLoginError when the broker refuses the
    login; without `api_version` (where kafka-python would block for its whole bootstrap
    timeout), KafkaUnreachable when no bootstrap broker can be connected to and FetchError
    when one answers in a form no version explains. Without SASL and with `api_version` set,
    there is nothing to learn and no connection is made."""
    checked = dict(options)
    api_version = options.get("api_version")
    credentials = broker_login(options)
    if credentials is None and api_version is not None:
        return checked
    try:
        context = ssl_context_for(options)
    except (OSError, ValueError) as exc:
        raise FetchError(f"cannot set up TLS for Kafka: {exc}") from exc
    # Every request of the first contact waits as long as ApiVersions may: it is one look.
    dialer = Dialer(client_id=options.get("client_id", "zkconsumer"),
                    timeout_s=min(options.get("request_timeout_ms", 30000) / 1000.0,
                                  API_VERSIONS_TIMEOUT_S),
                    ssl_context=context, credentials=credentials)
    versions = _FirstContactVersions(api_version)
    failures = []
    connected = False
    for host, port in parse_servers(options["bootstrap_servers"]):
        try:
            opened = open_broker(dialer, host, port, versions)
        except ChannelError as exc:
            failures.append(str(exc))
            connected = connected or versions.reached
            continue
        opened.channel.close()
        if versions.unanswered_seen and api_version is None:
            checked["api_version"] = PRE_API_VERSIONS_BROKER
        return checked
    if api_version is not None:
        # kafka-python, told the version, does not block on the brokers: it retries them in
        # the background as it always did, and only a refused login had to be found first.
        return checked
    where = options["bootstrap_servers"]
    if connected:
        raise FetchError(f"no broker at {where} answered as Kafka does: " + "; ".join(failures))
    raise KafkaUnreachable(f"cannot reach Kafka at {where}: " + "; ".join(failures))


class _FirstContactVersions:
    """What the first contact learns of a broker through the opener: only the login's
    versions, and whether the broker left ApiVersions unanswered (0.9) or was reached at all."""

    def __init__(self, api_version: tuple[int, ...] | None) -> None:
        self._asks = asks_api_versions(api_version)
        self.reached = False
        self.unanswered_seen = False

    def known(self, address: str) -> SaslVersions | None:
        self.reached = True
        return None if self._asks else LEGACY_SASL

    def answered(self, address: str, payload: bytearray) -> SaslVersions:
        """FetchError when the answer does not parse."""
        try:
            return sasl_versions(protocol.decode_api_versions(bytes(payload)))
        except protocol.ProtocolError as exc:
            raise FetchError(f"broker {address} answered ApiVersions in a form that does "
                             f"not parse ({exc}); set kafka.api.version to its version") from None

    def unanswered(self, address: str, failure: ChannelError) -> SaslVersions:
        """A silence that means a 0.9 broker (`versions.legacy_after_silence`, for a broker
        first met here); any other failure is the connection's."""
        legacy_after_silence(failure, answered_before=False)
        self.unanswered_seen = True
        return LEGACY_SASL

    def sasl(self, known: SaslVersions) -> SaslVersions:
        return known

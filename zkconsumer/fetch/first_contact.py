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
from zkconsumer.kafka.io.channel import BrokerChannel, sasl_login
from zkconsumer.kafka.io.connect import parse_servers, ssl_context_for
from zkconsumer.kafka.protocol import codec as protocol
from zkconsumer.kafka.protocol.sasl import (
    LEGACY_SASL,
    WIRE_MECHANISMS,
    Credentials,
    SaslExchange,
    credentials_from,
    sasl_versions,
)
from zkconsumer.kafka.protocol.versions import asks_api_versions

# 0.9 leaves ApiVersions unanswered: this long, not kafka-python's whole bootstrap timeout.
API_VERSIONS_TIMEOUT_S = 5.0
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
    credentials = _wire_credentials(options)
    if credentials is None and api_version is not None:
        return checked
    timeout_s = min(options.get("request_timeout_ms", 30000) / 1000.0, API_VERSIONS_TIMEOUT_S)
    try:
        context = ssl_context_for(options)
    except (OSError, ValueError) as exc:
        raise FetchError(f"cannot set up TLS for Kafka: {exc}") from exc
    failures = []
    connected = False
    for host, port in parse_servers(options["bootstrap_servers"]):
        def connect(host: str = host, port: int = port) -> BrokerChannel:
            return BrokerChannel(host, port, client_id=options.get("client_id", "zkconsumer"),
                                 timeout_s=timeout_s, ssl_context=context)
        try:
            channel = connect()
        except ChannelError as exc:
            failures.append(str(exc))
            continue
        connected = True
        try:
            sasl = LEGACY_SASL
            if asks_api_versions(api_version):
                offered = _offered_versions(channel)
                if offered is not None:
                    sasl = sasl_versions(offered)
                else:  # a 0.9 broker: the question stays unanswered on this connection
                    if api_version is None:
                        checked["api_version"] = PRE_API_VERSIONS_BROKER
                    channel = connect()
            if credentials is not None:
                sasl_login(channel, SaslExchange(channel.address, credentials, sasl))
            return checked
        except ChannelError as exc:
            failures.append(str(exc))
        finally:
            channel.close()
    if api_version is not None:
        # kafka-python, told the version, does not block on the brokers: it retries them in
        # the background as it always did, and only a refused login had to be found first.
        return checked
    where = options["bootstrap_servers"]
    if connected:
        raise FetchError(f"no broker at {where} answered as Kafka does: " + "; ".join(failures))
    raise KafkaUnreachable(f"cannot reach Kafka at {where}: " + "; ".join(failures))


def _wire_credentials(options: Mapping[str, Any]) -> Credentials | None:
    """The login to check: SASL with a mechanism the wire client speaks (or none, which
    `credentials_from` names as missing)."""
    mechanism = options.get("sasl_mechanism")
    if mechanism is not None and mechanism not in WIRE_MECHANISMS:
        return None
    return credentials_from(options)


def _offered_versions(channel: BrokerChannel) -> dict[int, tuple[int, int]] | None:
    """The broker's ApiVersions answer; None when it left the question unanswered until the
    timeout (0.9 does). FetchError when the answer does not parse; ChannelError otherwise."""
    try:
        return protocol.decode_api_versions(bytes(channel.request(
            protocol.API_VERSIONS, 0, protocol.API_VERSIONS_REQUEST)))
    except protocol.ProtocolError as exc:
        raise FetchError(f"broker {channel.address} answered ApiVersions in a form that does "
                         f"not parse ({exc}); set kafka.api.version to its version") from None
    except ChannelError as exc:
        if exc.timed_out:
            return None
        if exc.closed_by_broker:
            raise ChannelError(f"{exc} when asked ApiVersions (a broker older than 0.9 does "
                               "that: set kafka.api.version to its version)") from None
        raise

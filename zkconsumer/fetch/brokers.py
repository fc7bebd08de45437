"""Where to fetch from, and which protocol to speak: the ZooKeeper broker registry, or the
brokers given with `bootstrap.servers`.

The legacy consumer never had a bootstrap list: brokers are found in `/brokers/ids`. kafka-python
still wants one to start from, after which it follows leaders itself; we give it every
registered broker so that any one of them being down does not matter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from zkconsumer.errors import ZkConsumerError
from zkconsumer.model import format_address
from zkconsumer.znodes.brokers import PLAINTEXT, BrokerRegistration


class NoBrokersError(ZkConsumerError):
    """No registered broker offers an endpoint the client can use."""


def bootstrap_servers(brokers: Iterable[BrokerRegistration],
                      security_protocol: str = PLAINTEXT) -> str:
    """`host:port,...` of every broker with a matching endpoint, in broker-id order."""
    brokers = list(brokers)
    addresses = [address for broker in brokers
                 if (address := broker.address_for(security_protocol)) is not None]
    if not addresses:
        raise NoBrokersError(
            f"no broker registered in ZooKeeper (/brokers/ids) offers a {security_protocol} "
            "endpoint"
            if brokers else "no broker is registered in ZooKeeper (/brokers/ids); is Kafka up? "
            "Brokers that do not register there (KRaft, or another cluster's ZooKeeper) are "
            "reached with bootstrap.servers (--bootstrap-server)")
    return ",".join(format_address(host, port) for host, port in addresses)


def api_version_from_registrations(brokers: Iterable[BrokerRegistration]
                                   ) -> tuple[int, ...] | None:
    """The broker protocol to speak when `kafka.api.version` is not set, or None to let
    kafka-python ask the broker (ApiVersions, which only 0.10 and newer answer).

    Registration format versions tell broker generations apart: v1 is 0.8.x, v2 is 0.9.
    kafka-python 3 cannot detect those two itself, so the oldest registered broker decides.
    """
    oldest = min((broker.version for broker in brokers), default=None)
    if oldest == 1:
        return (0, 8, 2)
    if oldest == 2:
        return (0, 9)
    return None


class KafkaAccess(NamedTuple):
    """How to reach the brokers: the bootstrap list and the protocol version to speak."""

    bootstrap_servers: str
    api_version: tuple[int, ...] | None


def resolve_kafka_access(registered: Callable[[], Iterable[BrokerRegistration]],
                         security_protocol: str = PLAINTEXT,
                         api_version: tuple[int, ...] | None = None,
                         bootstrap_override: str | None = None) -> KafkaAccess:
    """The registry decides unless told otherwise: `bootstrap_override` is for brokers that
    are not registered in this ZooKeeper (whose registrations, if any, then say nothing about
    them: the client negotiates, and `registered` is never read), `api_version` for brokers the
    registry misleads on."""
    if bootstrap_override:
        return KafkaAccess(bootstrap_override, api_version)
    brokers = list(registered())
    return KafkaAccess(bootstrap_servers(brokers, security_protocol),
                       api_version or api_version_from_registrations(brokers))

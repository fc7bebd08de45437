"""Which version of each request the wire fetcher speaks to a broker: the newest both know.

Brokers from 0.10 on list the versions they speak in their ApiVersions answer. Speaking the
newest matters: from 0.11 on a broker converts its data down for a Fetch older than v4, which
costs it CPU and memory, and Kafka 4.0 (KIP-896) answers no Fetch below v4 and no ListOffsets
v0 at all. Brokers 0.8 and 0.9 do not know ApiVersions (0.9.0.1 leaves the question unanswered,
logging "Processor got uncaught exception", until the client gives up), so they get the versions
the legacy consumer spoke, chosen from `kafka.api.version` or the broker registrations in
ZooKeeper; when those already say the brokers predate 0.10, the question is not asked at all.
Otherwise only that silence makes a broker look old (`broker_versions`).

Pure: the broker's answer in, versions (or a FetchError naming what cannot be agreed) out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from zkconsumer.kafka.errors import FetchError
from zkconsumer.kafka.protocol.codec import (
    API_NAMES,
    FETCH,
    IMPLEMENTED,
    LIST_OFFSETS,
    METADATA,
)

NEGOTIATED = "ApiVersions"  # the broker listed them
UNANSWERED = "no ApiVersions answer"  # the broker did not answer the question
CONFIGURED = "kafka.api.version"  # the settings say the broker predates the question

_HINTS = {
    NEGOTIATED: "the broker offered this version in its ApiVersions answer",
    UNANSWERED: "the broker did not answer ApiVersions, so it was spoken to as a broker "
                "older than 0.10",
    CONFIGURED: "kafka.api.version (or the broker registrations in ZooKeeper) says the brokers "
                "predate 0.10; if they are newer, set kafka.api.version to their version",
}


class Versions(NamedTuple):
    fetch: int
    list_offsets: int
    metadata: int
    source: str  # NEGOTIATED, UNANSWERED or CONFIGURED

    @property
    def negotiated(self) -> bool:
        return self.source == NEGOTIATED

    def hint(self) -> str:
        """How these versions were chosen, for an error line about one of them."""
        return _HINTS[self.source]


def fetch_version(api_version: tuple[int, ...] | None) -> int:
    """v0 for 0.8 brokers, v1 (adds throttle time) for 0.9, v2 (message format v1, with
    timestamps) for 0.10 and newer, which is also assumed when the version is unknown."""
    if api_version is None or api_version >= (0, 10):
        return 2
    return 1 if api_version >= (0, 9) else 0


def asks_api_versions(api_version: tuple[int, ...] | None) -> bool:
    """Whether to ask brokers for their versions: unless the settings say they predate 0.10,
    which would leave the question unanswered until a timeout."""
    return api_version is None or api_version >= (0, 10)


def legacy_versions(api_version: tuple[int, ...] | None, source: str) -> Versions:
    """The versions the legacy consumer spoke, for a broker that does not answer ApiVersions."""
    return Versions(fetch_version(api_version), 0, 0, source)


class NoCommonVersion(ValueError):
    """A broker does not offer a request, or offers none of the versions implemented here."""


def newest_common(address: str, api_key: int, ours: tuple[int, int],
                  offered: Mapping[int, tuple[int, int]]) -> int:
    """The newest version of one request that the broker at `address` offers and zkconsumer
    implements (`ours`: lowest, highest); NoCommonVersion names the two ranges otherwise."""
    name = API_NAMES[api_key]
    if api_key not in offered:
        raise NoCommonVersion(f"broker {address} does not offer {name} (API key {api_key}) in "
                              "its ApiVersions answer")
    lowest, highest = ours
    broker_lowest, broker_highest = offered[api_key]
    if max(lowest, broker_lowest) > min(highest, broker_highest):
        raise NoCommonVersion(f"broker {address} speaks {name} v{broker_lowest}-v{broker_highest} "
                              f"and zkconsumer v{lowest}-v{highest}: no version in common")
    return min(highest, broker_highest)


def negotiate(address: str, offered: Mapping[int, tuple[int, int]]) -> Versions:
    """The newest version of each request that the broker at `address` offers and this fetcher
    implements; FetchError when there is none."""
    chosen = {}
    for api_key, ours in IMPLEMENTED.items():
        try:
            chosen[api_key] = newest_common(address, api_key, ours, offered)
        except NoCommonVersion as exc:
            advice = "" if api_key not in offered else "; use fetch.backend=kafka-python"
            raise FetchError(f"{exc}{advice}") from None
    return Versions(chosen[FETCH], chosen[LIST_OFFSETS], chosen[METADATA], NEGOTIATED)

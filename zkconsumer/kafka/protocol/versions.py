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

from zkconsumer.kafka.errors import ChannelError, FetchError
from zkconsumer.kafka.protocol.codec import (
    API_NAMES,
    DESCRIBE_GROUPS,
    FETCH,
    FIND_COORDINATOR,
    HEARTBEAT,
    IMPLEMENTED,
    JOIN_GROUP,
    LEAVE_GROUP,
    LIST_GROUPS,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    SYNC_GROUP,
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


# What a broker that predates ApiVersions (0.8, 0.9) is spoken to in, the one table for every
# connection: the versions the legacy clients spoke. OffsetCommit v2 and OffsetFetch v1 are the
# oldest that keep offsets in Kafka (the group coordinator's) rather than ZooKeeper;
# FindCoordinator is GroupCoordinator there. Fetch depends on the version told (`fetch_version`).
LEGACY_VERSIONS = {METADATA: 0, LIST_OFFSETS: 0, FIND_COORDINATOR: 0, JOIN_GROUP: 0,
                   SYNC_GROUP: 0, HEARTBEAT: 0, LEAVE_GROUP: 0, OFFSET_COMMIT: 2,
                   OFFSET_FETCH: 1, LIST_GROUPS: 0, DESCRIBE_GROUPS: 0}


def legacy_versions(api_version: tuple[int, ...] | None, source: str) -> Versions:
    """The versions the legacy consumer spoke, for a broker that does not answer ApiVersions."""
    return Versions(fetch_version(api_version), LEGACY_VERSIONS[LIST_OFFSETS],
                    LEGACY_VERSIONS[METADATA], source)


def legacy_after_silence(failure: ChannelError, *, answered_before: bool) -> None:
    """The one rule for an ApiVersions question without an answer: it returns (the broker is
    older than 0.10, to be spoken to in `LEGACY_VERSIONS`) only when the broker left the
    question unanswered until the timeout on a connection that stayed open (what 0.9.0.1
    does) and never answered it before: a lost answer must not make a broker look old.
    Anything else raises, as trouble of the connection: a connection the broker closed at the
    question, from a broker never heard answering it, with how to tell a broker older than 0.9,
    which does that."""
    if answered_before:
        raise failure
    if failure.timed_out:
        return
    if failure.closed_by_broker:
        raise ChannelError(f"{failure} when asked ApiVersions (a broker older than 0.9 does "
                           "that: set kafka.api.version to its version)") from None
    raise failure


class ApiVersionsHistory:
    """The addresses that ever answered ApiVersions, for `legacy_after_silence`: kept for the
    life of the client, whatever versions it forgets."""

    def __init__(self) -> None:
        self._answered: set[str] = set()

    def answered(self, address: str) -> None:
        self._answered.add(address)

    def unanswered(self, address: str, failure: ChannelError) -> None:
        """Returns when the silence means a broker older than 0.10; raises otherwise."""
        legacy_after_silence(failure, answered_before=address in self._answered)


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

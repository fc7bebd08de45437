"""The wire fetcher's bookkeeping of request versions, per broker address and per connection.

Per address: the versions to speak on its next connection, the addresses to ask again
(ApiVersions) at their next connection, and the answers in a row that rejected a version
(`RejectedRequests`). Per connection (`Link`): the versions chosen when it opened, which hold
for its life (the broker process at its other end cannot change while it lasts), and the
requests it has had a usable answer to.

Two mistakes are kept out here. An answer lost on the way must not make a broker look old: only
a broker that never answered ApiVersions, and left the question unanswered on a connection that
stayed open until the timeout (what 0.9.0.1 does), is spoken to in the pre-0.10 versions; a
closed or reset connection is trouble of the connection, and forgetting a broker's versions
means asking again, not assuming old. And a connection that already had a usable answer to a
request cannot have been closed in rejection of that request's version: a broker closes idle
connections (`connections.max.idle.ms`) and, shutting down, long-polling fetches.

Pure: no sockets and no clock; the fetch session reports what happened and is told what it
means.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from zkconsumer.kafka.errors import ChannelError, FetchError
from zkconsumer.kafka.protocol.codec import API_NAMES, API_VERSIONS, READ_COMMITTED, ProtocolError
from zkconsumer.kafka.protocol.retry_policy import UNSUPPORTED_VERSION, error_name
from zkconsumer.kafka.protocol.sasl import LEGACY_SASL, SaslVersions, sasl_versions
from zkconsumer.kafka.protocol.versions import (
    CONFIGURED,
    UNANSWERED,
    ApiVersionsHistory,
    Versions,
    asks_api_versions,
    legacy_versions,
    negotiate,
)

# Fetch v4 (Kafka 0.11) is the first to carry an isolation level: an older broker delivers
# aborted transactions, whatever is asked.
_FIRST_ISOLATING_FETCH = 4
_API_VERSIONS_HINT = ("every broker from 0.10 on answers ApiVersions v0; for an older one, set "
                      "kafka.api.version to its version")
# Unusable answers in a row to one request of one broker before the member gives up on it.
REJECTION_LIMIT = 3


def unreadable(address: str, api: str, version: int, reason: str) -> str:
    return f"broker {address} did not answer {api} v{version} in a form we can read ({reason})"


class RejectedRequests:
    """Counts, per broker and request, the answers in a row that could not be used: a response
    that does not parse, UNSUPPORTED_VERSION, or a connection closed in answer to a version the
    broker offered, before it answered that request on it. Once in a while that is a broker
    restarting; several times in a row, with nothing usable in between, it is a version the
    broker does not speak, which waiting cannot cure, so the caller fails with one line instead
    of setting partitions aside for ever."""

    def __init__(self, limit: int = REJECTION_LIMIT) -> None:
        self._limit = limit
        self._counts: dict[tuple[str, str], tuple[int, int]] = {}  # -> (version, count)

    def note(self, address: str, api: str, version: int, reason: str, hint: str) -> str | None:
        """Count one more; the line to fail with once the limit is reached, else None."""
        last_version, count = self._counts.get((address, api), (version, 0))
        count = count + 1 if last_version == version else 1
        self._counts[(address, api)] = (version, count)
        if count < self._limit:
            return None
        return f"{unreadable(address, api, version, reason)} {count} times; {hint}"

    def clear(self, address: str, api: str) -> None:
        """The broker answered this request in a usable form."""
        self._counts.pop((address, api), None)


class Link:
    """One connection to a broker as the protocol sees it: its address, the versions spoken on
    it, and the (API key, version) pairs it has had a usable answer to."""

    __slots__ = ("address", "proven", "versions")

    def __init__(self, address: str, versions: Versions) -> None:
        self.address = address
        self.versions = versions
        self.proven: set[tuple[int, int]] = set()


class Trouble(NamedTuple):
    """A request without a usable answer: why, for the log, and the line to fail with once
    its version was rejected too often in a row (else None: retried after the backoff)."""

    reason: str
    given_up: str | None


class BrokerVersions:
    """Which versions to speak to each broker, and what a failed request to it means."""

    def __init__(self, api_version: tuple[int, ...] | None, isolation_level: int) -> None:
        self._asks = asks_api_versions(api_version)
        self._configured = legacy_versions(api_version, CONFIGURED)
        self._unanswered = legacy_versions(api_version, UNANSWERED)
        self._read_committed = isolation_level == READ_COMMITTED
        self._versions: dict[str, Versions] = {}  # the last chosen, kept while asked again
        self._sasl: dict[str, SaslVersions] = {}
        self._ask_again: set[str] = set()
        self._history = ApiVersionsHistory()
        self._rejections = RejectedRequests()

    def known(self, address: str) -> Versions | None:
        """The versions for a new connection to this broker; None: ask it first (ApiVersions),
        as on the first connection to it and after a request to it failed."""
        if not self._asks:
            return self._chosen(address, self._configured)
        if address in self._ask_again:
            return None
        return self._versions.get(address)

    def offered(self, address: str, offered: Mapping[int, tuple[int, int]]) -> Versions:
        """The broker answered ApiVersions: the newest versions both sides know."""
        versions = self._versions[address] = self._chosen(address, negotiate(address, offered))
        self._history.answered(address)
        self._sasl[address] = sasl_versions(offered)
        self._ask_again.discard(address)
        self._rejections.clear(address, API_NAMES[API_VERSIONS])
        return versions

    def sasl(self, address: str) -> SaslVersions:
        """The versions to log in to this broker with: those its ApiVersions answer offered,
        else those of brokers before 1.0 (a broker that answers no ApiVersions has no newer)."""
        return self._sasl.get(address, LEGACY_SASL)

    def not_answered(self, address: str, failure: ChannelError | ProtocolError) -> Versions:
        """ApiVersions got no usable answer. The legacy versions if that silence means a
        broker older than 0.10 (`versions.legacy_after_silence`). Anything else raises, as
        trouble of the connection (ChannelError) or, once garbled answers came too often in
        a row, FetchError."""
        if isinstance(failure, ProtocolError):
            trouble = self._reject(address, API_VERSIONS, 0, str(failure), _API_VERSIONS_HINT)
            if trouble.given_up is not None:
                raise FetchError(trouble.given_up)
            raise ChannelError(trouble.reason)
        self._history.unanswered(address, failure)
        versions = self._versions[address] = self._chosen(address, self._unanswered)
        self._ask_again.discard(address)
        return versions

    def answered(self, link: Link, api_key: int, version: int,
                 errors: Iterable[int] = ()) -> Trouble | None:
        """A request got an answer that parses, with these error codes: None if the broker
        took the version, which ends its rejections; the Trouble if it answered
        UNSUPPORTED_VERSION."""
        if UNSUPPORTED_VERSION in errors:
            return self._reject(link.address, api_key, version,
                                f"Kafka error {UNSUPPORTED_VERSION} "
                                f"{error_name(UNSUPPORTED_VERSION)}", link.versions.hint())
        link.proven.add((api_key, version))
        self._rejections.clear(link.address, API_NAMES[api_key])
        return None

    def failed(self, link: Link, api_key: int, version: int,
               failure: ChannelError | ProtocolError) -> Trouble:
        """A request got no usable answer. A rejection of its version if the answer does not
        parse, or if the broker closed the connection before it answered this request and
        version on it even once, having offered the version; any other failure is transient.
        Either way the broker is asked again at the next connection (it may be restarting as
        another version)."""
        address = link.address
        if isinstance(failure, ProtocolError):
            return self._reject(address, api_key, version, str(failure), link.versions.hint())
        if (failure.closed_by_broker and link.versions.negotiated
                and (api_key, version) not in link.proven):
            return self._reject(address, api_key, version, "it closed the connection",
                                link.versions.hint())
        self._ask_again.add(address)
        return Trouble(str(failure), None)

    def _reject(self, address: str, api_key: int, version: int, reason: str, hint: str
                ) -> Trouble:
        """Count one rejection of this request version, and ask the broker again."""
        self._ask_again.add(address)
        name = API_NAMES[api_key]
        return Trouble(unreadable(address, name, version, reason),
                       self._rejections.note(address, name, version, reason, hint))

    def _chosen(self, address: str, versions: Versions) -> Versions:
        """These versions, unless they cannot honour isolation.level=read_committed."""
        if self._read_committed and versions.fetch < _FIRST_ISOLATING_FETCH:
            raise FetchError(f"isolation.level=read_committed needs Kafka 0.11 or newer; broker "
                             f"{address} speaks Fetch v{versions.fetch}")
        return versions

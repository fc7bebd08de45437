"""Which version of each cluster-wide request (Metadata, ListOffsets, FindCoordinator,
OffsetFetch, OffsetCommit, ListGroups, DescribeGroups) a connection speaks, remembered per broker address.

The offset store, the offset readers, the log-offsets client, the exporter and the admin
commands speak these on connections of their own (`kafka.io.cluster`). Each address is asked
ApiVersions once, on the first connection to it: its answer, or its silence (a 0.9 broker
leaves the question unanswered until the timeout), is remembered for every connection to it
after that, so a 0.9 broker costs that timeout once per address, not once per connection.
Settings that say the brokers predate 0.10 (`kafka.api.version`) skip the question.

Brokers 0.9 get the versions the legacy clients spoke (`versions.LEGACY_VERSIONS`), and only
a broker's silence that `versions.legacy_after_silence` says means 0.9 makes it one.

Pure: told what a broker answered, it says which version to speak, or `NoCommonVersion`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from zkconsumer.kafka.errors import ChannelError
from zkconsumer.kafka.protocol.codec import (
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    IMPLEMENTED,
    LIST_GROUPS,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    decode_api_versions,
)
from zkconsumer.kafka.protocol.group_codec import DESCRIBE_GROUPS_IMPLEMENTED, GROUP_IMPLEMENTED
from zkconsumer.kafka.protocol.sasl import LEGACY_SASL, SaslVersions, sasl_versions
from zkconsumer.kafka.protocol.versions import (
    LEGACY_VERSIONS,
    ApiVersionsHistory,
    asks_api_versions,
    newest_common,
)

# Lowest and highest version implemented, per request.
CLUSTER_IMPLEMENTED = {METADATA: IMPLEMENTED[METADATA], LIST_OFFSETS: IMPLEMENTED[LIST_OFFSETS],
                       FIND_COORDINATOR: GROUP_IMPLEMENTED[FIND_COORDINATOR],
                       OFFSET_FETCH: GROUP_IMPLEMENTED[OFFSET_FETCH],
                       OFFSET_COMMIT: GROUP_IMPLEMENTED[OFFSET_COMMIT], LIST_GROUPS: (0, 4),
                       DESCRIBE_GROUPS: DESCRIBE_GROUPS_IMPLEMENTED}
# What a broker that predates ApiVersions (0.9) is spoken to in.
LEGACY_CLUSTER_VERSIONS = {api_key: LEGACY_VERSIONS[api_key] for api_key in CLUSTER_IMPLEMENTED}


class Spoken(NamedTuple):
    """What one broker address speaks: the ranges its ApiVersions answer offered, or None for
    a broker that predates the question; and the SASL login's versions."""

    address: str
    offered: Mapping[int, tuple[int, int]] | None
    sasl: SaslVersions

    def version(self, api_key: int) -> int:
        """The newest version of the request both sides know; NoCommonVersion otherwise."""
        if self.offered is None:
            return LEGACY_CLUSTER_VERSIONS[api_key]
        return newest_common(self.address, api_key, CLUSTER_IMPLEMENTED[api_key], self.offered)


class RememberedVersions:
    """The opener's `VersionsPort` for cluster connections: each address's versions, learned
    on the first connection to it and kept until `forget` (a request to it failed in a way a
    broker restarted in another version would explain)."""

    def __init__(self, api_version: tuple[int, ...] | None) -> None:
        self._asks = asks_api_versions(api_version)
        self._known: dict[str, Spoken] = {}
        # Addresses that once answered ApiVersions: never taken for 0.9 after, whatever is
        # forgotten.
        self._history = ApiVersionsHistory()

    def known(self, address: str) -> Spoken | None:
        if not self._asks:
            return Spoken(address, None, LEGACY_SASL)
        return self._known.get(address)

    def answered(self, address: str, payload: bytes | bytearray) -> Spoken:
        """ProtocolError: the answer does not parse."""
        offered = decode_api_versions(payload)
        spoken = self._known[address] = Spoken(address, offered, sasl_versions(offered))
        self._history.answered(address)
        return spoken

    def unanswered(self, address: str, failure: ChannelError) -> Spoken:
        """A silence that means a 0.9 broker (`versions.legacy_after_silence`); any other
        failure is the connection's."""
        self._history.unanswered(address, failure)
        spoken = self._known[address] = Spoken(address, None, LEGACY_SASL)
        return spoken

    def sasl(self, known: Spoken) -> SaslVersions:
        return known.sasl

    def forget(self, address: str) -> None:
        self._known.pop(address, None)

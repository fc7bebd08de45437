"""Connections to a cluster's brokers for the requests every reader and writer of offsets and
metadata makes (Metadata, ListOffsets, FindCoordinator, OffsetFetch, OffsetCommit, ListGroups):
one connection per broker address, opened by `opener.open_broker` with the user's TLS and SASL
settings at the first request to it and kept, in the versions remembered for that address
(`cluster_versions`).

Requests to one broker are pipelined: up to `WINDOW` are sent before the first answer is read,
and one more after each answer, so thousands of groups' offsets cost round trips by the
hundred, not by the thousand. The window matters: a 0.9 broker reads no further request on a
connection until its answer to the one before has been sent, so sending everything first would
stall on a full socket while its answers wait unread. Several brokers are asked at once, each
on its own connection (`exchange_many`).

A connection that fails is closed and forgotten (the next request opens a new one, asking its
versions again); its failure is a `KafkaConnectionError`, transient. A refused login is the
opener's `SaslLoginError`, which no retry cures. Not thread-safe: its users take turns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from zkconsumer.kafka.errors import ChannelError, KafkaConnectionError
from zkconsumer.kafka.io.connect import parse_servers
from zkconsumer.kafka.io.opener import Dialer, Opened, open_broker
from zkconsumer.kafka.protocol.cluster_versions import RememberedVersions, Spoken
from zkconsumer.kafka.protocol.codec import ProtocolError
from zkconsumer.model import TopicPartition, format_address

WINDOW = 16

Address = tuple[str, int]


class Call(NamedTuple):
    api_key: int
    version: int
    body: bytes


# Given what the broker speaks, the requests to send it, in order.
Calls = Callable[[Spoken], Sequence[Call]]


class Answers(NamedTuple):
    spoken: Spoken
    calls: Sequence[Call]
    payloads: list[bytearray]


def cluster_dialer(settings: Mapping[str, Any]) -> Dialer:
    """How the cluster client reaches brokers, from the kafka-python settings (`kafka.*`),
    with every SASL mechanism kafka-python has. ConfigError when the SASL settings are
    missing or unusable; OSError or ValueError when the TLS files cannot be read."""
    return Dialer.from_settings(settings)


class Cluster:
    def __init__(self, dialer: Dialer, bootstrap_servers: str,
                 api_version: tuple[int, ...] | None) -> None:
        self.where = bootstrap_servers
        self._dialer = dialer
        self._bootstrap = parse_servers(bootstrap_servers)
        self._versions = RememberedVersions(api_version)
        self._links: dict[Address, Opened[Spoken]] = {}
        self.brokers: dict[int, Address] = {}  # as the last Metadata answer named them
        # Each partition's leader (node id) as Metadata last named it, kept until a request
        # there says it moved or fails (`cluster_calls.list_offsets`).
        self.leaders: dict[TopicPartition, int] = {}

    def link(self, address: Address) -> Opened[Spoken]:
        """The open connection to `address`, or a new one. KafkaConnectionError when it
        cannot be opened; SaslLoginError when the login is refused."""
        opened = self._links.get(address)
        if opened is None:
            try:
                opened = open_broker(self._dialer, *address, self._versions)
            except ChannelError as exc:
                raise KafkaConnectionError(str(exc)) from None
            except ProtocolError as exc:
                raise KafkaConnectionError(f"broker {format_address(*address)} answered "
                                           f"ApiVersions in a form that does not parse: {exc}",
                                           reached=True) from None
            self._links[address] = opened
        return opened

    def any_broker(self) -> Address:
        """A broker to ask about the whole cluster: one already connected to, else the first
        of the known and the bootstrap brokers that accepts a connection."""
        if self._links:
            return next(iter(self._links))
        failed: dict[Address, str] = {}
        reached = False
        for address in dict.fromkeys([*self.brokers.values(), *self._bootstrap]):
            try:
                self.link(address)
            except KafkaConnectionError as exc:
                failed[address] = str(exc)
                reached = reached or exc.reached
                continue
            return address
        failures = list(failed.values())
        if reached:
            raise KafkaConnectionError(f"no broker at {self.where} answered as Kafka does: "
                                       f"{'; '.join(failures)}", reached, failures)
        named = "; ".join(f"{format_address(*address)}: {failure}"
                          for address, failure in failed.items())
        raise KafkaConnectionError(f"no bootstrap broker accepts connections ({named})",
                                   reached, failures)

    def exchange(self, address: Address, calls: Calls) -> Answers:
        """The answers of one broker, pipelined; KafkaConnectionError when the connection
        fails (it is closed and forgotten)."""
        answer = self.exchange_many({address: calls})[address]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def exchange_many(self, per_broker: Mapping[Address, Calls]
                      ) -> dict[Address, Answers | KafkaConnectionError]:
        """Each broker's answers, all brokers asked at once, each through a window of
        `WINDOW` requests; a broker whose connection fails gets its KafkaConnectionError in
        place of answers. SaslLoginError (a refused login) is raised as it is."""
        results: dict[Address, Answers | KafkaConnectionError] = {}
        pending: dict[Address, tuple[Opened[Spoken], Answers]] = {}
        for address, make in per_broker.items():
            try:
                opened = self.link(address)
            except KafkaConnectionError as exc:
                results[address] = exc
                continue
            calls = make(opened.known)
            if calls:
                pending[address] = (opened, Answers(opened.known, calls, []))
            else:
                results[address] = Answers(opened.known, calls, [])
        sent = dict.fromkeys(pending, 0)
        while pending:
            for address, (opened, answers) in list(pending.items()):
                calls, payloads = answers.calls, answers.payloads
                try:
                    while sent[address] < len(calls) and sent[address] - len(payloads) < WINDOW:
                        opened.channel.send(*calls[sent[address]])
                        sent[address] += 1
                    payloads.append(opened.channel.receive())
                except ChannelError as exc:
                    self.drop(address)
                    results[address] = KafkaConnectionError(str(exc))
                    del pending[address]
                    continue
                if len(payloads) == len(calls):
                    results[address] = answers
                    del pending[address]
        return results

    def drop(self, address: Address) -> None:
        """Close the connection to `address`; the next request opens one anew and asks the
        broker its versions again (it may have restarted in others)."""
        opened = self._links.pop(address, None)
        if opened is not None:
            opened.channel.close()
        self._versions.forget(f"{address[0]}:{address[1]}")  # as the channel names it

    def drop_all(self, addresses: Iterable[Address] | None = None) -> None:
        for address in list(self._links if addresses is None else addresses):
            self.drop(address)

    def close(self) -> None:
        self.drop_all()

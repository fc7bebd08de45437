"""The cluster client's connections (`kafka.io.cluster`), around a stand-in for the opener's
channel: requests pipelined within the window (a 0.9 broker reads no further request before
answering), several brokers asked at once, one connection per address kept, and a failed
connection closed, forgotten and named, the others' answers kept. Against real brokers:
tests/integration (offset stores, the exporter, the SASL and TLS listeners)."""

from __future__ import annotations

import pytest

from zkconsumer.kafka.errors import ChannelError, KafkaConnectionError
from zkconsumer.kafka.io import cluster as cluster_module
from zkconsumer.kafka.io.cluster import WINDOW, Call, Cluster
from zkconsumer.kafka.io.opener import Dialer, Opened
from zkconsumer.kafka.protocol.cluster_versions import Spoken
from zkconsumer.kafka.protocol.sasl import LEGACY_SASL


class FakeChannel:
    """Answers each request with its body, in order; `fail_at`: the answer number whose
    receive fails as a reset connection would."""

    def __init__(self, address: str, fail_at: int | None = None) -> None:
        self.address = address
        self.fail_at = fail_at
        self.sent: list[bytes] = []
        self.received = 0
        self.most_outstanding = 0
        self.closed = False

    def send(self, api_key: int, version: int, body: bytes) -> None:
        self.sent.append(body)
        self.most_outstanding = max(self.most_outstanding, len(self.sent) - self.received)

    def receive(self) -> bytearray:
        if self.received == self.fail_at:
            raise ChannelError(f"reading from broker {self.address} failed: reset")
        self.received += 1
        return bytearray(self.sent[self.received - 1])

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def brokers(monkeypatch):
    opened: dict[str, list[FakeChannel]] = {}
    failing: dict[str, int] = {}

    def open_broker(dialer, host, port, versions):
        address = f"{host}:{port}"
        channel = FakeChannel(address, failing.pop(address, None))
        opened.setdefault(address, []).append(channel)
        return Opened(channel, Spoken(address, None, LEGACY_SASL))

    monkeypatch.setattr(cluster_module, "open_broker", open_broker)
    return opened, failing


def _cluster() -> Cluster:
    return Cluster(Dialer("test", 1.0, None, None), "a:1,b:2", None)


def _calls(count: int):
    return lambda _spoken: [Call(9, 1, b"%d" % number) for number in range(count)]


def test_requests_are_pipelined_within_the_window_and_answered_in_order(brokers):
    opened, _ = brokers
    answers = _cluster().exchange(("a", 1), _calls(3 * WINDOW + 5))
    assert [bytes(payload) for payload in answers.payloads] == [
        b"%d" % number for number in range(3 * WINDOW + 5)]
    assert opened["a:1"][0].most_outstanding == WINDOW


def test_brokers_are_asked_at_once_on_one_kept_connection_each(brokers):
    opened, _ = brokers
    cluster = _cluster()
    answered = cluster.exchange_many({("a", 1): _calls(40), ("b", 2): _calls(3)})
    assert {address: len(answers.payloads) for address, answers in answered.items()} == {
        ("a", 1): 40, ("b", 2): 3}
    cluster.exchange(("a", 1), _calls(2))
    assert [len(channels) for channels in opened.values()] == [1, 1]
    cluster.close()
    assert all(channel.closed for channels in opened.values() for channel in channels)


def test_a_failed_connection_is_closed_forgotten_and_named_and_the_others_answer(brokers):
    opened, failing = brokers
    cluster = _cluster()
    failing["a:1"] = 7
    answered = cluster.exchange_many({("a", 1): _calls(20), ("b", 2): _calls(20)})
    failure = answered[("a", 1)]
    assert isinstance(failure, KafkaConnectionError) and "a:1 failed: reset" in str(failure)
    assert opened["a:1"][0].closed
    assert len(answered[("b", 2)].payloads) == 20
    assert len(cluster.exchange(("a", 1), _calls(1)).payloads) == 1
    assert len(opened["a:1"]) == 2, "a new connection after the failed one"


def test_no_bootstrap_broker_reachable_is_one_error_naming_each(monkeypatch):
    def refused(dialer, host, port, versions):
        raise ChannelError(f"cannot connect to broker {host}:{port}: refused")

    monkeypatch.setattr(cluster_module, "open_broker", refused)
    with pytest.raises(KafkaConnectionError) as caught:
        _cluster().any_broker()
    assert str(caught.value) == (
        "no bootstrap broker accepts connections (a:1: cannot connect to broker a:1: refused; "
        "b:2: cannot connect to broker b:2: refused)")
    assert caught.value.failures is not None and not caught.value.reached

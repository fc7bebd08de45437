"""Opening ZooKeeper sessions with errors a user can act on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError

from zkconsumer.errors import ZkConsumerError


class ZookeeperUnreachableError(ZkConsumerError):
    """No ZooKeeper server answered within the connection timeout."""


def connect(connect_string: str, *, timeout_s: float = 6.0,
            session_timeout_s: float = 6.0) -> KazooClient:
    """A started client, or ZookeeperUnreachableError naming the servers and the timeout."""
    client = KazooClient(hosts=connect_string, timeout=session_timeout_s)
    try:
        client.start(timeout=timeout_s)
    except KazooTimeoutError:
        client.close()
        raise ZookeeperUnreachableError(
            f"cannot reach ZooKeeper at {connect_string} within {timeout_s:g}s"
        ) from None
    except ValueError as exc:
        client.close()
        raise ZookeeperUnreachableError(f"bad ZooKeeper connect string {connect_string!r}: {exc}") from None
    return client


@contextmanager
def zookeeper_session(connect_string: str, *, timeout_s: float = 6.0) -> Iterator[KazooClient]:
    client = connect(connect_string, timeout_s=timeout_s)
    try:
        yield client
    finally:
        client.stop()
        client.close()

"""Ending a ZooKeeper session from outside, as a server does when a client goes silent."""

from __future__ import annotations

from kazoo.client import KazooClient


def expire_session(zookeeper_connect: str, session: tuple[int, bytes]) -> None:
    """Close the session from a second client that borrows it: the server expires it, with
    its ephemeral znodes, and its own client later reconnects in a new session."""
    thief = KazooClient(hosts=zookeeper_connect, client_id=session)
    thief.start(timeout=10)
    thief.stop()
    thief.close()

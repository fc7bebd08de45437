"""Opening ZooKeeper sessions with errors a user can act on."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import AuthFailedError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.hosts import collect_hosts
from kazoo.retry import KazooRetry
from kazoo.security import make_acl, make_digest_acl

from zkconsumer.config import SaslLogin, ZookeeperSettings, ZookeeperTls
from zkconsumer.errors import ZkConsumerError
from zkconsumer.logs import get_logger
from zkconsumer.model import format_address
from zkconsumer.zk.hearing import Hearing
from zkconsumer.zk.polling_handler import PollingHandler
from zkconsumer.zk.startup import StartupRetry
from zkconsumer.zk.tls import (
    ZookeeperTlsError,
    check_servers,
    refuse_if_tls,
    ssl_context,
    x509_identity,
)
from zkconsumer.zk.window import set_window

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = get_logger(__name__)

# A lost connection is retried about once a second for as long as it takes, as the Java client
# does. kazoo's default backoff doubles up to an hour: a member then came back seconds after the
# ensemble served again, by which time its session had expired (after a short outage) or not for
# half a minute (after a long one).
RECONNECT_MAX_DELAY_S = 1.0


def reconnect_retry() -> KazooRetry:
    """Reconnection attempts: forever, 0.1 s at first, then about once a second (with jitter,
    so a group's members do not all arrive at once)."""
    return KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_jitter=0.3,
                      max_delay=RECONNECT_MAX_DELAY_S)


def startup_retry(closing: Callable[[], bool]) -> KazooRetry:
    """A member's start-up calls survive a ZooKeeper server restart or a lost connection
    (retried for about 15 s with backoff); a ZooKeeper that stays away is reported, not waited
    for forever, and a shutdown (`closing()`) ends the retries."""
    return KazooRetry(max_tries=12, delay=0.2, backoff=2, max_delay=2.0, interrupt=closing)


class ZookeeperUnreachableError(ZkConsumerError):
    """No ZooKeeper server answered within the connection timeout."""


class ZookeeperHostUnknownError(ZookeeperUnreachableError):
    """No host of the connect string resolves to an address: said at once, not after the
    connection timeout (a typo in a name never answers)."""


def unresolved_hosts(connect_string: str,
                     resolve: Callable[[str, int], object] = socket.getaddrinfo
                     ) -> dict[str, str]:
    """The connect string's hosts that do not resolve (`host:port`: why), if none of them
    does; {} as soon as one does, or when the string does not parse (kazoo says why)."""
    try:
        hosts, _chroot = collect_hosts(connect_string)
    except ValueError:
        return {}
    unresolved = {}
    for host, port in hosts:
        try:
            resolve(host, port)
        except (socket.gaierror, UnicodeError) as exc:
            unresolved[format_address(host, port)] = getattr(exc, "strerror", None) or str(exc)
        else:
            return {}
    return unresolved


class ZookeeperSlowError(ZookeeperUnreachableError):
    """A server was reached (or a connection attempt timed out) but no session was made
    within the connection timeout: a busy ensemble, worth another try (see `startup`)."""


class ZookeeperAccessDeniedError(ZkConsumerError):
    """A znode's ACL refused this session: never transient, so never retried."""

    @classmethod
    def because(cls, what: str) -> ZookeeperAccessDeniedError:
        return cls(f"ZooKeeper denied {what}: the znode's ACL needs other credentials "
                   "(set zookeeper.auth.digest=user:password, or the client certificate in "
                   "zookeeper.ssl.keystore.location)")


def connect(connect_string: str, *, timeout_s: float = 6.0, session_timeout_s: float = 6.0,
            digest: str | None = None, sasl: SaslLogin | None = None,
            world_readable: bool = True, tls: ZookeeperTls | None = None) -> KazooClient:
    """A started client, or ZookeeperUnreachableError naming the servers and the timeout.

    With `digest` ("user:password") or `sasl` the session
    authenticates, and every znode it creates gets an ACL that lets only that user change it
    (and everyone read it if `world_readable`). With `tls` it speaks TLS (see
    `zkconsumer.zk.tls`): a handshake that cannot work is a `ZookeeperTlsError` at once.
    """
    if unknown := unresolved_hosts(connect_string):
        raise ZookeeperHostUnknownError(
            f"cannot reach ZooKeeper at {connect_string}: no host of it resolves ("
            + "; ".join(f"{host}: {why}" for host, why in unknown.items()) + ")")
    context, identity = _tls_for(connect_string, tls, timeout_s)
    options: dict[str, Any] = {}
    if digest:
        options["auth_data"] = [("digest", digest)]
    if sasl:
        options["sasl_options"] = {"mechanism": sasl.mechanism.upper(),
                                   "username": sasl.username, "password": sasl.password}
    hearing = Hearing(session_timeout_s)
    handler = PollingHandler(hearing, context)
    from kazoo.client import KazooClient

    client = KazooClient(hosts=connect_string, timeout=session_timeout_s,
                         handler=handler, use_ssl=context is not None,
                         connection_retry=reconnect_retry(),
                         default_acl=_acl_for(digest, sasl, world_readable, identity), **options)
    _tell_negotiated_timeouts(client, hearing)
    try:
        client.start(timeout=timeout_s)
    except KazooTimeoutError:
        client.close()
        if tls is None:
            refuse_if_tls(connect_string)
        slow = handler.met_a_slow_server
        raise (ZookeeperSlowError if slow else ZookeeperUnreachableError)(
            f"cannot reach ZooKeeper at {connect_string} within {timeout_s:g}s"
        ) from None
    except ValueError as exc:
        client.close()
        raise ZookeeperUnreachableError(f"bad ZooKeeper connect string {connect_string!r}: {exc}") from None
    except AuthFailedError:
        client.close()
        raise ZookeeperAccessDeniedError(
            f"ZooKeeper at {connect_string} refused the credentials") from None
    return client


def _tls_for(connect_string: str, tls: ZookeeperTls | None, timeout_s: float
             ) -> tuple[Any, str | None]:
    """The SSL context of a TLS session, checked against the servers, and the client
    certificate's x509 identity when its znodes are to carry it."""
    if tls is None:
        return None, None
    try:
        context = ssl_context(tls)
        identity = x509_identity(tls.keystore) if tls.x509_acl and tls.keystore else None
    except ZookeeperTlsError as exc:
        raise ZookeeperTlsError(f"TLS to ZooKeeper at {connect_string}: {exc}") from None
    check_servers(connect_string, context, timeout_s)
    return context, identity


def _tell_negotiated_timeouts(client: KazooClient, hearing: Hearing) -> None:
    """Keep `hearing` told of the session timeout each connection negotiates: the server may
    grant less than was asked for (its maxSessionTimeout), and then expires the session sooner.

    kazoo keeps that timeout to itself: its connection's handshake (`_connect`) only returns the
    read timeout it derives from it, two thirds of it. A kazoo without that handshake leaves
    `hearing` with the timeout asked for."""
    connection: Any = getattr(client, "_connection", None)
    handshake = getattr(connection, "_connect", None)
    if handshake is None:
        return

    def handshake_and_tell(*args, **kwargs):
        read_timeout_ms, connect_timeout_ms = handshake(*args, **kwargs)
        hearing.negotiated(read_timeout_ms * 1.5 / 1000.0)
        return read_timeout_ms, connect_timeout_ms

    connection._connect = handshake_and_tell


def connect_for(settings: ZookeeperSettings) -> KazooClient:
    """A session with these servers, timeouts and credentials (`ConsumerConfig.zookeeper`),
    a slow first connection tried again until the start-up deadline (`connect_patiently`),
    its pipelined requests bounded by the settings' window."""
    client = connect_patiently(
        lambda: connect(settings.connect.connect_string, timeout_s=settings.connection_timeout_s,
                        session_timeout_s=settings.session_timeout_s, digest=settings.digest,
                        sasl=settings.sasl, world_readable=settings.world_readable,
                        tls=settings.tls),
        StartupRetry(settings.startup_deadline_s))
    set_window(client, settings.max_in_flight_requests)
    return client


def connect_patiently(try_once: Callable[[], KazooClient], retry: StartupRetry, *,
                      clock: Callable[[], float] = time.monotonic,
                      sleep: Callable[[float], None] = time.sleep,
                      random_fraction: Callable[[], float] = random.random) -> KazooClient:
    """`try_once` until it connects; a try that met a slow server (ZookeeperSlowError) is made
    again while `retry` allows, each logged. Any other failure (refused, unresolvable,
    credentials) is raised at once, and the last slow one once the deadline leaves no room."""
    started = clock()
    tries = 0
    while True:
        tries += 1
        try:
            return try_once()
        except ZookeeperSlowError as exc:
            elapsed = clock() - started
            wait = retry.next_try_in(tries, elapsed, random_fraction())
            if wait is None:
                if tries == 1:
                    raise
                raise ZookeeperSlowError(
                    f"{exc} ({tries} tries over {elapsed:.0f}s, the start-up deadline "
                    f"zookeeper.startup.deadline.ms={retry.deadline_s * 1000:.0f})") from None
            log.warning("ZooKeeper slow to answer a first connection; trying again",
                        tries=tries, error=str(exc), retry_in_ms=round(wait * 1000),
                        deadline_left_ms=round((retry.deadline_s - elapsed) * 1000))
            sleep(wait)


def _acl_for(digest: str | None, sasl: SaslLogin | None, world_readable: bool,
             x509: str | None = None):
    acl = []
    if digest:
        user, _, password = digest.partition(":")
        acl.append(make_digest_acl(user, password, all=True))
    elif sasl:
        acl.append(make_acl("sasl", sasl.username, all=True))
    if x509:
        acl.append(make_acl("x509", x509, all=True))
    if not acl:
        return None  # kazoo's default: open to all, like the reference consumer's znodes
    if world_readable:
        acl.append(make_acl("world", "anyone", read=True))
    return acl


@contextmanager
def session_for(settings: ZookeeperSettings) -> Iterator[KazooClient]:
    """`connect_for` as a context manager: the session is closed on the way out."""
    client = connect_for(settings)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def current_session(zk: KazooClient) -> int | None:
    """The id of the client's ZooKeeper session now; None while it has none (reconnecting
    after an expiry)."""
    client_id = zk.client_id
    return client_id[0] if client_id else None


@contextmanager
def zookeeper_session(connect_string: str, *, timeout_s: float = 6.0) -> Iterator[KazooClient]:
    client = connect(connect_string, timeout_s=timeout_s)
    try:
        yield client
    finally:
        client.stop()
        client.close()

"""kazoo's threading handler with a cheaper wait, which also times the connection's silence.

kazoo's connection thread waits on its socket before every read and every write of every
request and response, four waits per request. kazoo builds a `selectors` selector for each
wait (registering each file object, then closing it): about 60% of the CPU a request costs
kazoo, measured with 200 reads in flight. A member's rebalance is a few thousand requests when
a thousand partitions move, and many members in one process share one interpreter, so this
wait is one `poll(2)` object used once, with no selector around it.

Every wait of the connection thread passes here, so here is also where the connection learns
that its server spoke (its socket has something to read) and where it gives up on a server
that has been silent too long (see `hearing`): the wait raises `ConnectionSilentError`, which
kazoo takes for a broken socket, so it drops the connection, reports it suspended and
reconnects, as after any other connection loss.
"""

from __future__ import annotations

import math
import select
import socket
import ssl

from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.handlers.utils import fileobj_to_fd

from zkconsumer.zk.hearing import Hearing

_READ = select.POLLIN
_WRITE = select.POLLOUT


def poll_select(rlist, wlist, _xlist, timeout: float | None = None) -> tuple[list, list, list]:
    """`select.select`'s interface, as kazoo calls it: the file objects ready to read, those
    ready to write, and no exceptional ones; one ready both ways counts as readable, as in
    kazoo's own wait."""
    if timeout is not None and timeout < 0:
        raise ValueError("timeout must be non-negative")
    masks: dict[int, int] = {}
    objects: dict[int, list] = {}
    for mask, fileobjs in ((_READ, rlist), (_WRITE, wlist)):
        for fileobj in fileobjs:
            fd = fileobj_to_fd(fileobj)
            masks[fd] = masks.get(fd, 0) | mask
            objects.setdefault(fd, []).append(fileobj)
    poller = select.poll()
    for fd, mask in masks.items():
        poller.register(fd, mask)
    readable: list = []
    writable: list = []
    for fd, happened in poller.poll(None if timeout is None else math.ceil(timeout * 1000)):
        # Anything but "writable" may be read (data, a hang-up, an error), anything but
        # "readable" may be written: as `selectors` reads poll(2)'s answer.
        events = masks[fd] & ((_READ if happened & ~_WRITE else 0)
                              | (_WRITE if happened & ~_READ else 0))
        if events & _READ:
            readable.extend(objects[fd])
        elif events & _WRITE:
            writable.extend(objects[fd])
    return readable, writable, []


class ConnectionSilentError(OSError):
    """The server has been silent for too long to trust the session (an OSError, so that kazoo
    drops the connection as it does when a socket fails)."""


class PollingHandler(SequentialThreadingHandler):
    """kazoo's handler, waiting with `poll_select`; with a `Hearing`, no wait outlasts the time
    the connection may stay silent, and a wait that ends past it raises
    `ConnectionSilentError`. With `tls`, every connection speaks TLS with that context
    (kazoo's own TLS options, which cannot carry a truststore in memory, protocols or cipher
    suites, are left unused)."""

    def __init__(self, hearing: Hearing | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        super().__init__()
        self._hearing = hearing
        self._tls = tls
        self._server: object | None = None  # the connection thread's socket to its server
        # Whether any server was reached (a TCP connection made) or a connection attempt timed
        # out: a start that then times out met a slow server, not a refusing one.
        self.met_a_slow_server = False

    @property
    def hearing(self) -> Hearing | None:
        return self._hearing

    def create_connection(self, *args, **kwargs):
        """kazoo's connection thread opens its socket to a server here (kazoo's other uses of
        it, `KazooClient.command` and the read-only mode's search for a writable server, are
        not used by zkconsumer)."""
        if self._tls is not None:
            kwargs["use_ssl"] = False
        try:
            connection = super().create_connection(*args, **kwargs)
        except TimeoutError:
            self.met_a_slow_server = True
            raise
        self.met_a_slow_server = True
        connection = self._spoken_as_configured(connection, kwargs.get("hostname"))
        if self._hearing is not None:
            self._server = connection
            self._hearing.new_connection()
        return connection

    def side_connection(self, address: tuple[str, int], timeout_s: float,
                        server_hostname: str | None = None) -> socket.socket:
        """A connection of its own to a server (a four-letter word's), TLS as the session's
        are, that is not the session's: the hearing does not follow it."""
        return self._spoken_as_configured(socket.create_connection(address, timeout=timeout_s),
                                          server_hostname)

    def _spoken_as_configured(self, connection: socket.socket, server_hostname: str | None
                              ) -> socket.socket:
        """The connection in TLS when the handler has a context (closed if the handshake
        fails), else as it is."""
        if self._tls is None:
            return connection
        try:
            return self._tls.wrap_socket(connection, server_hostname=server_hostname)
        except BaseException:
            connection.close()
            raise

    def select(self, rlist, wlist, xlist, timeout=None):
        hearing = self._hearing
        if hearing is None or self._server is None:
            return poll_select(rlist, wlist, xlist, timeout)
        left = hearing.time_left()
        if left is not None:
            timeout = max(0.0, left if timeout is None else min(timeout, left))
        if any(wanted is self._server for wanted in rlist):
            # Whatever this wait hears arrived after this moment only if nothing is unread
            # now: the clock first, then the look (see `Hearing.quiet`).
            looked_at = hearing.now()
            if not poll_select([self._server], [], [], 0)[0]:
                hearing.quiet(looked_at)
        answer = poll_select(rlist, wlist, xlist, timeout)
        if any(ready is self._server for ready in answer[0]):
            hearing.heard()
            return answer
        left = hearing.time_left()
        if left is not None and left <= 0:
            # A wait to write does not look for answers: one may be waiting all the same.
            if not poll_select([self._server], [], [], 0)[0]:
                raise ConnectionSilentError(hearing.silence())
            hearing.heard()
        return answer

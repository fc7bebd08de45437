"""Many reads in one request: ZooKeeper's multi-read (servers 3.6 and later).

A rebalance reads a level of znodes at a time: every member's registration, the committed
offsets of what a member claims. One request per znode costs the server a packet each and, on a
crowded machine, costs the client far more (kazoo spends a few hundred microseconds of Python
per request). A multi-read carries up to `BATCH` reads of data or children in one request and
one answer: the server still reads each znode, but the packets, the queue and the client's work
per request shrink by that factor. Unlike a write transaction it is not atomic and not
all-or-nothing: each read has its own result, a znode that is missing is an error of that read
alone.

Servers before 3.6 do not know the request (they answer "unimplemented" and close the
connection), so it is sent only to a server that said it is 3.6 or later: when a session meets
a server on a connection, it asks its version (the `srvr` four-letter word, the one servers
allow by default, on a connection of its own) and keeps the answer while it stays connected
there. A server that does not say is read from one znode per request, as before (asked again
after `ASK_AGAIN_S` if the question itself failed); one that refuses a multi-read all the same
is sent none again in that session.

`MultiRead` is the request as kazoo sends it (`serialize`, `deserialize`); the answer is
untrusted bytes: every length and count is checked against what is left, and anything that does
not add up is `MultiReadAnswerError`, never an index error or an unbounded allocation.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Union
from weakref import WeakKeyDictionary

from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import int_struct as _INT
from kazoo.protocol.serialization import multiheader_struct as _HEADER  # type, done, error
from kazoo.protocol.serialization import stat_struct as _STAT
from kazoo.protocol.states import ZnodeStat

from zkconsumer.errors import ZkConsumerError
from zkconsumer.zk import four_letters

if TYPE_CHECKING:
    from kazoo.client import KazooClient
    from kazoo.interfaces import IAsyncResult

GET_DATA = 4
GET_CHILDREN = 8
_ERROR = -1
# Reads per request: a level of a group (its registrations, a member's offsets) in a few
# requests, while an answer of small znodes stays in the tens of kilobytes.
BATCH = 128
# The first server version that serves a multi-read.
SINCE = (3, 6)
# How long the question of a server's version may take (once per server a session meets).
PROBE_TIMEOUT_S = 2.0

# An answer per read: (data, stat) of a getData (data None for a znode made without any, as
# kazoo's single read gives it), the names of a getChildren, or an error code (negative).
Result = Union[tuple[Union[bytes, None], ZnodeStat], list[str], int]


class MultiReadAnswerError(ZkConsumerError):
    """A multi-read's answer does not parse: a length or count past its end, an unknown op."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"malformed ZooKeeper multi-read answer: {reason}")


class MultiRead:
    """Reads of the same kind (`GET_DATA` or `GET_CHILDREN`) of `paths` (chroot included), no
    watch set."""

    type = 22  # kazoo reads a request's opcode from its `type`

    def __init__(self, op: int, paths: tuple[str, ...]) -> None:
        self.op = op
        self.paths = paths

    def serialize(self) -> bytes:
        out = bytearray()
        for path in self.paths:
            encoded = path.encode("utf-8")
            out += _HEADER.pack(self.op, False, -1)
            out += _INT.pack(len(encoded)) + encoded + b"\x00"  # no watch
        return bytes(out + _HEADER.pack(-1, True, -1))

    def deserialize(self, buffer: bytes, offset: int) -> list[Result]:
        return parse_answer(buffer, offset, self.op, len(self.paths))


def parse_answer(buffer: bytes, offset: int, op: int, count: int) -> list[Result]:
    """The `count` results of a multi-read of `op` reads, from `buffer` at `offset`."""
    view = memoryview(buffer)
    end = len(view)
    results: list[Result] = []

    def take(size: int) -> int:
        nonlocal offset
        if size < 0 or offset + size > end:
            raise MultiReadAnswerError(f"{size} bytes asked at {offset} of {end}")
        at = offset
        offset += size
        return at

    def length() -> int:
        (value,) = _INT.unpack_from(view, take(_INT.size))
        return value

    while True:
        kind, done, error = _HEADER.unpack_from(view, take(_HEADER.size))
        if done:
            break
        if len(results) == count:
            raise MultiReadAnswerError(f"more than the {count} results asked for")
        if kind == _ERROR:
            code = length()
            if code >= 0 or code not in EXCEPTIONS:  # `in` does not call the defaultdict's factory
                raise MultiReadAnswerError(f"a read failed with unknown error code {code}")
            results.append(code)
        elif kind != op:
            raise MultiReadAnswerError(f"a result of op {kind} to a read of op {op}")
        elif op == GET_DATA:
            size = length()
            data = None if size == -1 else bytes(view[take(size):offset])
            results.append((data, ZnodeStat._make(_STAT.unpack_from(view, take(_STAT.size)))))
        else:
            names = length()
            if names < 0 or names * _INT.size > end - offset:
                raise MultiReadAnswerError(f"{names} children with {end - offset} bytes left")
            listed = []
            for _ in range(names):
                size = length()
                try:
                    listed.append(str(view[take(size):offset], "utf-8"))
                except UnicodeDecodeError as exc:
                    raise MultiReadAnswerError(f"a child's name is not UTF-8: {exc}") from None
            results.append(listed)
    if len(results) != count:
        raise MultiReadAnswerError(f"{len(results)} results to {count} reads")
    return results


def error_of(code: int) -> Exception:
    """The kazoo exception a single read would have raised for a result's error `code`."""
    return EXCEPTIONS[code]()


def send(zk: KazooClient, op: int, paths: list[str]) -> IAsyncResult:
    """A multi-read of `paths` in flight on `zk`'s session: its answer is `parse_answer`'s."""
    request = MultiRead(op, tuple(_prefix_root(zk.chroot, path) for path in paths))
    result = zk.handler.async_result()
    zk._call(request, result)  # kazoo's one way to send a request it has no method for
    return result


# --- whether the connected server serves it --------------------------------------------------

_VERSION = re.compile(r"Zookeeper version: (\d+)\.(\d+)")
# A server that could not be asked (a refused or timed-out probe, a crowded server) is asked
# again after this long; a definite answer (a version, or the word not allowed) is kept.
ASK_AGAIN_S = 30.0


class _Served:
    """What a session learned: the answer for the server it last asked (until when it holds),
    and the servers that refused a multi-read whatever they said."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.peer: tuple[str, int] | None = None
        self.answer = False
        self.until = 0.0
        self.refused: set[tuple[str, int]] = set()


_sessions: WeakKeyDictionary[KazooClient, _Served] = WeakKeyDictionary()
_sessions_lock = threading.Lock()


def serves_version(srvr: str) -> bool:
    """Whether a `srvr` answer names a version that serves multi-reads."""
    found = _VERSION.search(srvr)
    return found is not None and (int(found.group(1)), int(found.group(2))) >= SINCE


def served(zk: KazooClient, clock: Callable[[], float] = time.monotonic) -> bool:
    """Whether the server `zk` is connected to now serves multi-reads: asked when the session
    first meets it on a connection (again after a connection to another server), never again
    once it refused one."""
    peer = _peer(zk)
    if peer is None:
        return False
    known = _known(zk)
    with known.lock:  # one question at a time per session, and none undoing a refusal
        if peer in known.refused:
            return False
        if known.peer == peer and clock() < known.until:
            return known.answer
        try:
            answer, until = serves_version(_ask(zk, peer, b"srvr")), math.inf
        except OSError:  # not asked this time (refused, timed out, TLS refused): later again
            answer, until = False, clock() + ASK_AGAIN_S
        known.peer, known.answer, known.until = peer, answer, until
        return answer


def not_served(zk: KazooClient) -> None:
    """The server asked last refused a multi-read (it answered unimplemented, and closed the
    connection): none is sent to it again in this session, and the server the session is
    connected to next is asked afresh."""
    known = _known(zk)
    with known.lock:
        if known.peer is not None:
            known.refused.add(known.peer)


def _known(zk: KazooClient) -> _Served:
    with _sessions_lock:
        known = _sessions.get(zk)
        if known is None:
            known = _sessions[zk] = _Served()
        return known


def _ask(zk: KazooClient, peer: tuple[str, int], word: bytes) -> str:
    """A four-letter word's answer from `peer`, on a connection of its own (TLS as the
    session's), `PROBE_TIMEOUT_S` at most for each step."""
    side = getattr(zk.handler, "side_connection", None)
    hostname = getattr(getattr(zk._connection, "_socket", None), "server_hostname", None)
    connect = None if side is None else lambda at, timeout: side(at, timeout, hostname)
    return four_letters.ask(peer, word, PROBE_TIMEOUT_S, connect)


def _peer(zk: KazooClient) -> tuple[str, int] | None:
    sock = getattr(getattr(zk, "_connection", None), "_socket", None)
    try:
        return sock.getpeername()[:2] if sock is not None else None
    except OSError:
        return None

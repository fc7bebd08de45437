"""When a ZooKeeper connection has been silent too long to trust its session (pure).

The server expires a session a session timeout after the last packet it *received* from the
client. kazoo suspects its connection only when a ping goes unanswered, and it pings only after
a third of the session timeout without *sending* anything: a client that keeps sending
requests (offset commits every 100 ms, say) into a network partition never pings, so kazoo
never suspects it, while the server, receiving none of them, expires the session and hands its
partitions to other members. So the connection is also judged by what it hears: a connection
that heard nothing (no answer, no ping reply) for `SILENCE_SHARE` of the negotiated session
timeout is dropped, which pauses delivery and commits (kazoo reports it suspended) until the
same session is back. What the server last received from us cannot be known here; it is no
earlier than the request whose answer we last heard was sent, so counting from the answer
leaves the rest of the session timeout for that round trip and for stopping.

The same rule, counted from what an answer *proves*, is the member's lease on its partitions
(`proven`, `lease_deadline`): an answer read now may have waited unread since long before (a
process frozen by SIGSTOP or a long pause reads, when it runs again, what arrived before the
server expired its session), so it proves only that the server answered after the connection
was last seen with nothing unread (`quiet`): that moment, not the reading, is when the answer
is counted from.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from zkconsumer.model import lease_deadline

# As the Java client's read timeout, counted as it counts it (from the last packet received):
# an idle connection hears a ping reply at least every third of the session timeout (kazoo
# pings then, and drops a connection whose ping goes unanswered for another third), so this
# never drops one that kazoo would keep; a busy one is dropped with a third of the session
# timeout to spare before the server can expire it, for the last answer's round trip and the
# server's time on it.
SILENCE_SHARE = 2.0 / 3.0


def silence_deadline(last_heard: float, session_timeout_s: float) -> float:
    """When a connection that last heard from its server at `last_heard` is no longer
    trusted to hold its session."""
    return lease_deadline(last_heard, session_timeout_s, SILENCE_SHARE)


class Hearing:
    """What the current connection has heard from its server, and how long it may go on
    without hearing more. Nothing is due before the connection's first answer (the handshake
    is kazoo's to time). Told the time by `clock`; used from kazoo's connection thread."""

    def __init__(self, session_timeout_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._session_timeout_s = session_timeout_s
        self._clock = clock
        self._last_heard: float | None = None
        # The last moment the connection was seen with nothing unread, and the latest moment
        # an answer is proven to have come after (see the module's docstring).
        self._quiet_at: float | None = None
        self._proven_at: float | None = None
        self._renewed: list[Callable[[float], None]] = []

    @property
    def session_timeout_s(self) -> float:
        return self._session_timeout_s

    def new_connection(self) -> None:
        """A connection attempt begins: nothing heard on it yet, nor waiting on it."""
        self._last_heard = None
        self._quiet_at = self._clock()

    def now(self) -> float:
        """The hearing's clock, for `quiet`."""
        return self._clock()

    def quiet(self, at: float) -> None:
        """The connection had nothing unread when looked at; `at` is the clock read *before*
        looking (whatever arrives after the look arrived after `at`)."""
        self._quiet_at = at

    def on_renewed(self, renewed: Callable[[float], None]) -> None:
        """Call `renewed(lease_deadline())` whenever an answer proves more (on the connection
        thread: it must not block)."""
        self._renewed.append(renewed)

    def negotiated(self, session_timeout_s: float) -> None:
        """The timeout the server granted (it may differ from the one asked for)."""
        self._session_timeout_s = session_timeout_s

    def heard(self) -> None:
        """Something arrived from the server, and was seen just now."""
        self._last_heard = self._clock()
        proven = self._quiet_at
        if proven is not None and (self._proven_at is None or proven > self._proven_at):
            self._proven_at = proven
            deadline = self.lease_deadline()
            for renewed in self._renewed:
                renewed(deadline)

    @property
    def proven(self) -> float | None:
        """The latest moment the server is proven to have answered after (None: none yet)."""
        return self._proven_at

    def lease_deadline(self) -> float:
        """Until when the answers heard prove the session still ours: `SILENCE_SHARE` of the
        session timeout after `proven` (minus infinity before any answer)."""
        if self._proven_at is None:
            return -math.inf
        return silence_deadline(self._proven_at, self._session_timeout_s)

    def time_left(self) -> float | None:
        """Seconds until the connection is too silent to trust (0 or less: it is now), or None
        while it has heard nothing yet."""
        if self._last_heard is None:
            return None
        return silence_deadline(self._last_heard, self._session_timeout_s) - self._clock()

    def silence(self) -> str:
        """How long the connection has been silent, in words, for the line that drops it."""
        since = "its start" if self._last_heard is None else \
            f"{self._clock() - self._last_heard:.1f}s"
        return (f"nothing heard from ZooKeeper for {since} (the limit: {SILENCE_SHARE:.0%} of "
                f"the {self._session_timeout_s:g}s session timeout); the session may be "
                "expiring on the server")

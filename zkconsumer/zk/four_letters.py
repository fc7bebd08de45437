"""ZooKeeper's four-letter words (`srvr`, `mntr`, `srst`, `ruok`): one question on a connection
of its own, the answer read until the server closes it.

Used to ask a server its version (`zk.multi_read`), by the local cluster to see its servers
serve (`ruok`, and an ensemble's `srvr`), and by the benchmarks for the server's own counters.
The answer is bounded (`limit`) and a connection reset after part of it keeps that part.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

LIMIT = 65536


def ask(address: tuple[str, int], word: bytes, timeout_s: float,
        connect: Callable[[tuple[str, int], float], socket.socket] | None = None,
        limit: int = LIMIT) -> str:
    """The answer to `word` from the server at `address`; `connect(address, timeout_s)` opens
    the connection (a plain TCP one unless given, e.g. a TLS one). OSError when none came."""
    opened = (connect or (lambda at, timeout: socket.create_connection(at, timeout=timeout)))
    with opened(address, timeout_s) as sock:
        sock.settimeout(timeout_s)
        sock.sendall(word)
        answer = b""
        try:
            while len(answer) < limit and (chunk := sock.recv(limit)):
                answer += chunk
        except OSError:
            if not answer:
                raise
    return answer[:limit].decode("utf-8", "replace")


def parse_mntr(answer: str) -> dict[str, str]:
    """`mntr`'s answer as its keys and values (lines of key, tab, value)."""
    return dict(line.split("\t", 1) for line in answer.splitlines() if "\t" in line)

"""Whether a worker tries its first ZooKeeper connection again, and after how long: pure.

A fleet restarted in one deploy starts hundreds of workers at the moment the ensemble is
busiest; a starved server (or a starved worker) may then not finish a first connection within
`zookeeper.connection.timeout.ms`, the time one try may take. Such a try is made again, after
a jittered backoff (so the workers that failed together do not all come back together), for as
long as `zookeeper.startup.deadline.ms` allows. What waiting cannot mend (a refused connection,
a host that does not resolve, refused credentials) is not tried again: `connect_patiently` in
`session` raises those at once.
"""

from __future__ import annotations

from dataclasses import dataclass

FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 5.0


@dataclass(frozen=True)
class StartupRetry:
    """`deadline_s`: how long after the first try began another may still begin (0: one try
    only). The backoff before try n+1 doubles from `first_backoff_s` up to `max_backoff_s`,
    and is drawn uniformly from its upper half: the workers that failed together spread out,
    none coming back sooner than half its backoff."""

    deadline_s: float
    first_backoff_s: float = FIRST_BACKOFF_S
    max_backoff_s: float = MAX_BACKOFF_S

    def backoff(self, failed_tries: int, random_fraction: float) -> float:
        """The wait after `failed_tries` tries (1 or more), `random_fraction` in [0, 1)."""
        ceiling = min(self.max_backoff_s, self.first_backoff_s * 2 ** (failed_tries - 1))
        return ceiling * (0.5 + 0.5 * random_fraction)

    def next_try_in(self, failed_tries: int, elapsed_s: float,
                    random_fraction: float) -> float | None:
        """Seconds to wait before the next try, or None: the deadline leaves no room for it
        (`elapsed_s` since the first try began)."""
        wait = self.backoff(failed_tries, random_fraction)
        if elapsed_s + wait >= self.deadline_s:
            return None
        return wait

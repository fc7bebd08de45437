"""When a member reads its group again after the group changed: in turns, by rank. Pure.

Every member watches the group's registry of members, so one change reaches all N members at
the same moment, and each then reads the group and moves its partitions: N members' reads,
releases and claims in the server's queue at once. A fleet of hundreds restarted in one deploy
changes the registry hundreds of times within seconds, and the ensemble it shares with the
brokers answers everyone late (their sessions included).

A member instead waits its turn after a change: `(members / 2 + rank) x turn`
(`rebalance.turn.ms`), `members` being the size of the group it last read and its rank its
place among those ids (sorted, as the assignment sorts them). Every member thus first lets half
the group's spread go by (the first one, and one just registered, included), then the group's
requests reach the server a few members' at a time, spread over N turns. Ranks act in the order
a range assignment hands partitions on when members arrive (a lower rank gives up what the
next one takes), so the turns rarely make one member wait on another. A member reads the
registry again only in its turn (its watch is set by that read), so changes that come while it
waits are in what it reads: a burst of registrations costs each member one read. A member not
ranked yet (before its first read) takes a random place among the ids the registry held when
it joined, and that count as its group's size. A turn of 0 reads at once, as the reference
does.

Why the half spread: a deploy stops workers and starts them again a few seconds later, two
bursts of changes. Without it, the members whose turn fell in between read the group, and moved
partitions, twice. A change is gathered with the first unread one when it comes within the
member's wait, `(members / 2 + rank) x turn`: at 200 members and the default 15 ms, 1.5 s for
the first member and 4.5 s for the last, so the members whose wait outlasts a worker's
return read a deploy's stops and starts at once; a group of ten waits 75-210 ms, and reads two
changes that far apart twice, as before. (At 10 ms, waits of 1-3 s: on the test machine, whose
workers came back 3-5 s after they stopped, a step of a rolling restart released about 9,800
partitions where 1,000 left with their workers, 3,900 at 15 ms: see the fleet page.)
The size is each member's own last read: members that read in the middle of a burst are offset
from the others by half the difference, a few turns.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Turns:
    """The changes not yet read and this member's place, on the caller's clock (seconds)."""

    turn_s: float
    rank: float = 0.0
    members: int = 0  # the group's size when the member was placed
    _since: float | None = None
    _ranked: bool = False  # by a read of the group (`ranked`), not drawn

    def __post_init__(self) -> None:
        if self.turn_s < 0:
            raise ValueError(f"a turn cannot be negative, got {self.turn_s}")

    def changed(self, now: float) -> None:
        """The group changed at `now` (the first change not yet read is what the turn counts
        from)."""
        if self._since is None:
            self._since = now

    def ranked(self, rank: float, members: int) -> None:
        """This member's place in the group of `members` it read last (0: the first)."""
        self._place(rank, members)
        self._ranked = True

    def unranked(self, members: int, random_fraction: float) -> bool:
        """Before a first read: a place drawn among `members` (`random_fraction` in [0, 1));
        False (and nothing drawn) once a read ranked the member."""
        if self._ranked:
            return False
        self._place(max(0, members) * random_fraction, max(0, members))
        return True

    def _place(self, rank: float, members: int) -> None:
        if rank < 0 or members < 0:
            raise ValueError(f"a rank or a group's size cannot be negative, got {rank} of "
                             f"{members}")
        self.rank = rank
        self.members = members

    def wait(self, now: float) -> float:
        """Seconds to wait before reading the group (0: read now)."""
        if self._since is None:
            return 0.0
        return max(0.0, self._since + (self.members / 2 + self.rank) * self.turn_s - now)

    def reading(self) -> None:
        """The group is read now: the changes so far are in what is read."""
        self._since = None

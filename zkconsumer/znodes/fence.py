"""The cutover fence and the members that honour it: how `group cutover` moves a live group
between ZooKeeper's coordination and Kafka's group coordinator.

`/consumers/<group>/fence` (persistent, written only by `group cutover`) says where the group is
going and how far the move is:

- `draining`: every member on the other coordination stops delivering, commits what its
  application consumed (to both offset storages), releases its partitions and leaves; it then
  waits (or exits, if started so) until the fence says `switched`.
- `switched`: the command has seen the old coordination empty and every offset carried over;
  members join through the new coordination. A member starting later on the old coordination
  joins through the new one instead (or refuses, if started so).

No fence, or a fence removed while draining (a rollback), means: stay on (or go back to) the
coordination the member was started with.

`/consumers/<group>/fence-aware/<consumer id>` (ephemeral, one per member that watches the
fence) is how the command tells a member that will honour the fence from one that will not (the
reference consumer, an older zkconsumer): it refuses to fence a group while any registered
member has no such znode. The reference never looks below `/consumers/<group>` except at `ids`,
`owners` and `offsets`, so these znodes change nothing for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from zkconsumer.znodes.json_fields import JsonObject, describe, dump_json

FENCE_VERSION: Final = 1
COORDINATIONS: Final = ("zookeeper", "kafka")
LONG_MAX: Final = 2**63 - 1


# A Kafka-coordinated member that watches the fence says so in its JoinGroup subscription (the
# user data every consumer-protocol subscription carries), naming its fence-aware znode; other
# clients' range and round-robin assignors ignore user data.
FENCE_MARKER_PREFIX: Final = b"zkconsumer-fence-aware:"


def fence_marker(consumer_id: str) -> bytes:
    return FENCE_MARKER_PREFIX + consumer_id.encode("utf-8")


def marked_consumer_id(user_data: bytes | None) -> str | None:
    """The consumer id a Kafka member's fence marker names; None for any other user data."""
    if not user_data or not user_data.startswith(FENCE_MARKER_PREFIX):
        return None
    try:
        named = user_data[len(FENCE_MARKER_PREFIX):].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return named or None


def other_coordination(coordination: str) -> str:
    """The coordination a group on `coordination` would move to (or came from)."""
    _one_of("coordination", coordination, COORDINATIONS)
    return COORDINATIONS[1 - COORDINATIONS.index(coordination)]


class FencePhase:
    DRAINING: Final = "draining"
    SWITCHED: Final = "switched"


_PHASES = (FencePhase.DRAINING, FencePhase.SWITCHED)


class OnFence:
    """What a member does when a fence moves its group away from its coordination."""

    SWITCH: Final = "switch"  # join the group through the new coordination, in the same process
    EXIT: Final = "exit"  # leave cleanly and end (exit 0); refuse to start on a switched group


ON_FENCE_CHOICES: Final = (OnFence.SWITCH, OnFence.EXIT)


@dataclass(frozen=True)
class Fence:
    """Where the group is going (`to`), how far (`phase`), since when (`started_ms`, epoch ms)."""

    to: str
    phase: str
    started_ms: int

    def __post_init__(self) -> None:
        _one_of("to", self.to, COORDINATIONS)
        _one_of("phase", self.phase, _PHASES)

    @property
    def switched(self) -> bool:
        return self.phase == FencePhase.SWITCHED

    def moved_on(self) -> Fence:
        """The same fence once the move is verified."""
        return Fence(self.to, FencePhase.SWITCHED, self.started_ms)

    def encode(self) -> bytes:
        return dump_json({"version": FENCE_VERSION, "to": self.to, "phase": self.phase,
                          "started": self.started_ms})

    @classmethod
    def decode(cls, path: str, data: bytes) -> Fence:
        fields = JsonObject.load(path, data)
        version = fields.integer("version", minimum=1)
        if version != FENCE_VERSION:
            raise fields.fail(f"fence version {version} is not one this zkconsumer knows "
                              f"({FENCE_VERSION}); upgrade it before it joins this group")
        to, phase = fields.string("to"), fields.string("phase")
        started = fields.integer("started", minimum=0, maximum=LONG_MAX)
        try:
            return cls(to, phase, started)
        except ValueError as exc:
            raise fields.fail(str(exc)) from None


@dataclass(frozen=True)
class FenceAwareMember:
    """A member's promise to honour the fence: the coordination it is on and what it does."""

    coordination: str
    on_fence: str

    def __post_init__(self) -> None:
        _one_of("coordination", self.coordination, COORDINATIONS)
        _one_of("on_fence", self.on_fence, ON_FENCE_CHOICES)

    def encode(self) -> bytes:
        return dump_json({"version": FENCE_VERSION, "coordination": self.coordination,
                          "on_fence": self.on_fence})

    @classmethod
    def decode(cls, path: str, data: bytes) -> FenceAwareMember:
        fields = JsonObject.load(path, data)
        fields.integer("version", minimum=1)  # a later version only adds fields
        coordination = fields.string("coordination")
        on_fence = fields.string("on_fence")
        try:
            return cls(coordination, on_fence)
        except ValueError as exc:
            raise fields.fail(str(exc)) from None


def _one_of(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {describe(value)}")

"""A stand-in for the member's watch of the cutover fence (`zkconsumer.member.fence_watch`),
injected as a connector's `watch_fence`."""

from __future__ import annotations

from zkconsumer.znodes.fence import Fence, FenceAwareMember


class FakeFence:
    """The group's fence in an attribute; `change` calls the member's watch as kazoo would.
    `events` records the fence-aware znode's life, with whether the member was registered
    (its `membership`, where a test sets one, says so)."""

    def __init__(self, fence: Fence | None = None) -> None:
        self.fence = fence
        self.events: list[tuple[str, bool]] = []
        self.membership = None
        self.promise: FenceAwareMember | None = None
        self._on_fence = None

    def __call__(self, _zk, _group, _consumer_id, promise) -> FakeFence:
        self.promise = promise
        return self

    def read(self) -> Fence | None:
        return self.fence

    def declare(self) -> None:
        self.events.append(("declared", self._registered()))

    @property
    def declared(self) -> int:
        """How many times the member promised to honour the fence."""
        return sum(1 for event, _registered in self.events if event == "declared")

    def withdraw(self) -> None:
        self.events.append(("withdrawn", self._registered()))

    def watch(self, on_fence) -> None:
        self._on_fence = on_fence
        on_fence(self.fence)

    def change(self, fence: Fence | None) -> None:
        self.fence = fence
        self._on_fence(fence)

    def _registered(self) -> bool:
        return self.membership is not None and bool(self.membership.registered)

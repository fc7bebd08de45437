"""kazoo's threading handler with a cheaper wait.

kazoo's connection thread waits on its socket before every read and every write of every
request and response, four waits per request. kazoo builds a `selectors` selector for each
wait (registering each file object, then closing it): about 60% of the CPU a request costs
kazoo, measured with 200 reads in flight. A member's rebalance is a few thousand requests when
a thousand partitions move, and many members in one process share one interpreter, so this
wait is one `poll(2)` object used once, with no selector around it.
"""

from __future__ import annotations

import math
import select

from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.handlers.utils import fileobj_to_fd

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


class PollingHandler(SequentialThreadingHandler):
    """kazoo's handler, waiting with `poll_select`."""

    def select(self, *args, **kwargs):
        return poll_select(*args, **kwargs)

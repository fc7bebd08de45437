"""A host of its own for one process: a network namespace joined to this one by a veth pair.

A member run there (`ip netns exec`) reaches this host only at `host_address`, so every byte it
exchanges with the brokers can be made to pass one `TcpProxy`: a network partition of that
member alone, while it keeps running. The broker's advertised address (127.0.0.1:port) is the
namespace's own loopback there, where a forwarding proxy leads it back here (`forward`).
Needs root (CAP_NET_ADMIN) and iproute2; `available()` says whether this machine allows it.
"""

from __future__ import annotations

import select
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Namespace:
    name: str
    host_address: str  # this host's end of the veth pair, as the namespace sees it

    @property
    def launcher(self) -> tuple[str, ...]:
        return ("ip", "netns", "exec", self.name)

    @contextmanager
    def forward(self, listen_port: int, to_port: int) -> Iterator[None]:
        """Inside the namespace, 127.0.0.1:`listen_port` forwarded to this host's
        `host_address`:`to_port`, for the block."""
        process = subprocess.Popen(
            [*self.launcher, sys.executable, "-m", "zkconsumer.testing.tcp_proxy",
             "--listen", f"127.0.0.1:{listen_port}", "--to", f"{self.host_address}:{to_port}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            assert process.stdout is not None
            ready = select.select([process.stdout], [], [], 30)[0]
            first = process.stdout.readline().strip() if ready else "(nothing within 30 s)"
            if first != "listening":
                process.kill()
                rest = process.stdout.read() if ready else ""
                raise RuntimeError(f"the forwarder in {self.name} did not start: {first} {rest}")
            yield
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


def available() -> str | None:
    """None when network namespaces can be made here, else why not (one line)."""
    probe = f"zkc-probe-{uuid.uuid4().hex[:6]}"
    try:
        _ip("netns", "add", probe)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        return f"no network namespaces here ({detail.strip()[:120]})"
    _ip("netns", "del", probe)
    return None


@contextmanager
def network_namespace() -> Iterator[Namespace]:
    """A fresh namespace with loopback up and a /30 link to this host, removed afterwards."""
    tag = uuid.uuid4().hex[:6]
    name, here, there = f"zkc-{tag}", f"zkh{tag}", f"zkn{tag}"
    # A /30 of 10.213.0.0/16 picked from the tag, unlikely to meet another test's.
    block = int(tag, 16) % 16384
    third, fourth = block // 64, (block % 64) * 4
    host, inside = f"10.213.{third}.{fourth + 1}", f"10.213.{third}.{fourth + 2}"
    _ip("netns", "add", name)
    try:
        _ip("link", "add", here, "type", "veth", "peer", "name", there)
        _ip("link", "set", there, "netns", name)
        _ip("addr", "add", f"{host}/30", "dev", here)
        _ip("link", "set", here, "up")
        _ip("-n", name, "addr", "add", f"{inside}/30", "dev", there)
        _ip("-n", name, "link", "set", there, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        yield Namespace(name, host)
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
        subprocess.run(["ip", "link", "del", here], capture_output=True, timeout=30)

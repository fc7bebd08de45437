"""`/metrics` and `/healthz` of a member or the lag exporter, over HTTP on a daemon thread.

prometheus_client's own server answers only the metrics, and orchestrators want a health check
beside them, so this is a small `ThreadingHTTPServer` serving both: the Prometheus text format
from a registry, and 200 or 503 with one line saying why; plus, for the exporter, whatever
other paths its `route` answers (Burrow's API).
"""

from __future__ import annotations

import functools
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from zkconsumer.errors import ZkConsumerError
from zkconsumer.logs import get_logger
from zkconsumer.model import format_address

log = get_logger(__name__)

_TEXT = "text/plain; charset=utf-8"
# How often the serving thread looks whether it is asked to stop: `stop` waits that long at
# most (the default, 0.5 s, made a member's shutdown visibly slower); 20 idle wake-ups a
# second cost nothing measurable.
_STOP_POLL_S = 0.05
# (healthy, why): why is one line for the body
Health = Callable[[], tuple[bool, str]]


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str = "application/json"


# The answer to a path other than /metrics and /healthz, given the path and the query string;
# None: not found.
Route = Callable[[str, str], "Reply | None"]


class MetricsServerError(ZkConsumerError):
    """The metrics server could not listen (most often: the port is in use)."""


class MetricsServer:
    """Listens as soon as it is made, so a port in use is known before the member joins."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry,
                 health: Health, route: Route | None = None,
                 text: Callable[[], bytes] | None = None, paths: Sequence[str] = ()) -> None:
        """`text`: what /metrics answers, if not the registry written out at each scrape (the
        lag exporter's scan is written out once, when it ends). `paths`: those `route`
        answers, which the start line names beside /metrics and /healthz."""
        server_class = _Server6 if ":" in host else _Server
        try:
            self._server = server_class((host, port), _Handler)
        except OSError as exc:
            raise MetricsServerError(f"cannot serve metrics on {format_address(host, port)}: "
                                     f"{exc.strerror or exc}") from None
        self._server.metrics_text = text or functools.partial(generate_latest, registry)
        self._server.health = health
        self._server.route = route or _nothing
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        args=(_STOP_POLL_S,), name="zkconsumer-metrics",
                                        daemon=True)
        self._thread.start()
        log.info("serving metrics", address=format_address(host, self.port),
                 paths=["/metrics", "/healthz", *paths])

    @property
    def port(self) -> int:
        """The port listened on (the one the OS chose, when asked for 0)."""
        return self._server.server_address[1]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    metrics_text: Callable[[], bytes]
    health: Health
    route: Route


def _nothing(_path: str, _query: str) -> Reply | None:
    return None


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        path = url.path
        try:
            if path == "/metrics":
                self._reply(200, CONTENT_TYPE_LATEST, self.server.metrics_text())
            elif path == "/healthz":
                healthy, why = self.server.health()
                self._reply(200 if healthy else 503, _TEXT, f"{why}\n".encode())
            elif (reply := self.server.route(path, url.query)) is not None:
                self._reply(reply.status, reply.content_type, reply.body)
            else:
                self._reply(404, _TEXT, b"not found: try /metrics or /healthz\n")
        except Exception as exc:  # noqa: BLE001 - a scrape must not print a traceback
            log.warning("metrics request failed", path=path, error=f"{type(exc).__name__}: {exc}")
            self._reply(500, _TEXT, f"{type(exc).__name__}: {exc}\n".encode())

    def _reply(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:
        """Silent: a line per scrape, every few seconds, would drown the member's own logs."""


"""A member's Prometheus metrics and its `/metrics` + `/healthz` server.

The server (and the http.server it is made of) is imported when first named: a member serves
metrics only with `metrics.port`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zkconsumer.metrics.member_metrics import MemberMetrics, MemberSources

if TYPE_CHECKING:
    from zkconsumer.metrics.http_server import MetricsServer, MetricsServerError

__all__ = ["MemberMetrics", "MemberSources", "MetricsServer", "MetricsServerError"]


def __getattr__(name: str) -> Any:
    if name in ("MetricsServer", "MetricsServerError"):
        from zkconsumer.metrics import http_server

        return getattr(http_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

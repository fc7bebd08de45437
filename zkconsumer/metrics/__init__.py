"""A member's Prometheus metrics and its `/metrics` + `/healthz` server."""

from zkconsumer.metrics.http_server import MetricsServer, MetricsServerError
from zkconsumer.metrics.member_metrics import MemberMetrics, MemberSources

__all__ = ["MemberMetrics", "MemberSources", "MetricsServer", "MetricsServerError"]

"""Burrow 1.2's JSON answers as shapes, and a checker of a document against one.

The shapes were recorded from Debian's Burrow 1.2.1 (`/usr/bin/Burrow`) run by hand against a
local 0.9.0.1 cluster with a `kafka_zk` and a `kafka` consumer module: every key it wrote, with
the JSON type of its value. A document matches when it has every key of the shape with that
type; keys the shape does not name are allowed (the exporter only ever adds fields).

A shape is a Python type (`str`, `int`, `bool`, `NUMBER`), a dict of key -> shape, a
one-element list (every item has that shape), `Maybe(shape)` (null or the shape) or
`MapOf(shape)` (an object with any keys, every value of the shape).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NUMBER = (int, float)  # Burrow's float32 fields (`complete`) are written as 1 or 0.6666667


@dataclass(frozen=True)
class Maybe:
    shape: Any


@dataclass(frozen=True)
class MapOf:
    shape: Any


def mismatches(value: Any, shape: Any, where: str = "$") -> list[str]:
    """Every place where `value` is not of `shape`, as `path: what`; empty when it matches."""
    if isinstance(shape, Maybe):
        return [] if value is None else mismatches(value, shape.shape, where)
    if isinstance(shape, MapOf):
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {value!r}"]
        return [m for key, item in value.items() for m in mismatches(item, shape.shape,
                                                                     f"{where}.{key}")]
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {value!r}"]
        missing = [f"{where}.{key}: missing" for key in shape if key not in value]
        return missing + [m for key, item in shape.items() if key in value
                          for m in mismatches(value[key], item, f"{where}.{key}")]
    if isinstance(shape, list):
        if not isinstance(value, list):
            return [f"{where}: expected an array, got {value!r}"]
        return [m for index, item in enumerate(value)
                for m in mismatches(item, shape[0], f"{where}[{index}]")]
    types = shape if isinstance(shape, tuple) else (shape,)
    if isinstance(value, bool) and bool not in types:  # JSON true is no number
        return [f"{where}: expected {_names(types)}, got {value!r}"]
    if not isinstance(value, types):
        return [f"{where}: expected {_names(types)}, got {value!r}"]
    return []


def _names(types: tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in types)


def envelope(**fields: Any) -> dict:
    """Burrow's answer around a document: error flag, message, the document, the request."""
    return {"error": bool, "message": str, **fields, "request": {"url": str, "host": str}}


OFFSET = {"offset": int, "timestamp": int, "lag": int}
PARTITION_STATUS = {"topic": str, "partition": int, "owner": str, "client_id": str,
                    "status": str, "start": Maybe(OFFSET), "end": Maybe(OFFSET),
                    "current_lag": int, "complete": NUMBER}
GROUP_STATUS = {"cluster": str, "group": str, "status": str, "complete": NUMBER,
                "partitions": [PARTITION_STATUS], "partition_count": int,
                "maxlag": Maybe(PARTITION_STATUS), "totallag": int}
CONSUMER_PARTITION = {"offsets": [Maybe(OFFSET)], "owner": str, "client_id": str,
                      "current-lag": int}
CLIENT_PROFILE = {"name": str, "client-id": str, "kafka-version": str,
                  "tls": Maybe({"name": str, "noverify": bool, "certfile": str, "keyfile": str,
                                "cafile": str}),
                  "sasl": Maybe({"name": str, "handshake-first": bool, "username": str})}
CLUSTER_MODULE = {"class-name": str, "servers": [str], "client-profile": CLIENT_PROFILE,
                  "topic-refresh": int, "offset-refresh": int}
CONSUMER_MODULE = {"class-name": str, "cluster": str, "servers": [str], "group-whitelist": str,
                   "zookeeper-path": str, "zookeeper-timeout": int,
                   "client-profile": CLIENT_PROFILE, "offsets-topic": str,
                   "start-latest": bool}
STORAGE_MODULE = {"class-name": str, "intervals": int, "min-distance": int,
                  "group-whitelist": str, "expire-group": int}
EVALUATOR_MODULE = {"class-name": str, "expire-cache": int}
# Burrow's http notifier module (from its source, httpResponseConfigModuleNotifierHTTP: no
# notifier was configured in the recording)
NOTIFIER_MODULE = {"class-name": str, "group-whitelist": str, "interval": int, "threshold": int,
                   "timeout": int, "keepalive": int, "url-open": str, "url-close": str,
                   "method-open": str, "method-close": str, "template-open": str,
                   "template-close": str, "extra": dict, "send-close": bool}

CLUSTER_LIST = envelope(clusters=[str])
CLUSTER_DETAIL = envelope(module=CLUSTER_MODULE)
CONSUMER_LIST = envelope(consumers=[str])
CONSUMER_DETAIL = envelope(topics=MapOf([CONSUMER_PARTITION]))
CONSUMER_STATUS = envelope(status=GROUP_STATUS)
TOPIC_LIST = envelope(topics=[str])
TOPIC_DETAIL = envelope(offsets=[int])
TOPIC_CONSUMERS = envelope(consumers=[str])
ERROR = envelope()
INVALID_REQUEST = {"error": bool, "message": str, "result": {}}
LOG_LEVEL = envelope(level=str)
MAIN_CONFIG = envelope(
    general={"pidfile": str, "stdout-logfile": str, "access-control-allow-origin": str},
    logging={"filename": str, "max-size": int, "max-backups": int, "max-age": int,
             "use-local-time": bool, "use-compression": bool, "level": str},
    zookeeper={"servers": [str], "timeout": int, "root-path": str},
    httpserver=MapOf({"address": str, "tls": str, "timeout": int}))
MODULE_LIST = envelope(coordinator=str, modules=[str])
MODULE_DETAIL = {"cluster": envelope(module=CLUSTER_MODULE),
                 "consumer": envelope(module=CONSUMER_MODULE),
                 "storage": envelope(module=STORAGE_MODULE),
                 "evaluator": envelope(module=EVALUATOR_MODULE),
                 "notifier": envelope(module=NOTIFIER_MODULE)}

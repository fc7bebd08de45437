"""Parsers of single config values. Each raises `Invalid` with the reason alone: the caller
knows the key, the value and where it came from, so the one error line names all four."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

from zkconsumer.assignment.topic_filter import Whitelist, normalize_filter_regex
from zkconsumer.errors import TopicFilterError

# The reference reads every number as a Java int.
INT_MAX = 2**31 - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")
_LEGAL_NAME = re.compile(r"[A-Za-z0-9._-]+")
_MAX_TOPIC_LENGTH = 249


class Invalid(Exception):
    """Why a value is rejected; the caller knows the key, the value and the source."""


def non_empty(text: str) -> str:
    if not text:
        raise Invalid("must not be empty")
    return text


def integer(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not _INTEGER.fullmatch(text):
            raise Invalid("must be an integer")
        value = int(text)
        if not minimum <= value <= INT_MAX:
            raise Invalid(f"must be between {minimum} and {INT_MAX}")
        return value
    return parse


def boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise Invalid("must be true or false")
    return text.lower() == "true"


def one_of(*choices: str, aliases: Mapping[str, str] = MappingProxyType({})
            ) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = aliases.get(text.lower(), text.lower())
        if value not in choices:
            raise Invalid(f"must be one of {', '.join(choices + tuple(aliases))}")
        return value
    return parse


def legal_name(text: str) -> str:
    """The reference's rule for group and client ids, which become znode names and metric tags."""
    if not _LEGAL_NAME.fullmatch(text):
        raise Invalid("may contain only ASCII alphanumerics, '.', '_' and '-'")
    return text


def consumer_id(text: str) -> str:
    if "/" in text:
        raise Invalid("must not contain '/', it becomes part of a znode name")
    return text


def topic_list(text: str) -> tuple[str, ...]:
    topics = [topic.strip() for topic in text.split(",")]
    for topic in topics:
        if not _LEGAL_NAME.fullmatch(topic) or topic in (".", "..") \
                or len(topic) > _MAX_TOPIC_LENGTH:
            raise Invalid(f"{topic!r} is not a legal topic name")
    return tuple(dict.fromkeys(topics))


def topic_filter(text: str) -> str:
    """The reason names the regex: a command-line option's error shows no value otherwise."""
    if not normalize_filter_regex(text):
        raise Invalid(f"{text!r} is empty once quotes and spaces are removed")
    try:
        return Whitelist(text).regex
    except TopicFilterError as exc:
        raise Invalid(f"{text!r} is not a valid regular expression: {exc.reason}") from None


def api_version(text: str) -> tuple[int, ...] | None:
    if text.lower() == "auto":
        return None
    parts = text.split(".")
    if not 2 <= len(parts) <= 4 or not all(part.isascii() and part.isdigit() for part in parts):
        raise Invalid("must be 'auto' or a version such as 0.9, 0.10.2 or 2.8")
    return tuple(int(part) for part in parts)


def port(text: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise Invalid("must be an integer")
    number = int(text)
    if not 0 <= number <= 65535:
        raise Invalid("must be a port (1-65535), or 0 for none")
    return number


def digest_credentials(text: str) -> str:
    user, colon, password = text.partition(":")
    if not colon or not user or not password:
        raise Invalid("must be user:password")
    return text


# TLS protocol versions as Java names them, in order.
TLS_VERSIONS = ("TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3")
_KEX = {"ECDHE_RSA": "ECDHE-RSA-", "ECDHE_ECDSA": "ECDHE-ECDSA-", "DHE_RSA": "DHE-RSA-",
        "DHE_DSS": "DHE-DSS-", "RSA": ""}
_BULK = {"AES_128_GCM": "AES128-GCM", "AES_256_GCM": "AES256-GCM", "AES_128_CBC": "AES128",
         "AES_256_CBC": "AES256", "CHACHA20_POLY1305": "CHACHA20-POLY1305"}


def store_type(text: str) -> str:
    """A Java key or trust store's type, as Kafka names them; JKS is refused with the way out."""
    value = text.upper()
    if value == "JKS":
        raise Invalid("JKS stores cannot be read here; convert it once with `keytool "
                      "-importkeystore -srckeystore STORE.jks -destkeystore STORE.p12 "
                      "-deststoretype PKCS12` and give the .p12 file with type PKCS12")
    if value not in ("PKCS12", "PEM"):
        raise Invalid("must be PKCS12 or PEM")
    return value


def tls_version(text: str) -> str:
    by_upper = {name.upper(): name for name in TLS_VERSIONS}
    if text.upper() not in by_upper:
        raise Invalid(f"must be one of {', '.join(TLS_VERSIONS)}")
    return by_upper[text.upper()]


def tls_versions(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(tls_version(part.strip()) for part in text.split(",")
                               if part.strip())) or _no_items()


def cipher_suites(text: str) -> tuple[str, ...]:
    """Java's (IANA) cipher suite names, each checked to have an OpenSSL equivalent."""
    suites = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    for suite in suites or _no_items():
        openssl_cipher(suite)
    return suites


def openssl_cipher(suite: str) -> str | None:
    """OpenSSL's name of a TLS 1.2 suite named as Java names it; None for a TLS 1.3 suite
    (OpenSSL offers those by itself)."""
    if suite in ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                 "TLS_CHACHA20_POLY1305_SHA256"):
        return None
    match = re.fullmatch(r"TLS_([A-Z0-9_]+?)_WITH_([A-Z0-9_]+)_(SHA|SHA256|SHA384)", suite)
    if not match or match[1] not in _KEX or match[2] not in _BULK:
        raise Invalid(f"{suite!r} is not a cipher suite known here (Java's names, such as "
                      "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)")
    bulk = _BULK[match[2]]
    return _KEX[match[1]] + bulk + ("" if bulk.startswith("CHACHA20") else f"-{match[3]}")


def host_check(text: str) -> bool:
    """Kafka's zookeeper.ssl.endpoint.identification.algorithm: HTTPS checks the server's
    host name against its certificate; an empty value turns the check off."""
    if text and text.upper() != "HTTPS":
        raise Invalid("must be HTTPS (check the host name) or empty (do not)")
    return bool(text)


def _no_items() -> tuple[str, ...]:
    raise Invalid("must name at least one")

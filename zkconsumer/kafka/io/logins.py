"""What a SASL login takes from outside the protocol: the `gssapi` package's security
contexts for GSSAPI, and an OAUTHBEARER token provider named in a properties file.

`broker_login` is the one reading of the SASL settings every connection opener uses (the wire
fetcher, the coordination's connections, the cluster client, the first contact): the pure
`credentials_from` decides the mechanism and its settings; this binds what it cannot hold.

A properties file holds only text, so `kafka.sasl.oauth.token.provider` names its provider as
`module:attribute` (`myapp.auth:provider`): the attribute is a provider (an object with
`token()`), a class of them, or a function returning one; it is imported once, when the
settings are read. Through the Python API (a settings dict), the provider object is given
itself. The Kerberos credentials are the user's, as the gssapi library finds them (the ticket
cache, `KRB5CCNAME`, or a keytab through `KRB5_CLIENT_KTNAME`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from zkconsumer.errors import ConfigError
from zkconsumer.kafka.protocol.sasl import (
    TOKEN_PROVIDER_KEY,
    BrokerLogin,
    GssContext,
    Kerberos,
    SaslLoginError,
    checked_token_provider,
    credentials_from,
)

GSSAPI_INSTALL = ("needs the gssapi package: pip install gssapi (built against the system's "
                  "Kerberos: apt-get install libkrb5-dev, or krb5-devel)")


def broker_login(settings: Mapping[str, Any]) -> BrokerLogin | None:
    """The login the kafka-python settings ask for, ready to run (None without SASL).
    ConfigError: a setting is missing or unusable, or GSSAPI without the gssapi package."""
    provider = settings.get("sasl_oauth_token_provider")
    if isinstance(provider, str) and settings.get("sasl_mechanism") == "OAUTHBEARER":
        settings = {**settings, "sasl_oauth_token_provider": token_provider_named(provider)}
    login = credentials_from(settings)
    if isinstance(login, Kerberos) and login.new_context is None:
        return login._replace(new_context=gssapi_contexts())
    return login


def token_provider_named(text: str) -> Any:
    """The token provider `module:attribute` names (see the module's doc). ConfigError when it
    cannot be imported or is not a provider."""
    module_name, colon, attribute = text.strip().partition(":")
    if not colon or not module_name or not attribute:
        raise ConfigError(TOKEN_PROVIDER_KEY, text, "must name the token provider as "
                          "module:attribute (an object with token(), a class of them, or a "
                          "function returning one)")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(TOKEN_PROVIDER_KEY, text, f"cannot be imported: {exc}") from None
    if isinstance(found, type) or (callable(found) and not hasattr(found, "token")):
        try:
            found = found()
        except Exception as exc:  # the user's code: its failure is the setting's
            raise ConfigError(TOKEN_PROVIDER_KEY, text, f"making the provider failed: "
                              f"{type(exc).__name__}: {exc}") from None
    return checked_token_provider(found)


def gssapi_contexts() -> Callable[[str], GssContext]:
    """Security contexts of the gssapi package, one per login, for a service name such as
    `kafka@broker1.example.com`. ConfigError when the package is not installed."""
    try:
        import gssapi  # noqa: F401  (only GSSAPI logins need it)
    except ImportError:
        raise ConfigError("kafka.sasl.mechanism", "GSSAPI", GSSAPI_INSTALL) from None
    return _GssapiContext


class _GssapiContext:
    """A gssapi initiator context with the narrow interface the GSSAPI mechanism drives; the
    library's errors (no ticket, an unknown service principal, a bad token) are SaslLoginErrors
    naming its message."""

    def __init__(self, service: str) -> None:
        import gssapi

        with _gssapi_failing("the Kerberos service name"):
            name = gssapi.Name(service, name_type=gssapi.NameType.hostbased_service)
            self._context = gssapi.SecurityContext(name=name, usage="initiate")

    @property
    def complete(self) -> bool:
        return bool(self._context.complete)

    def step(self, token: bytes | None) -> bytes | None:
        with _gssapi_failing("the Kerberos exchange"):
            return self._context.step(token)

    def wrap(self, message: bytes) -> bytes:
        with _gssapi_failing("wrapping the security-layer answer"):
            return self._context.wrap(message, False).message

    def unwrap(self, message: bytes) -> bytes:
        with _gssapi_failing("the broker's security-layer offer"):
            return self._context.unwrap(message).message


@contextmanager
def _gssapi_failing(what: str) -> Iterator[None]:
    """The gssapi library's errors inside a step, as one SaslLoginError line."""
    import gssapi

    try:
        yield
    except gssapi.exceptions.GSSError as exc:
        message = " ".join(str(exc).split())
        raise SaslLoginError(f"{what} failed: {message}") from exc

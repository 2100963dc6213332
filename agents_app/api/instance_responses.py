"""Response schemas of the instance's own routes (sign-in options, configuration, providers,
diagnostics) and of signing in and out. Built like agents_app.api.responses: keys passed
through unchanged, keys not declared kept, so the JSON stays the reference's wire format."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agents_app.api.responses import Bool, Object, Objects, Out, Str, StrOrNull, Value


class CsrfOut(Out):
    csrfToken: Str


class AuthConfigOut(Out):
    github: Bool
    google: Bool
    platformConnected: Bool
    localPassword: Bool
    hosted: Bool
    standardAgentsLogin: Bool
    platformEndpoint: StrOrNull


class InstanceConfigOut(Out):
    """``name`` and ``hosted``, then the sign-in options of ``AuthConfigOut``."""

    name: Str
    hosted: Bool


class TokenLoginOut(Out):
    """Signed in without a cookie: a bearer token first."""

    token: Str
    user: Object
    authType: Str


class CookieLoginOut(Out):
    """Signed in with the session cookie (a browser)."""

    user: Object
    authType: Str


# Tried in this order: an answer with a token is the first shape, keys in the order sent.
LoginOut = Annotated[TokenLoginOut | CookieLoginOut, Field(union_mode="left_to_right")]


class RevokedOut(Out):
    revoked: Bool


class ProvidersOut(Out):
    providers: Objects


class ProviderToolsOut(Out):
    tools: Objects


class WarningsOut(Out):
    warnings: Value

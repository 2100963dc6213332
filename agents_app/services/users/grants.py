"""Credential grants (spec 0.2.0 user scope, §6): a person (or the instance) lends a
credential to agent code without the code ever holding it.

A grant is ``{name, kind, origins, inject, allow, metadata}`` and a write-only secret
(encrypted like env values; no route, log record, tool result or frame carries it).
``grant_fetch`` makes one HTTP request for a caller, the ``(kind, name)`` of the code
asking (``("tools", "search_crm")``): it injects the secret only when ``allow`` names that
caller and the URL's origin is one of ``origins``, and otherwise refuses with a sentence.
An absent ``allow`` denies everyone. The request goes through the egress policy
(``runtime.core.egress``: checked after DNS, pinned to the checked address), follows no
redirect (a redirect would carry the credential somewhere the grant does not name), and the
response handed back to the caller is rebuilt without the injected request, so neither its
headers nor its URL show the secret (nor does httpx's log line: the credential goes in
under the client, ``_Injecting``).

A thread's owner's grant of that name is used first, then the instance's (``user`` null).
"""

from __future__ import annotations

import base64
import logging
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, quote_plus, urlsplit

import httpx
from asgiref.sync import sync_to_async
from django.db import IntegrityError, transaction
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents_app.base.encryption import decrypt, encrypt
from agents_app.base.errors import Conflict, Forbidden, Invalid, NotFound
from agents_app.models import CredentialGrant
from runtime.core import egress

logger = logging.getLogger("agents_app.grants")

NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
SECRET_MAX = 16 * 1024
ORIGINS_MAX = 20
METADATA_MAX = 16 * 1024
TIMEOUT_SECONDS = 30.0
_HEADER_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
_PARAM_RE = re.compile(r"^[A-Za-z0-9_.~-]{1,128}$")

Kind = Literal["bearer", "header", "query", "basic"]
CallerKind = Literal["tools", "endpoints", "userEndpoints", "agents"]
Caller = tuple[str, str]
CALLER_KINDS: tuple[str, ...] = ("tools", "endpoints", "userEndpoints", "agents")
# What each kind's ``inject`` may hold, and which of it is required.
_INJECT_KEYS: dict[str, tuple[set[str], set[str]]] = {
    "bearer": ({"header"}, set()),
    "header": ({"header", "prefix"}, {"header"}),
    "query": ({"param"}, {"param"}),
    "basic": ({"username"}, {"username"}),
}
# The arguments a caller may pass on to the request.
FETCH_OPTIONS = frozenset({"headers", "params", "json", "content", "data"})


class GrantRefused(Forbidden):
    """A ``grant_fetch`` that must not send the credential; the message says why."""


class GrantAllow(BaseModel):
    """Who may use the grant: names per caller kind; ``"*"`` is any of that kind."""

    model_config = ConfigDict(extra="forbid")

    tools: list[str] = Field(default_factory=list, max_length=200)
    endpoints: list[str] = Field(default_factory=list, max_length=200)
    userEndpoints: list[str] = Field(default_factory=list, max_length=200)  # noqa: N815 (spec name)
    agents: list[str] = Field(default_factory=list, max_length=200)

    def permits(self, caller: Caller) -> bool:
        kind, name = caller
        names: list[str] = getattr(self, kind, []) if kind in CALLER_KINDS else []
        return "*" in names or name in names


class GrantConfig(BaseModel):
    """A grant's settings (``CredentialGrant.config``); everything but the secret."""

    model_config = ConfigDict(extra="forbid")

    origins: list[str] = Field(..., min_length=1, max_length=ORIGINS_MAX)
    inject: dict[str, str] = Field(default_factory=dict)
    allow: GrantAllow | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class GrantView:
    """What routes show of a grant: never the secret."""

    name: str
    kind: str
    scope: str
    config: GrantConfig
    created_at: Any
    updated_at: Any

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "scope": self.scope,
            "origins": self.config.origins,
            "inject": self.config.inject,
            "allow": self.config.allow.model_dump() if self.config.allow else None,
            "metadata": self.config.metadata,
            "created_at": int(self.created_at.timestamp() * 1000),
            "updated_at": int(self.updated_at.timestamp() * 1000),
        }


# --- validation ------------------------------------------------------------------------------


def clean_name(name: str) -> str:
    if not NAME_RE.match(name or ""):
        raise Invalid(
            f"Invalid grant name {name[:70]!r}: 1 to 64 letters, digits, '_', '.' or '-'."
        )
    return name


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL (the port only when not the default)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    default = 443 if parts.scheme == "https" else 80
    host = parts.hostname.lower().rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


def _clean_origin(raw: str) -> str:
    parts = urlsplit(raw.strip())
    origin = origin_of(raw.strip())
    if origin is None or parts.username or parts.password or parts.query or parts.fragment:
        raise Invalid(
            f"origins: {raw[:100]!r} is not an origin: write scheme://host[:port] "
            "(http or https, no credentials, path or query)."
        )
    if parts.path not in ("", "/"):
        raise Invalid(
            f"origins: {raw[:100]!r} has a path; a grant names whole origins "
            "(scheme://host[:port])."
        )
    refused = egress.refusal(origin)
    if refused:
        raise Invalid(
            f"origins: the egress policy does not allow {origin}: {refused}. An operator can "
            "allow it with the STUDIO_EGRESS_ALLOW setting."
        )
    return origin


def _clean_inject(kind: str, inject: dict[str, str]) -> dict[str, str]:
    allowed, required = _INJECT_KEYS[kind]
    unknown = sorted(set(inject) - allowed)
    if unknown:
        raise Invalid(
            f"inject: {', '.join(unknown)} is not a setting of a {kind} grant "
            f"(it takes {', '.join(sorted(allowed)) or 'nothing'})."
        )
    missing = sorted(required - set(inject))
    if missing:
        raise Invalid(f"inject: a {kind} grant needs {', '.join(missing)}.")
    if "header" in inject and not _HEADER_RE.match(inject["header"]):
        raise Invalid(f"inject.header: {inject['header'][:70]!r} is not an HTTP header name.")
    if "param" in inject and not _PARAM_RE.match(inject["param"]):
        raise Invalid(f"inject.param: {inject['param'][:70]!r} is not a query parameter name.")
    if any(c in value for value in inject.values() for c in "\r\n\x00"):
        raise Invalid("inject: values may not contain line breaks or NUL.")
    if kind == "basic" and ":" in inject["username"]:
        raise Invalid("inject.username: a basic grant's username may not contain ':'.")
    return dict(inject)


def _clean_allow(allow: GrantAllow | None) -> GrantAllow | None:
    if allow is None:
        return None
    if allow.agents:
        # No code here asks as an agent (tools, thread endpoints and user endpoints do):
        # a list that would decide nothing is refused rather than kept.
        raise Invalid(
            "allow.agents: no caller asks for a grant as an agent here; name the tools, "
            "endpoints or userEndpoints that may use it."
        )
    for kind in CALLER_KINDS:
        for name in getattr(allow, kind):
            if not name or len(name) > 200:
                raise Invalid(f"allow.{kind}: names are 1 to 200 characters.")
    return allow


def _config(kind: str, body: dict[str, Any]) -> GrantConfig:
    try:
        config = GrantConfig.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "body"
        raise Invalid(f"Invalid grant: {where}: {first.get('msg', 'invalid')}") from None
    origins = list(dict.fromkeys(_clean_origin(o) for o in config.origins))
    if len(repr(config.metadata)) > METADATA_MAX:
        raise Invalid(f"metadata: at most {METADATA_MAX // 1024} KiB.")
    return GrantConfig(
        origins=origins,
        inject=_clean_inject(kind, config.inject),
        allow=_clean_allow(config.allow),
        metadata=config.metadata,
    )


# --- writes and reads ------------------------------------------------------------------------


def _rows(user_id: int | None) -> Any:
    if user_id is None:
        return CredentialGrant.objects.filter(user__isnull=True)
    return CredentialGrant.objects.filter(user_id=user_id)


def _view(row: CredentialGrant) -> GrantView:
    return GrantView(
        name=row.name,
        kind=row.kind,
        scope="user" if row.user_id else "instance",
        config=GrantConfig.model_validate(row.config),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def grant_list(*, user_id: int | None) -> list[GrantView]:
    """A user's grants (``None``: the instance's), by name; never a secret."""
    return [_view(row) for row in _rows(user_id).order_by("name")]


def _cleaned(
    name: str, kind: str, secret: str | None, settings: dict[str, Any]
) -> tuple[str, GrantConfig]:
    name = clean_name(name)
    if kind not in _INJECT_KEYS:
        raise Invalid(f"kind: {kind[:40]!r} is not one of bearer, header, query, basic.")
    if secret is not None and (not secret or len(secret) > SECRET_MAX or "\x00" in secret):
        raise Invalid(f"secret: 1 to {SECRET_MAX // 1024} KiB of text, no NUL.")
    if secret is not None and any(c in secret for c in "\r\n") and kind != "query":
        raise Invalid("secret: a header credential may not contain line breaks.")
    return name, _config(kind, settings)


def _check_stored(
    row: CredentialGrant | None, kind: str, secret: str | None, config: GrantConfig
) -> None:
    if row is None and secret is None:
        raise Invalid("secret: a new grant needs its secret.")
    if row is not None and secret is None and _moves_secret(row, kind, config):
        # Whoever can change a grant without knowing its secret must not be able to
        # send that secret somewhere else (a leaked API key pointing it at its own host).
        raise Invalid("secret: changing a grant's kind, origins or inject needs its secret again.")


def grant_check(
    *,
    user_id: int | None,
    name: str,
    kind: str,
    secret: str | None,
    settings: dict[str, Any],
) -> GrantConfig:
    """What ``grant_put`` would refuse (``Invalid``), without writing: the studio's form
    asks this before it saves, so both doors apply the one rule. The cleaned settings."""
    name, config = _cleaned(name, kind, secret, settings)
    _check_stored(_rows(user_id).filter(name=name).first(), kind, secret, config)
    return config


def grant_put(
    *,
    user_id: int | None,
    name: str,
    kind: str,
    secret: str | None,
    settings: dict[str, Any],
    actor: Any = None,
) -> GrantView:
    """Create or replace a grant. ``secret`` ``None`` keeps the stored one (an update that
    changes only who may use it); a new grant needs one. ``actor``: the person writing it
    (kept as ``updated_by``)."""
    name, config = _cleaned(name, kind, secret, settings)
    with transaction.atomic():
        row = _rows(user_id).select_for_update().filter(name=name).first()
        _check_stored(row, kind, secret, config)
        if row is None:
            row = CredentialGrant(user_id=user_id, name=name)
        row.kind = kind
        row.config = config.model_dump(mode="json")
        row.updated_by_id = getattr(actor, "pk", None)
        if secret is not None:
            row.ciphertext = encrypt(secret)
        try:
            with transaction.atomic():
                row.save()
        except IntegrityError:
            # Two first writes of one name at once: the other one won.
            raise Conflict(f"Grant {name} was created meanwhile; send it again.") from None
    return _view(row)


def _moves_secret(row: CredentialGrant, kind: str, config: GrantConfig) -> bool:
    stored = GrantConfig.model_validate(row.config)
    return (
        row.kind != kind
        or set(stored.origins) != set(config.origins)
        or stored.inject != config.inject
    )


def grant_delete(*, user_id: int | None, name: str) -> None:
    deleted, _ = _rows(user_id).filter(name=clean_name(name)).delete()
    if not deleted:
        raise NotFound(f"Grant not found: {name}")


# --- use -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Loaded:
    kind: str
    secret: str
    config: GrantConfig


def _load(user_id: int | None, name: str) -> _Loaded:
    row = None
    if user_id is not None:
        row = CredentialGrant.objects.filter(name=name, user_id=user_id).first()
    if row is None:
        row = CredentialGrant.objects.filter(name=name, user__isnull=True).first()
    if row is None:
        raise GrantRefused(f"No credential grant named {name!r} is available here.")
    return _Loaded(row.kind, decrypt(row.ciphertext), GrantConfig.model_validate(row.config))


def _caller_sentence(caller: Caller) -> str:
    kind, name = caller
    singular = {"tools": "tool", "endpoints": "endpoint", "userEndpoints": "user endpoint"}
    return f"{singular.get(kind, kind.rstrip('s'))} {name!r}"


def _check(loaded: _Loaded, grant: str, caller: Caller, url: str) -> str:
    if loaded.config.allow is None or not loaded.config.allow.permits(caller):
        raise GrantRefused(
            f"The credential grant {grant!r} does not allow the {_caller_sentence(caller)} to "
            f"use it (its allow.{caller[0]} must name it)."
        )
    origin = origin_of(url)
    if origin is None:
        raise GrantRefused(f"fetch({grant!r}): {url[:200]!r} is not an http(s) URL.")
    if origin not in loaded.config.origins:
        raise GrantRefused(
            f"The credential grant {grant!r} is not for {origin}: it may be sent only to "
            f"{', '.join(loaded.config.origins)}."
        )
    return origin


def _injected(loaded: _Loaded, request: httpx.Request) -> httpx.Request:
    """``request`` with the credential in it (the caller's own header or parameter of the
    same name is replaced, not merged)."""
    inject, secret = loaded.config.inject, loaded.secret
    headers, url = request.headers.copy(), request.url
    if loaded.kind == "bearer":
        headers[inject.get("header", "Authorization")] = f"Bearer {secret}"
    elif loaded.kind == "header":
        headers[inject["header"]] = inject.get("prefix", "") + secret
    elif loaded.kind == "basic":
        token = base64.b64encode(f"{inject['username']}:{secret}".encode()).decode("ascii")
        headers["Authorization"] = f"Basic {token}"
    else:
        url = url.copy_remove_param(inject["param"]).copy_add_param(inject["param"], secret)
    return httpx.Request(
        request.method, url, headers=headers, stream=request.stream, extensions=request.extensions
    )


class _Injecting(httpx.AsyncBaseTransport):
    """Puts the credential in at the last moment, under the client: httpx's own log line
    ("HTTP Request: GET <url>"), its errors and the response's ``request`` all keep the
    caller's request, so a query grant's secret is in none of them."""

    def __init__(self, loaded: _Loaded) -> None:
        self._loaded = loaded
        self._inner = egress.EgressTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._inner.handle_async_request(_injected(self._loaded, request))

    async def aclose(self) -> None:
        await self._inner.aclose()


def _options(kwargs: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(kwargs) - FETCH_OPTIONS)
    if unknown:
        raise GrantRefused(
            f"fetch: {', '.join(unknown)} is not an option here "
            f"(it takes {', '.join(sorted(FETCH_OPTIONS))})."
        )
    return dict(kwargs)


# Headers that describe the body as it came over the wire: the body handed on is already
# decoded (and may be shorter once scrubbed), so they would make httpx decode it again.
REDACTED = b"[REDACTED]"
_WIRE_HEADERS = ("content-encoding", "content-length", "transfer-encoding")


def _secret_forms(loaded: _Loaded) -> list[bytes]:
    """Every shape the credential may come back in: as sent, URL-encoded (a query grant), and
    a basic grant's whole token."""
    secret = loaded.secret
    forms = {secret, quote(secret, safe=""), quote_plus(secret)}
    if loaded.kind == "basic":
        user = loaded.config.inject.get("username", "")
        forms.add(base64.b64encode(f"{user}:{secret}".encode()).decode("ascii"))
    return sorted((f.encode() for f in forms if len(f) >= 4), key=len, reverse=True)


def _scrubbed(data: bytes, forms: list[bytes]) -> bytes:
    for form in forms:
        data = data.replace(form, REDACTED)
    return data


def _detached(response: httpx.Response, loaded: _Loaded) -> httpx.Response:
    """The response read and cut from its connection, with the caller's request, and the
    credential scrubbed from its body and headers: a server that echoes the request (a
    debugging endpoint, an error page quoting the Authorization header) must not hand the
    secret to the code the grant keeps it from."""
    forms = _secret_forms(loaded)
    headers = [
        (name, _scrubbed(value, forms))
        for name, value in response.headers.raw
        if name.decode("latin-1").lower() not in _WIRE_HEADERS
    ]
    return httpx.Response(
        response.status_code,
        headers=headers,
        content=_scrubbed(response.content, forms),
        request=response.request,
    )


async def grant_fetch(
    user_id: int | None,
    grant: str,
    caller: tuple[str, str],
    method: str,
    url: str,
    **kwargs: Any,
) -> httpx.Response:
    """One request with grant ``grant``'s credential, for ``caller`` (``(kind, name)``).

    ``GrantRefused`` (a sentence) when the grant is missing, does not allow ``caller``, is
    not for the URL's origin, or the egress policy refuses the address. The options are
    ``headers``, ``params``, ``json``, ``content`` and ``data``."""
    options = _options(kwargs)
    if not NAME_RE.match(grant or ""):
        raise GrantRefused(f"No credential grant named {grant[:70]!r} is available here.")
    loaded = await sync_to_async(_load)(user_id, grant)
    origin = _check(loaded, grant, caller, url)
    try:
        async with httpx.AsyncClient(
            transport=_Injecting(loaded), timeout=TIMEOUT_SECONDS, follow_redirects=False
        ) as http:
            response = await http.request(method.upper(), url, **options)
    except egress.EgressRefused as exc:
        raise GrantRefused(
            f"The egress policy does not allow {origin}: {exc}. An operator can allow it "
            "with the STUDIO_EGRESS_ALLOW setting."
        ) from None
    except httpx.HTTPError as exc:
        raise GrantRefused(f"fetch({grant!r}) to {origin} failed: {type(exc).__name__}") from None
    logger.info("grant %s used by %s for %s %s", grant, caller, method.upper(), origin)
    return _detached(response, loaded)

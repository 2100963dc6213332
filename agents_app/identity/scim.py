"""SCIM 2.0 at ``/scim/v2/`` (RFC 7644): Users, Groups, and the discovery documents
(``ServiceProviderConfig``, ``ResourceTypes``, ``Schemas``) provisioning clients read first.

Authenticated by a SCIM token (``Authorization: Bearer scim_…``) an administrator creates in
the studio (People and access → SCIM tokens); no cookies, so no CSRF. Bodies are JSON
(``application/scim+json`` or ``application/json``); answers are ``application/scim+json``;
errors are SCIM error objects. What each operation does is ``services.access.scim``'s.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from agents_app.services.access import audit, oidc_client, scim
from agents_app.services.access.scim import ScimError

logger = logging.getLogger("agents_app.identity.scim")
CONTENT_TYPE = "application/scim+json"
MAX_BODY_BYTES = 1024 * 1024


def _answer(body: Any, status: int = 200, location: str = "") -> HttpResponse:
    response = HttpResponse(
        b"" if body is None else json.dumps(body).encode(), status=status, content_type=CONTENT_TYPE
    )
    if location:
        response["Location"] = location
    response["Cache-Control"] = "no-store"
    return response


def _base(request: HttpRequest) -> str:
    return oidc_client.absolute(request, "/scim/v2").rstrip("/")


def _body(request: HttpRequest) -> dict[str, Any]:
    if len(request.body) > MAX_BODY_BYTES:
        raise ScimError(413, "Request body too large")
    try:
        data = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise ScimError(400, "The body is not JSON", "invalidSyntax") from None
    if not isinstance(data, dict):
        raise ScimError(400, "The body is not a JSON object", "invalidSyntax")
    return data


def _int(request: HttpRequest, name: str, default: int) -> int:
    raw = request.GET.get(name, "")
    try:
        return int(raw) if raw else default
    except ValueError:
        raise ScimError(400, f"{name} must be a number", "invalidValue") from None


@csrf_exempt
def endpoint(request: HttpRequest, rest: str) -> HttpResponse:
    token = scim.token_authenticate(request.headers.get("Authorization", ""))
    if token is None:
        response = _answer(ScimError(401, "A valid SCIM bearer token is required").body(), 401)
        response["WWW-Authenticate"] = 'Bearer realm="scim"'
        return response
    parts = [p for p in rest.split("/") if p]
    actor = audit.Actor(
        audit.Kind.SCIM,
        f"SCIM token “{token.name}” (#{token.pk})",
        None,
        audit.request_source(request),
    )
    try:
        with audit.acting_as(actor):
            return _route(request, parts)
    except ScimError as exc:
        return _answer(exc.body(), exc.status)


def _route(request: HttpRequest, parts: list[str]) -> HttpResponse:
    base = _base(request)
    method = request.method or "GET"
    if not parts:
        raise ScimError(404, "Not found")
    resource, ident = parts[0], (parts[1] if len(parts) > 1 else "")
    if len(parts) > 2:
        raise ScimError(404, "Not found")
    if resource in ("ServiceProviderConfig", "ResourceTypes", "Schemas") and method == "GET":
        return _answer(_discovery(resource, base))
    handlers: dict[tuple[str, str, bool], Callable[[], HttpResponse]] = {
        ("Users", "GET", False): lambda: _answer(
            scim.user_list(
                request.GET.get("filter", ""),
                _int(request, "startIndex", 1),
                _int(request, "count", 100),
                base,
            )
        ),
        ("Users", "POST", False): lambda: _created(
            scim.user_resource(scim.user_create(_body(request)), base)
        ),
        ("Users", "GET", True): lambda: _answer(scim.user_resource(scim.user_get(ident), base)),
        ("Users", "PUT", True): lambda: _answer(
            scim.user_resource(scim.user_replace(scim.user_get(ident), _body(request)), base)
        ),
        ("Users", "PATCH", True): lambda: _answer(
            scim.user_resource(scim.user_patch(scim.user_get(ident), _body(request)), base)
        ),
        ("Users", "DELETE", True): lambda: _deleted(scim.user_delete, scim.user_get(ident)),
        ("Groups", "GET", False): lambda: _answer(
            scim.group_list(
                request.GET.get("filter", ""),
                _int(request, "startIndex", 1),
                _int(request, "count", 100),
                base,
                members="members" not in request.GET.get("excludedAttributes", ""),
            )
        ),
        ("Groups", "POST", False): lambda: _created(
            scim.group_resource(scim.group_create(_body(request)), base)
        ),
        ("Groups", "GET", True): lambda: _answer(
            scim.group_resource(
                scim.group_get(ident),
                base,
                members="members" not in request.GET.get("excludedAttributes", ""),
            )
        ),
        ("Groups", "PUT", True): lambda: _answer(
            scim.group_resource(scim.group_replace(scim.group_get(ident), _body(request)), base)
        ),
        ("Groups", "PATCH", True): lambda: _answer(
            scim.group_resource(scim.group_patch(scim.group_get(ident), _body(request)), base)
        ),
        ("Groups", "DELETE", True): lambda: _deleted(scim.group_delete, scim.group_get(ident)),
    }
    if resource not in ("Users", "Groups"):
        raise ScimError(404, f"No resource type {resource!r}")
    handler = handlers.get((resource, method, bool(ident)))
    if handler is None:
        raise ScimError(405, f"{method} is not supported here")
    return handler()


def _created(resource: dict[str, Any]) -> HttpResponse:
    return _answer(resource, 201, resource["meta"]["location"])


def _deleted(action: Callable[[Any], None], row: Any) -> HttpResponse:
    action(row)
    return _answer(None, 204)


def _discovery(resource: str, base: str) -> dict[str, Any]:
    if resource == "ServiceProviderConfig":
        return {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
            "patch": {"supported": True},
            "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
            "filter": {"supported": True, "maxResults": scim.MAX_PAGE},
            "changePassword": {"supported": False},
            "sort": {"supported": False},
            "etag": {"supported": False},
            "authenticationSchemes": [
                {
                    "type": "oauthbearertoken",
                    "name": "Bearer token",
                    "description": "A SCIM token created in the studio",
                    "primary": True,
                }
            ],
            "meta": {
                "resourceType": "ServiceProviderConfig",
                "location": f"{base}/ServiceProviderConfig",
            },
        }
    types = [
        {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
            "id": name,
            "name": name,
            "endpoint": f"/{name}s",
            "schema": schema,
            "meta": {"resourceType": "ResourceType", "location": f"{base}/ResourceTypes/{name}"},
        }
        for name, schema in (("User", scim.USER_SCHEMA), ("Group", scim.GROUP_SCHEMA))
    ]
    if resource == "ResourceTypes":
        return {
            "schemas": [scim.LIST_SCHEMA],
            "totalResults": len(types),
            "startIndex": 1,
            "itemsPerPage": len(types),
            "Resources": types,
        }
    schemas = [
        {
            "id": scim.USER_SCHEMA,
            "name": "User",
            "attributes": [],
            "meta": {"resourceType": "Schema"},
        },
        {
            "id": scim.GROUP_SCHEMA,
            "name": "Group",
            "attributes": [],
            "meta": {"resourceType": "Schema"},
        },
    ]
    return {
        "schemas": [scim.LIST_SCHEMA],
        "totalResults": len(schemas),
        "startIndex": 1,
        "itemsPerPage": len(schemas),
        "Resources": schemas,
    }

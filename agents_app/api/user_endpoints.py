"""User endpoints (spec 0.2.0 row F2, ``define_user_endpoint``) over HTTP.

``/api/users/me/<path>``: the caller's own scope (any signed-in person, or an API key
acting as its owner). ``/api/users/{id}/<path>``: an admin (permission
``auth.change_user``) in another person's scope; the handler's ``request.caller`` is the
admin, its ``user`` the person. Mounted after every built-in ``/api/users/…`` route, so
those win (``/api/users/me/kv``, ``/api/users/me/env`` …). An unknown path is 404, a
known path with another method 405, both ``{"error": …}``.

The handler gets a ``UserRequest`` (method, path, query, the JSON body, headers without
``Authorization`` and ``Cookie``); what it returns becomes the response as a thread
endpoint's does, with the same safe defaults for user content.
"""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.http import HttpResponseBase, JsonResponse
from ninja import Router

from agents_app.api.authed import AuthedRequest
from agents_app.api.endpoints import harden_endpoint, to_response
from agents_app.api.parser import UnstorableTextError, check_storable
from agents_app.base.errors import Invalid, NotFound
from agents_app.bridge.users import thread_user
from agents_app.services.users import endpoints
from runtime.core.user_scope import UserEndpointError
from runtime.store.protocol import ThreadUser
from runtime.tools.user_endpoints import UserRequest

router = Router(tags=["user endpoints"])
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
_WITHHELD_HEADERS = {"authorization", "cookie", "x-csrftoken"}


def _body(request: AuthedRequest) -> Any:
    if not request.body:
        return None
    text = request.body.decode("utf-8", "replace")
    if "json" not in (request.content_type or ""):
        return text
    try:
        data = json.loads(text)
    except ValueError:
        raise Invalid("Invalid JSON body") from None
    return _storable(data)


def _query(request: AuthedRequest) -> dict[str, str]:
    return _storable({k: str(v) for k, v in request.GET.items()})


def _storable(data: Any) -> Any:
    """As every JSON body and query of the API: no NUL, no lone surrogate (a 400 naming it)."""
    try:
        check_storable(data)
    except UnstorableTextError as exc:
        raise Invalid(str(exc)) from None
    return data


def _caller(request: AuthedRequest) -> ThreadUser:
    via_key = getattr(request, "auth_type", None) == "api_key"
    return thread_user(request.auth, via_api_key=via_key)


def serve(request: AuthedRequest, who: ThreadUser, rest: str) -> HttpResponseBase:
    method = (request.method or "GET").upper()
    try:
        found = endpoints.find(method, rest)
        user_request = UserRequest(
            method=method,
            path="/" + rest.strip("/"),
            body=_body(request),
            query=_query(request),
            headers={
                k: v for k, v in request.headers.items() if k.lower() not in _WITHHELD_HEADERS
            },
            caller=_caller(request),
        )
        result = async_to_sync(endpoints.run)(who, user_request, found)
    except UserEndpointError as exc:
        return JsonResponse(exc.body, status=exc.status, safe=False)
    return harden_endpoint(to_response(result))


def _person(user_id: str) -> ThreadUser:
    user = (
        get_user_model().objects.filter(pk=user_id, is_active=True).first()
        if user_id.isdigit()
        else None
    )
    if user is None:
        raise NotFound(f"User not found: {user_id[:40]}")
    return thread_user(user)


@router.api_operation(METHODS, "/me/", summary="User endpoint: index route")
def user_endpoint_index(request: AuthedRequest) -> HttpResponseBase:
    return serve(request, thread_user(request.auth), "")


@router.api_operation(METHODS, "/me/{path:rest}", summary="User endpoint")
def user_endpoint(request: AuthedRequest, rest: str) -> HttpResponseBase:
    return serve(request, thread_user(request.auth), rest)


@router.api_operation(METHODS, "/{user_id}/", summary="User endpoint of another user: index")
def user_endpoint_admin_index(request: AuthedRequest, user_id: str) -> HttpResponseBase:
    return serve(request, _person(user_id), "")


@router.api_operation(METHODS, "/{user_id}/{path:rest}", summary="User endpoint of another user")
def user_endpoint_admin(request: AuthedRequest, user_id: str, rest: str) -> HttpResponseBase:
    return serve(request, _person(user_id), rest)

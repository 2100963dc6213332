"""User-defined thread endpoints, mounted beneath ``/api/threads/{id}/``.

Registered last, so built-in routes win. The handler gets the Django request,
the thread's ``ThreadState`` at rest (``execution`` is ``None``) and the route
params; it may return an ``HttpResponse``, a ``(status, body)`` pair, ``None``
(204) or anything JSON-serializable (200). It runs for at most 10 seconds.

Its responses get the safe defaults of user content (``file_responses.harden``: nosniff,
a sandboxing CSP, ``attachment`` unless the type is inert or JSON) unless the endpoint is
defined with ``active_content=True``.

A handler with a 4th parameter gets ``auth`` (spec 0.2.0 ``ThreadEndpointAuth``):
``{"caller": ThreadUser | None, "threadAccess": bool}``. An endpoint defined
``access="public"`` is reached by anyone: anonymous callers arrive as ``caller=None,
threadAccess=False``, signed-in callers without a right to the thread with
``threadAccess=False``; an unknown thread is the same 404 for all of them.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

from asgiref.sync import async_to_sync
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from ninja import Router
from ninja.errors import HttpError

from agents_app import selectors
from agents_app.api.authed import AuthedRequest
from agents_app.api.file_responses import INLINE_TYPES, harden
from agents_app.api.security import AUTHENTICATORS
from agents_app.base.code_registry import get_registry
from agents_app.base.endpoint_routes import resolve
from agents_app.base.errors import Forbidden, NotFound
from agents_app.bridge.users import thread_user
from agents_app.orchestration.engines import with_engine
from agents_app.services.access import limits
from runtime.engine import Engine
from runtime.tools.registry import EndpointDefinition, ThreadEndpointAuth, call_maybe_async

router = Router(tags=["thread endpoints"])
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
TIMEOUT_SECONDS = 10
# JSON is what most handlers answer; with nosniff a browser shows it as text.
ENDPOINT_INLINE_TYPES = INLINE_TYPES | {"application/json"}


class _Anonymous:
    """``request.auth`` of a caller nobody signed in, let through to a public endpoint."""

    is_authenticated = False  # for whatever reads ``request.auth`` as a user (the audit)
    pk = None

    def __bool__(self) -> bool:
        return True  # ninja takes a truthy answer as "authenticated"


ANONYMOUS = _Anonymous()
_ENDPOINT_PATH = re.compile(r"^/api/threads/[^/]+/(?P<rest>.*)$")


def public_endpoint(request: HttpRequest) -> _Anonymous | None:
    """The last of the routes' authenticators: lets a caller nobody signed in through when
    the path is a public endpoint's (every other endpoint still answers them 401)."""
    match = _ENDPOINT_PATH.match(request.path)
    if match is None:
        return None
    found = resolve(get_registry(), request.method or "GET", match.group("rest"))
    return ANONYMOUS if found is not None and found[0].public else None


ENDPOINT_AUTH = [*AUTHENTICATORS, public_endpoint]


async def _call(
    definition: EndpointDefinition,
    request: HttpRequest,
    thread_id: str,
    params: dict[str, str],
    auth: ThreadEndpointAuth,
) -> Any:
    args: tuple[Any, ...] = (params, auth) if definition.takes_auth else (params,)

    async def run(engine: Engine) -> Any:
        # Who asks when the handler calls ``state.fetch`` with a credential grant.
        state = (await engine.thread_state(thread_id)).as_caller("endpoints", definition.name)
        return await asyncio.wait_for(
            call_maybe_async(definition.fn, request, state, *args), TIMEOUT_SECONDS
        )

    return await with_engine(run)


def to_response(result: Any, *, text_strings: bool = False) -> HttpResponseBase:
    """A handler's return value as a response (shared with controllers, whose strings are
    text, as the spec's ``ControllerReturn`` says; a thread endpoint's are JSON)."""
    if isinstance(result, HttpResponseBase):
        return result
    if result is None:
        return HttpResponse(status=204)
    if text_strings and isinstance(result, str):
        return HttpResponse(result, content_type="text/plain; charset=utf-8")
    status = 200
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], int):
        status, result = result
    return JsonResponse(result, status=status, safe=False)


def _safe(definition: EndpointDefinition, response: HttpResponseBase) -> HttpResponseBase:
    """User code's response with the safe defaults of ``file_responses`` (JSON stays inline),
    unless the endpoint was defined with ``active_content=True``."""
    if definition.active_content:
        return response
    return harden_endpoint(response)


def harden_endpoint(response: HttpResponseBase) -> HttpResponseBase:
    """The safe defaults of ``file_responses``, JSON kept inline."""
    return harden(response, inline_types=ENDPOINT_INLINE_TYPES)


def _caller_auth(request: AuthedRequest, access: bool) -> ThreadEndpointAuth:
    user = None if request.auth is ANONYMOUS else request.auth
    via_key = getattr(request, "auth_type", None) == "api_key"
    caller = None if user is None else thread_user(user, via_api_key=via_key)
    return {"caller": caller, "threadAccess": access}


def _public_thread(request: AuthedRequest, thread_id: str) -> tuple[str, bool]:
    """A public endpoint's thread and whether the caller may use it: a missing thread is
    ``NotFound`` for everyone, one the caller may not use is served without access."""
    user = None if request.auth is ANONYMOUS else request.auth
    try:
        return str(selectors.access_thread(thread_id, user, id_only=True).pk), True
    except Forbidden:  # it exists (a missing one is NotFound, raised first)
        return str(uuid.UUID(thread_id)), False


def serve(request: AuthedRequest, thread_id: str, rest: str) -> HttpResponseBase:
    found = resolve(get_registry(), request.method or "GET", rest)
    if found is not None and found[0].public:
        if request.auth is ANONYMOUS:
            limits.public_endpoint_call(request)
        pk, access = _public_thread(request, thread_id)
    else:
        pk, access = str(selectors.access_thread(thread_id, request.auth).pk), True
    if found is None:
        raise NotFound("Not found")
    definition, params = found
    auth = _caller_auth(request, access) if definition.takes_auth else _NO_AUTH
    try:
        result = async_to_sync(_call)(definition, request, pk, params, auth)
    except TimeoutError:
        raise HttpError(504, "Thread endpoint timed out") from None
    return _safe(definition, to_response(result))


# Not read: a handler without the 4th parameter is never given it.
_NO_AUTH: ThreadEndpointAuth = {"caller": None, "threadAccess": False}


@router.api_operation(
    METHODS, "/{thread_id}/", auth=ENDPOINT_AUTH, summary="Thread endpoint: index route"
)
def endpoint_index(request: AuthedRequest, thread_id: str) -> HttpResponseBase:
    return serve(request, thread_id, "")


@router.api_operation(
    METHODS, "/{thread_id}/{path:rest}", auth=ENDPOINT_AUTH, summary="Thread endpoint"
)
def endpoint(request: AuthedRequest, thread_id: str, rest: str) -> HttpResponseBase:
    return serve(request, thread_id, rest)

"""User-defined thread endpoints, mounted beneath ``/api/threads/{id}/``.

Registered last, so built-in routes win. The handler gets the Django request,
the thread's ``ThreadState`` at rest (``execution`` is ``None``) and the route
params; it may return an ``HttpResponse``, a ``(status, body)`` pair, ``None``
(204) or anything JSON-serializable (200). It runs for at most 10 seconds.

Its responses get the safe defaults of user content (``file_responses.harden``: nosniff,
a sandboxing CSP, ``attachment`` unless the type is inert or JSON) unless the endpoint is
defined with ``active_content=True``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from asgiref.sync import async_to_sync
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from ninja import Router
from ninja.errors import HttpError

from agents_app import selectors
from agents_app.api.authed import AuthedRequest
from agents_app.api.file_responses import INLINE_TYPES, harden
from agents_app.base.code_registry import get_registry
from agents_app.base.endpoint_routes import resolve
from agents_app.base.errors import NotFound
from agents_app.orchestration.engines import with_engine
from runtime.engine import Engine
from runtime.tools.registry import EndpointDefinition, call_maybe_async

router = Router(tags=["thread endpoints"])
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
TIMEOUT_SECONDS = 10
# JSON is what most handlers answer; with nosniff a browser shows it as text.
ENDPOINT_INLINE_TYPES = INLINE_TYPES | {"application/json"}


async def _call(
    definition: EndpointDefinition, request: HttpRequest, thread_id: str, params: dict[str, str]
) -> Any:
    async def run(engine: Engine) -> Any:
        state = await engine.thread_state(thread_id)
        return await asyncio.wait_for(
            call_maybe_async(definition.fn, request, state, params), TIMEOUT_SECONDS
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


def serve(request: AuthedRequest, thread_id: str, rest: str) -> HttpResponseBase:
    thread = selectors.access_thread(thread_id, request.auth)
    found = resolve(get_registry(), request.method or "GET", rest)
    if found is None:
        raise NotFound("Not found")
    definition, params = found
    try:
        result = async_to_sync(_call)(definition, request, str(thread.pk), params)
    except TimeoutError:
        raise HttpError(504, "Thread endpoint timed out") from None
    return _safe(definition, to_response(result))


@router.api_operation(METHODS, "/{thread_id}/", summary="Thread endpoint: index route")
def endpoint_index(request: AuthedRequest, thread_id: str) -> HttpResponseBase:
    return serve(request, thread_id, "")


@router.api_operation(METHODS, "/{thread_id}/{path:rest}", summary="Thread endpoint")
def endpoint(request: AuthedRequest, thread_id: str, rest: str) -> HttpResponseBase:
    return serve(request, thread_id, rest)

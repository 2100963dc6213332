"""User-defined thread endpoints, mounted beneath ``/api/threads/{id}/``.

Registered last, so built-in routes win. The handler gets the Django request,
the thread's ``ThreadState`` at rest (``execution`` is ``None``) and the route
params; it may return an ``HttpResponse``, a ``(status, body)`` pair, ``None``
(204) or anything JSON-serializable (200). It runs for at most 10 seconds.
"""

from __future__ import annotations

import asyncio
from typing import Any

from asgiref.sync import async_to_sync
from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import Router
from ninja.errors import HttpError

from agents_app import selectors
from agents_app.code_registry import get_registry
from agents_app.endpoint_routes import resolve
from agents_app.engines import with_engine
from agents_app.errors import NotFound
from runtime.engine import Engine
from runtime.registry import EndpointDefinition, call_maybe_async

router = Router(tags=["thread endpoints"])
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
TIMEOUT_SECONDS = 10


async def _call(
    definition: EndpointDefinition, request: HttpRequest, thread_id: str, params: dict[str, str]
) -> Any:
    async def run(engine: Engine) -> Any:
        state = await engine.thread_state(thread_id)
        return await asyncio.wait_for(
            call_maybe_async(definition.fn, request, state, params), TIMEOUT_SECONDS
        )

    return await with_engine(run)


def _response(result: Any) -> HttpResponse:
    if isinstance(result, HttpResponse):
        return result
    if result is None:
        return HttpResponse(status=204)
    status = 200
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], int):
        status, result = result
    return JsonResponse(result, status=status, safe=False)


def serve(request: HttpRequest, thread_id: str, rest: str) -> HttpResponse:
    thread = selectors.access_thread(thread_id, request.auth)  # type: ignore[attr-defined]
    found = resolve(get_registry(), request.method or "GET", rest)
    if found is None:
        raise NotFound("Not found")
    definition, params = found
    try:
        result = async_to_sync(_call)(definition, request, str(thread.pk), params)
    except TimeoutError:
        raise HttpError(504, "Thread endpoint timed out") from None
    return _response(result)


@router.api_operation(METHODS, "/{thread_id}/", summary="Thread endpoint: index route")
def endpoint_index(request: HttpRequest, thread_id: str) -> HttpResponse:
    return serve(request, thread_id, "")


@router.api_operation(METHODS, "/{thread_id}/{path:rest}", summary="Thread endpoint")
def endpoint(request: HttpRequest, thread_id: str, rest: str) -> HttpResponse:
    return serve(request, thread_id, rest)

"""Controllers (``define_controller``), mounted beneath ``/api/`` after every built-in route.

Authenticated by default, like the rest of the API (an API key or a signed-in session,
with CSRF on unsafe methods); a controller defined ``public=True`` is reached anonymously
(a webhook checks its own signature). An unknown path is a JSON 404 before any
authentication, as for any other ``/api/`` path. Responses get the safe defaults of
thread endpoints (``file_responses.harden``) unless ``active_content=True``.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

from asgiref.sync import async_to_sync
from django.http import HttpRequest, HttpResponseBase
from ninja import Router
from ninja.errors import AuthenticationError, HttpError

from agents_app.api.endpoints import METHODS, TIMEOUT_SECONDS, harden_endpoint, to_response
from agents_app.api.security import AUTHENTICATORS
from agents_app.base.code_registry import get_registry
from agents_app.base.endpoint_routes import resolve_controller
from agents_app.base.errors import NotFound
from agents_app.services.definitions.rows import all_definitions
from runtime.tools.controllers import ControllerContext, ControllerDefinition
from runtime.tools.registry import call_maybe_async

router = Router(tags=["controllers"])


def _authenticate(request: HttpRequest) -> Any:
    """The user, by the API's own authenticators in order; ``AuthenticationError`` if none."""
    for auth in AUTHENTICATORS:
        user = auth(request)  # type: ignore[operator,misc]
        if user:
            request.auth = user  # type: ignore[attr-defined]
            return user
    raise AuthenticationError()


def _context(request: HttpRequest, params: dict[str, str]) -> ControllerContext:
    registry = get_registry()
    defs = all_definitions()
    agents = {d.name: d for d in defs["agents"]}
    prompts = {d.name: d for d in defs["prompts"]}
    models = {d.name: d for d in defs["models"]}
    return ControllerContext(
        req=request,
        params=params,
        url=urlsplit(request.build_absolute_uri()),
        agents=agents,
        agent_names=sorted(agents),
        prompts=prompts,
        prompt_names=sorted(prompts),
        models=models,
        model_names=sorted(models),
        tools=dict(registry.tools),
        hooks=dict(registry.hooks),
    )


async def _call(definition: ControllerDefinition, context: ControllerContext) -> Any:
    return await asyncio.wait_for(call_maybe_async(definition.fn, context), TIMEOUT_SECONDS)


def serve(request: HttpRequest, rest: str) -> HttpResponseBase:
    found = resolve_controller(get_registry(), request.method or "GET", rest)
    if found is None:
        raise NotFound("Not found")
    definition, params = found
    if definition.public:
        request.auth = None  # type: ignore[attr-defined]
    else:
        _authenticate(request)
    context = _context(request, params)
    try:
        result = async_to_sync(_call)(definition, context)
    except TimeoutError:
        raise HttpError(504, "Controller timed out") from None
    response = to_response(result, text_strings=True)
    return response if definition.active_content else harden_endpoint(response)


@router.api_operation(METHODS, "/{path:rest}", auth=None, summary="Controller")
def controller(request: HttpRequest, rest: str) -> HttpResponseBase:
    return serve(request, rest)

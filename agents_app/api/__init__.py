"""The HTTP API under ``/api/`` (django-ninja): one ``NinjaAPI``, routers split by concept.

Operations are thin: parse, resolve the thread through ``selectors.access_thread``,
call a service or selector, return the reference's JSON. Every error leaves as
``{"error": "<sentence>"}`` with the reference's status code; the mapping from
domain errors to HTTP lives in ``install_error_handlers`` and nowhere else.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI, Router
from ninja.errors import AuthenticationError, HttpError, ValidationError

# Before any router declares a route, so the routes' models are built on first use
# (agents_app/base/model_builds.py); the imports below follow it on purpose.
# ruff: noqa: E402
from agents_app.base.model_builds import defer_model_builds

defer_model_builds()

from agents_app.api import (
    a2a_agents,
    auth,
    branches,
    catalog,
    controllers,
    definition_writes,
    endpoints,
    env,
    evals,
    execution,
    feedback,
    instance,
    keys,
    knowledge,
    logs,
    messages,
    model_catalog,
    route_rules,
    schedules,
    storage,
    storage_uploads,
    thread_rpc,
    threads,
    triggers,
    user_endpoints,
    user_values,
    users,
    variables,
    webhooks,
)
from agents_app.api.limits import install_limit_handler
from agents_app.api.openapi_cache import CachedSchemaApi
from agents_app.api.parser import StrictParser, UnstorableTextError
from agents_app.api.security import AUTHENTICATORS
from agents_app.base.errors import DomainError
from agents_app.base.overload import log_overload, overload_reason, overload_response
from agents_app.base.storable_text import SURROGATE_ERROR

logger = logging.getLogger("agents_app.api")

_LOCATIONS = {"body", "query", "path", "header", "cookie", "form", "file"}
_PARAM_NAMES = {"payload", "params"}


def describe(errors: list[dict[str, Any]]) -> str:
    """A sentence from pydantic errors: ``agent_id: Field required; tags.0: …``."""
    parts = []
    for err in errors[:5]:
        loc = [str(x) for x in err.get("loc", ()) if str(x) not in _LOCATIONS | _PARAM_NAMES]
        where = ".".join(loc) or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "Invalid request: " + "; ".join(parts) + more


def error(api: NinjaAPI, request: HttpRequest, message: str, status: int) -> HttpResponse:
    return api.create_response(request, {"error": message}, status=status)


def install_error_handlers(api: NinjaAPI) -> None:
    """Domain errors and framework errors → ``{error}`` JSON with the right status."""

    @api.exception_handler(DomainError)
    def domain(request: HttpRequest, exc: DomainError) -> HttpResponse:
        return error(api, request, exc.message, exc.status)

    @api.exception_handler(ValidationError)
    def invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        return error(api, request, describe(exc.errors), 400)

    @api.exception_handler(AuthenticationError)
    def unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
        return error(api, request, "Unauthorized", 401)

    @api.exception_handler(HttpError)
    def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        message = str(exc)
        if message == "Cannot parse request body":  # ninja's wrapper around the parser
            cause = exc.__cause__
            message = str(cause) if isinstance(cause, UnstorableTextError) else "Invalid JSON body"
        return error(api, request, message, exc.status_code)

    @api.exception_handler(Http404)
    def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
        return error(api, request, "Not found", 404)

    @api.exception_handler(RequestDataTooBig)
    def too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
        return error(api, request, "Request body too large", 413)

    # Backstops for input the edge checks did not catch: a value the database refuses
    # (out of range, bad text) or text that cannot be encoded is the client's mistake, so
    # 400 with a sentence and a one-line warning, not a 500 with a traceback.
    @api.exception_handler(DataError)
    def unstorable(request: HttpRequest, exc: DataError) -> HttpResponse:
        logger.warning("Refused unstorable input in %s %s", request.method, request.path)
        return error(api, request, "Invalid request: a value cannot be stored", 400)

    @api.exception_handler(UnicodeEncodeError)
    def unencodable(request: HttpRequest, exc: UnicodeEncodeError) -> HttpResponse:
        return error(api, request, f"Invalid request: {SURROGATE_ERROR}", 400)

    @api.exception_handler(DjangoValidationError)
    def model_invalid(request: HttpRequest, exc: DjangoValidationError) -> HttpResponse:
        return error(api, request, "Invalid request: " + "; ".join(exc.messages), 400)

    @api.exception_handler(Exception)
    def internal(request: HttpRequest, exc: Exception) -> HttpResponse:
        reason = overload_reason(exc)
        if reason is not None:  # the database or the broker, not the request: 503, retry
            log_overload(request, exc)
            return overload_response(request, reason)
        logger.exception("Unhandled error in %s %s", request.method, request.path)
        return error(api, request, "Internal error", 500)


AUTH = AUTHENTICATORS
api = CachedSchemaApi(
    title="Standard Agents Studio API",
    version="1",
    description="The Standard Agents thread API (reference wire format). See docs/api.md.",
    auth=AUTH,
    parser=StrictParser(),
    urls_namespace="api",
    docs_url="/docs",
    openapi_url="/openapi.json",
)
install_error_handlers(api)
install_limit_handler(api)

definition_writes.register(catalog.router)
# Mount order matters: model_catalog before catalog (its /models/{name} routes would
# otherwise take /models/available); user-defined thread endpoints after the built-in
# thread routes (they take whatever path those left); controllers (define_controller) last.
# The thread routes come first: Django tries the patterns in this order, and a conversation
# start (create a thread, post to it) tried 87 patterns before its own (issue #58, 2.5% of
# the server's CPU per start). No other router has a path starting with /threads, so none
# is shadowed (test_the_thread_routes_are_tried_first).
ROUTERS: list[tuple[str, Router]] = [
    ("/threads", threads.router),
    ("/threads", messages.router),
    ("/threads", branches.router),
    ("/threads", execution.router),
    ("/threads", logs.router),
    ("/threads", storage_uploads.router),  # before storage's fs/{path:path}
    ("/threads", storage.router),
    ("/threads", thread_rpc.router),
    ("/threads", feedback.router),
    ("/threads", endpoints.router),
    ("/auth", auth.router),
    ("/api-keys", keys.router),
    ("/users/me", user_values.router),
    ("", env.router),
    # After env's /users/me/env: {user_id} would take "me".
    ("/users", users.router),
    ("/grants", users.instance_grants),
    ("", model_catalog.router),
    ("", catalog.router),
    ("", instance.router),
    ("", variables.router),
    ("/a2a-agents", a2a_agents.router),
    ("/knowledge", knowledge.router),
    ("/evals", evals.router),
    ("/schedules", schedules.router),
    ("/webhooks", webhooks.router),
    ("/triggers", triggers.router),
    ("/inbound", triggers.inbound),
    # User endpoints (define_user_endpoint) take whatever /users/me/… and /users/{id}/… path
    # the built-in routes above left (kv, env, grants, the users admin API).
    ("/users", user_endpoints.router),
    ("", controllers.router),
]
for _prefix, _router in ROUTERS:
    api.add_router(_prefix, _router)
# Every route passes its rule from agents_app.base.permissions.API_ROUTES (and the app refuses
# to start when a route has none).
route_rules.install(ROUTERS, AUTH)


@csrf_exempt  # it changes nothing; a POST without a token must get this 404, not an HTML 403
def not_found_view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """JSON 404 for any ``/api/…`` path no route matched."""
    return error(api, request, "Not found", 404)


def _is_api(request: HttpRequest) -> bool:
    return request.path == "/api" or request.path.startswith("/api/")


def server_error_view(request: HttpRequest) -> HttpResponse:
    """Django's last resort (``handler500``): under ``/api/`` still ``{"error": …}`` JSON,
    for what fails outside ninja's handlers (middleware, view decorators)."""
    if _is_api(request):
        return JsonResponse({"error": "Internal error"}, status=500)
    return defaults.server_error(request)


def bad_request_view(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler400`` (a disallowed host, too many fields …): JSON under ``/api/``."""
    if _is_api(request):
        return JsonResponse({"error": "Bad request"}, status=400)
    return defaults.bad_request(request, exception)

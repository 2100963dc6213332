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
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from agents_app.api import (
    auth,
    catalog,
    endpoints,
    env,
    execution,
    keys,
    logs,
    messages,
    storage,
    threads,
)
from agents_app.api.limits import install_limit_handler
from agents_app.api.parser import NUL_ERROR, NulError, StrictParser
from agents_app.api.security import ApiKeyAuth, SessionCookieAuth
from agents_app.errors import DomainError
from agents_app.overload import log_overload, overload_reason, overload_response

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
            message = NUL_ERROR if isinstance(exc.__cause__, NulError) else "Invalid JSON body"
        return error(api, request, message, exc.status_code)

    @api.exception_handler(Http404)
    def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
        return error(api, request, "Not found", 404)

    @api.exception_handler(RequestDataTooBig)
    def too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
        return error(api, request, "Request body too large", 413)

    @api.exception_handler(Exception)
    def internal(request: HttpRequest, exc: Exception) -> HttpResponse:
        reason = overload_reason(exc)
        if reason is not None:  # the database or the broker, not the request: 503, retry
            log_overload(request, exc)
            return overload_response(request, reason)
        logger.exception("Unhandled error in %s %s", request.method, request.path)
        return error(api, request, "Internal error", 500)


api = NinjaAPI(
    title="Standard Agents Studio API",
    version="1",
    description="The Standard Agents thread API (reference wire format). See docs/api.md.",
    auth=[ApiKeyAuth(), SessionCookieAuth()],
    parser=StrictParser(),
    urls_namespace="api",
    docs_url="/docs",
    openapi_url="/openapi.json",
)
install_error_handlers(api)
install_limit_handler(api)

api.add_router("/auth", auth.router)
api.add_router("/api-keys", keys.router)
api.add_router("", env.router)
api.add_router("", catalog.router)
api.add_router("/threads", threads.router)
api.add_router("/threads", messages.router)
api.add_router("/threads", execution.router)
api.add_router("/threads", logs.router)
api.add_router("/threads", storage.router)
# Last: user-defined thread endpoints take whatever path the built-in routes left.
api.add_router("/threads", endpoints.router)


def not_found_view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """JSON 404 for any ``/api/…`` path no route matched."""
    return error(api, request, "Not found", 404)

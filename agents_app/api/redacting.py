"""API responses that show thread content pass through the thread's redactor.

``@redacts_thread_data`` goes under the route decorator of a view with a
``thread_id`` path parameter: the JSON response (errors included) has every
secret value of that thread, in its raw and JSON-escaped forms, replaced by
``[REDACTED:NAME]``. The secrets are loaded once per request (a ``RedactorCache``
on the request). Raw file bytes and streamed bodies are sent as they are.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja.decorators import decorate_view

from agents_app.services.env.redaction import RedactorCache


def request_redactors(request: HttpRequest) -> RedactorCache:
    """The request's redactor cache (created on first use)."""
    cache = getattr(request, "_thread_redactors", None)
    if cache is None:
        cache = RedactorCache()
        request._thread_redactors = cache  # type: ignore[attr-defined]
    return cache


def redact_response(request: HttpRequest, thread_id: str, response: Any) -> Any:
    """Rewrite a JSON ``response`` in place with the thread's secrets replaced."""
    if not isinstance(response, HttpResponse):
        return response  # streamed file contents
    if not response.get("Content-Type", "").startswith("application/json"):
        return response
    if response.status_code >= 500:
        # Fixed sentences (internal error, outage): no thread data, and no second trip to
        # a database that may be the reason for the error.
        return response
    redactor = request_redactors(request).get(thread_id)
    if redactor:
        text = response.content.decode()
        redacted = redactor.text(text)
        if redacted != text:
            response.content = redacted.encode()
            if response.has_header("Content-Length"):  # a stored JSON file sets its own
                response["Content-Length"] = str(len(response.content))
    return response


def _redacting(run: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(run)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        response = run(request, *args, **kwargs)
        thread_id = kwargs.get("thread_id")
        return redact_response(request, str(thread_id), response) if thread_id else response

    return wrapper


redacts_thread_data = decorate_view(_redacting)

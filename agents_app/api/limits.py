"""Request limits on API operations: ``@limited(action)`` and the 429 answer.

``@limited("message_post")`` goes under the route decorator: it counts the request for the
authenticated user (and the API key it came with) before the operation runs, and gives
the count back when the operation fails. Every ``RateLimited`` (a rate, a sign-in limit or
a spend budget) leaves as 429 with ``Retry-After`` in the header and in the JSON body.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI

from agents_app.api.authed import AuthedRequest
from agents_app.base.errors import RateLimited
from agents_app.services.access import limits


def limited(action: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def decorator(view: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(view)
        def wrapper(request: AuthedRequest, *args: Any, **kwargs: Any) -> Any:
            taken = limits.action_hit(
                action,
                user=request.auth,
                api_key_id=getattr(request, "api_key_id", None),
            )
            try:
                return view(request, *args, **kwargs)
            except BaseException:
                taken.refund()  # a refused or failed operation does not use the quota
                raise

        # ninja resolves string annotations in the wrapper's module: hand it resolved ones.
        wrapper.__signature__ = inspect.signature(view, eval_str=True)  # type: ignore[attr-defined]
        return wrapper

    return decorator


def too_many(api: NinjaAPI, request: HttpRequest, exc: RateLimited) -> HttpResponse:
    body = {"error": exc.message, "retry_after": exc.retry_after}
    response = api.create_response(request, body, status=429)
    response["Retry-After"] = str(exc.retry_after)
    response["Cache-Control"] = "no-store"
    return response


def install_limit_handler(api: NinjaAPI) -> None:
    @api.exception_handler(RateLimited)
    def rate_limited(request: HttpRequest, exc: RateLimited) -> HttpResponse:
        return too_many(api, request, exc)

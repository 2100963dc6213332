"""Errors Django or ninja answer outside the API's exception handlers, in JSON too.

ninja answers a method no operation of a path takes with Django's plain-text
``HttpResponseNotAllowed``; under ``/api/`` it becomes ``{"error": …}`` (``Allow`` kept).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed


class ApiJsonErrorsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        is_api = request.path == "/api" or request.path.startswith("/api/")
        if is_api and isinstance(response, HttpResponseNotAllowed):
            response.content = json.dumps({"error": "Method not allowed"}).encode()
            response.headers["Content-Type"] = "application/json; charset=utf-8"
            # CommonMiddleware measured the plain-text body: a stale length makes a kept-alive
            # connection read the rest of this body as the next answer's status line.
            if "Content-Length" in response.headers:
                response.headers["Content-Length"] = str(len(response.content))
        return response

"""Who is changing things: the request being served, for the audit log
(``services.access.audit``). After authentication, so the studio's person is known; the API's
credential (``request.auth``, ``api_key_id``) is read when an event is written."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from agents_app.services.access import audit


class AuditContextMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with audit.serving(request):
            return self.get_response(request)

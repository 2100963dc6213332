"""A Content-Security-Policy on the studio (admin) and chat pages.

Django 5.2 has none built in. The pages load scripts and styles only from our own
static files (no inline ``<script>``, ``style=`` or event-handler attributes; data for
the scripts travels in ``json_script`` blocks, which are not executed), so the policy
can refuse everything inline and every other origin: an injected ``<script>`` or
``onerror=`` in rendered content does not run. ``frame-src``/``frame-ancestors``
``'self'`` keep the studio's "Try this agent" panel, which frames ``/chat/?embed=1``.

``STUDIO_CSP`` holds the policy (empty turns it off); ``STUDIO_CSP_REPORT_ONLY`` sends
it as ``Content-Security-Policy-Report-Only`` to try a change first. A response that
already has a policy (file downloads set their own) keeps it. ``/api/`` is left to
the API: its JSON is not a page, and its file responses carry their own sandbox policy.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"
REPORT_ONLY_HEADER = "Content-Security-Policy-Report-Only"


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.policy: str = settings.STUDIO_CSP
        self.header = REPORT_ONLY_HEADER if settings.STUDIO_CSP_REPORT_ONLY else HEADER

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.policy and self._is_page(request, response):
            response.headers.setdefault(self.header, self.policy)
        return response

    def _is_page(self, request: HttpRequest, response: HttpResponse) -> bool:
        if request.path == "/api" or request.path.startswith("/api/"):
            return False
        if HEADER in response.headers or REPORT_ONLY_HEADER in response.headers:
            return False
        return response.headers.get("Content-Type", "").startswith("text/html")

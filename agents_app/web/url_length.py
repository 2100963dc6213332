"""URLs longer than ``STUDIO_MAX_URL_BYTES`` get a JSON 414 before any view runs.

No route needs a long URL (paths and query values are capped far below it), and a
long one would otherwise reach views and queries. Daphne itself cuts request lines
at 16 KB; ``studio.daphne_limits`` makes that cut answer the same JSON.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

URL_TOO_LONG = "URL too long: the limit is {limit} bytes"


def url_too_long(limit: int) -> str:
    return URL_TOO_LONG.format(limit=limit)


class UrlLengthMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.limit: int = settings.STUDIO_MAX_URL_BYTES

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # The raw (still percent-encoded) path and query, as the client sent them.
        length = len(request.META.get("PATH_INFO", "").encode("utf-8", "surrogateescape"))
        length += len(request.META.get("QUERY_STRING", ""))
        if length > self.limit:
            return JsonResponse({"error": url_too_long(self.limit)}, status=414)
        return self.get_response(request)

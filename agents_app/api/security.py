"""How API callers authenticate: an API key (``Authorization: Bearer agtbldr_…``) for
programs, a login token (``Bearer agtuser_…``) for token clients, the Django session
cookie (with CSRF on unsafe methods) for our pages.

The authenticated user is ``request.auth``; ``request.auth_type`` says how
(``api_key`` or ``session``), as ``GET /api/auth/me`` reports it. Views take the request as
an ``AuthedRequest`` (``agents_app.api.authed``), which types both.
"""

from __future__ import annotations

from typing import cast

from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest
from ninja.errors import HttpError
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from agents_app.api.authed import AuthedRequest
from agents_app.services.access.api_keys import api_key_in_use
from agents_app.services.access.login_tokens import TOKEN_PREFIX, login_token_user


class ApiKeyAuth(HttpBearer):
    """``Authorization: Bearer agtbldr_<64 hex>`` (an API key) or ``Bearer agtuser_…``
    (a login token from ``POST /api/auth/login``, ``auth_type`` ``session`` as in the
    reference)."""

    def authenticate(self, request: HttpRequest, token: str) -> User | None:
        if token.startswith(TOKEN_PREFIX):
            user: User | None = login_token_user(token)
            if user is not None:
                cast(AuthedRequest, request).auth_type = "session"
                request.login_token = token  # type: ignore[attr-defined]
            return user
        key = api_key_in_use(token)
        if key is None:
            return None
        cast(AuthedRequest, request).auth_type = "api_key"
        # Per-key request limits (agents_app.api.limits) count against this key.
        request.api_key_id = key.pk  # type: ignore[attr-defined]
        return key.user


class SessionCookieAuth(APIKeyCookie):
    """The Django session; unsafe methods need the CSRF token (``X-CSRFToken`` header).

    Anonymous requests are not CSRF-checked, so they get 401 (not a misleading 403).
    """

    param_name: str = settings.SESSION_COOKIE_NAME

    def _get_key(self, request: HttpRequest) -> str | None:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        if not getattr(request, "_ninja_csrf_exempt", False) and check_csrf(request):
            raise HttpError(403, "CSRF check failed")
        return request.COOKIES.get(self.param_name)

    def authenticate(self, request: HttpRequest, key: str | None) -> User | None:
        if key is None:
            return None
        cast(AuthedRequest, request).auth_type = "session"
        return cast(User, request.user)  # signed in: _get_key let only those through


# The API's authenticators, in order: the NinjaAPI's default and what code-defined
# controllers (``api.controllers``) authenticate with.
AUTHENTICATORS = [ApiKeyAuth(), SessionCookieAuth()]

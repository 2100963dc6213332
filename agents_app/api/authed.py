"""``AuthedRequest``: the request an API view receives once an authenticator let it through.

A type only, for the views' signatures: ninja hands views Django's own request objects and
sets ``auth`` to what the authenticator returned (``agents_app.api.security``: the user of
an API key, of a login token or of the session cookie); the authenticator also sets
``auth_type``. Nothing here runs.
"""

from __future__ import annotations

from typing import Literal

from django.contrib.auth.models import User
from django.http import HttpRequest


class AuthedRequest(HttpRequest):
    auth: User
    auth_type: Literal["api_key", "session"]

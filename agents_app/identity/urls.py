"""Routes of the identity provider's sign-in (``/oidc/``) and of SCIM (``/scim/v2/``),
included at the site root by ``studio/urls.py``."""

from __future__ import annotations

from django.urls import path, re_path

from agents_app.identity import oidc
from agents_app.identity.scim import endpoint as scim_endpoint

urlpatterns = [
    path("oidc/login/", oidc.sign_in, name="oidc-login"),
    path("oidc/callback/", oidc.callback, name="oidc-callback"),
    path("oidc/logout/", oidc.sign_out, name="oidc-logout"),
    re_path(r"^scim/v2/(?P<rest>.*)$", scim_endpoint, name="scim"),
]

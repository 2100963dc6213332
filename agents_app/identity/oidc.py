"""OpenID Connect sign-in: the redirect to the provider, the way back, signing out there.

``/oidc/login/?next=…`` sends the browser to the provider's authorization endpoint (code
flow, PKCE S256, a fresh ``state`` and ``nonce`` kept in the session). ``/oidc/callback/``
takes the code back: Authlib checks the ``state`` against the session, exchanges the code
(with the client secret and the PKCE verifier) and verifies the ID token against the
provider's published keys, issuer, audience, expiry and the ``nonce``; anything wrong stops
the sign-in with a page that says what. The verified claims (with the userinfo endpoint's,
for the same ``sub``) go to ``services.access.identity.oidc_sign_in``, which finds or makes the
account and sets its groups. ``/oidc/logout/`` (POST) signs out here and at the provider
(RP-initiated logout with the ID token as hint).
"""

from __future__ import annotations

import logging
from typing import Any

from authlib.common.errors import AuthlibBaseError
from authlib.integrations.base_client.errors import MismatchingStateError, OAuthError
from django.conf import settings
from django.contrib.auth import login, logout
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from joserfc.errors import JoseError
from requests import RequestException

from agents_app.services.access import audit, identity, oidc_client
from agents_app.services.access.identity import SignInRefused

logger = logging.getLogger("agents_app.identity.oidc")
BACKEND = "django.contrib.auth.backends.ModelBackend"
DEFAULT_NEXT = "/chat/"


def _refused(request: HttpRequest, title: str, reason: str, status: int = 400) -> HttpResponse:
    logger.warning("OpenID sign-in refused: %s: %s", title, reason)
    return render(
        request,
        "registration/sign_in_refused.html",
        {"title": title, "reason": reason, "provider": identity.provider_name()},
        status=status,
    )


def _not_configured(request: HttpRequest) -> HttpResponse:
    return _refused(
        request,
        "Single sign-on is off",
        "This site has no identity provider configured (STUDIO_OIDC_ISSUER).",
        404,
    )


@never_cache
@require_GET
def sign_in(request: HttpRequest) -> HttpResponse:
    if not identity.oidc_enabled():
        return _not_configured(request)
    wanted = request.GET.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    request.session[oidc_client.NEXT_SESSION_KEY] = wanted if wanted and safe else DEFAULT_NEXT
    redirect_uri = oidc_client.absolute(request, reverse("oidc-callback"))
    try:
        return oidc_client.client().authorize_redirect(request, redirect_uri)  # type: ignore[no-any-return]
    except (RequestException, AuthlibBaseError, ValueError) as exc:
        logger.warning("OpenID discovery failed: %s", type(exc).__name__)
        return _refused(
            request,
            "The identity provider cannot be reached",
            f"{identity.provider_name()} did not answer its discovery document. Try again "
            "in a moment; if it lasts, tell an administrator.",
            502,
        )


def _token_refusal(exc: Exception) -> tuple[str, str]:
    """Why an ID token was not accepted, in words."""
    name = type(exc).__name__
    claim = str(getattr(exc, "claim", "") or "")
    if name == "BadSignatureError" or "signature" in str(exc).lower():
        return (
            "The sign-in token's signature is wrong",
            "The ID token was not signed by a key the identity provider publishes, so it "
            "was refused.",
        )
    if name == "ExpiredTokenError" or claim == "exp":
        return ("The sign-in token has expired", "The ID token had expired, so it was refused.")
    if claim == "nonce":
        return (
            "The sign-in token does not match this sign-in",
            "The ID token's nonce differs from the one this sign-in sent (a replayed or "
            "substituted token), so it was refused.",
        )
    if claim in ("iss", "aud", "azp"):
        return (
            "The sign-in token is not for this site",
            f"The ID token's {claim} claim is not this site's provider or client.",
        )
    return ("The sign-in token was refused", f"The ID token did not verify ({name}).")


def _claims(token: dict[str, Any]) -> dict[str, Any]:
    """The ID token's claims, completed by the userinfo endpoint's for the same ``sub``."""
    claims = dict(token.get("userinfo") or {})
    app = oidc_client.client()
    if claims and app.load_server_metadata().get("userinfo_endpoint"):
        extra = dict(app.userinfo(token=token))
        if str(extra.get("sub")) == str(claims.get("sub")):
            claims = {**extra, **{k: v for k, v in claims.items() if k not in extra}}
    return claims


@never_cache
@require_GET
def callback(request: HttpRequest) -> HttpResponse:
    if not identity.oidc_enabled():
        return _not_configured(request)
    app = oidc_client.client()
    try:
        token = app.authorize_access_token(request, leeway=30)
        claims = _claims(token)
    except MismatchingStateError:
        return _refused(
            request,
            "The sign-in could not be checked",
            "The state the identity provider sent back is not the one this browser was "
            "given (a tampered, replayed or expired sign-in link). Start the sign-in again.",
        )
    except OAuthError as exc:
        return _refused(
            request,
            f"{identity.provider_name()} refused the sign-in",
            f"{exc.error}: {exc.description}" if exc.description else str(exc.error),
        )
    except (JoseError, AuthlibBaseError) as exc:
        title, reason = _token_refusal(exc)
        return _refused(request, title, reason)
    except RequestException as exc:
        logger.warning("OpenID token exchange failed: %s", type(exc).__name__)
        return _refused(
            request,
            "The identity provider cannot be reached",
            f"{identity.provider_name()} did not answer. Try again in a moment.",
            502,
        )
    if not claims.get("sub"):
        return _refused(request, "No ID token", "The identity provider sent no ID token.")
    issuer = str(app.load_server_metadata().get("issuer") or settings.STUDIO_OIDC_ISSUER)
    actor = audit.Actor(
        audit.Kind.SIGN_IN,
        f"{claims.get(settings.STUDIO_OIDC_USERNAME_CLAIM) or claims['sub']} (sign-in via "
        f"{identity.provider_name()})",
        None,
        audit.request_source(request),
    )
    try:
        with audit.acting_as(actor):
            user = identity.oidc_sign_in(claims, issuer)
    except SignInRefused as exc:
        return _refused(request, exc.title, exc.reason, 403)
    after = request.session.pop(oidc_client.NEXT_SESSION_KEY, "") or DEFAULT_NEXT
    login(request, user, backend=BACKEND)
    # The groups are read again at the next sign-in: this bounds how long a group removed
    # upstream still counts here (STUDIO_OIDC_SESSION_SECONDS).
    request.session.set_expiry(settings.STUDIO_OIDC_SESSION_SECONDS)
    request.session[oidc_client.ID_TOKEN_SESSION_KEY] = token.get("id_token", "")
    return HttpResponseRedirect(after)


@never_cache
@require_POST
def sign_out(request: HttpRequest) -> HttpResponse:
    """Sign out here, then at the provider (RP-initiated logout) when the session came
    from it. A page takes the browser there: the pages' CSP (``form-action 'self'``) stops
    a form's redirect to another origin."""
    id_token = request.session.get(oidc_client.ID_TOKEN_SESSION_KEY, "")
    logout(request)
    return signed_out_page(request, id_token)


def signed_out_page(request: HttpRequest, id_token: str) -> HttpResponse:
    url = oidc_client.provider_sign_out_url(request, id_token)
    if not url:
        return HttpResponseRedirect(reverse("chat-login"))
    return render(
        request,
        "registration/signed_out.html",
        {"end_session_url": url, "provider": identity.provider_name()},
    )

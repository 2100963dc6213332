"""Thin views for the chat page: templates that the ES modules in ``static/chat/`` fill in."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.decorators import method_decorator
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.csrf import ensure_csrf_cookie

from agents_app.forms.login import ChatLoginForm, mark_throttled
from agents_app.services.access import identity, oidc_client
from agents_app.web.page import chat_context

# The studio's "Try this agent" panel frames /chat/?embed=1 from the same origin; the sign-in
# page can appear in that frame too when the session has expired.
LOGIN_URL = "chat-login"


@xframe_options_sameorigin
@login_required(login_url=LOGIN_URL)
@ensure_csrf_cookie
def chat(request: HttpRequest, thread_id: str = "") -> HttpResponse:
    return render(request, "chat/chat.html", chat_context(request, thread_id))


@method_decorator(xframe_options_sameorigin, name="dispatch")
class ChatLoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True
    next_page = "/chat/"
    form_class = ChatLoginForm

    def form_invalid(self, form: Any) -> HttpResponse:
        return mark_throttled(super().form_invalid(form))


class ChatLogoutView(auth_views.LogoutView):
    next_page = "/login/"

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # Signed in through the identity provider: sign out there too (docs/identity.md).
        id_token = request.session.get(oidc_client.ID_TOKEN_SESSION_KEY, "")
        response = super().post(request, *args, **kwargs)
        url = oidc_client.provider_sign_out_url(request, id_token)
        if not url:
            return response
        return render(
            request,
            "registration/signed_out.html",
            {"end_session_url": url, "provider": identity.provider_name()},
        )

from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from agents_app.api import api, not_found_view

# The studio's ModelAdmins, loaded here rather than at django.setup() (studio/apps.py).
admin.autodiscover()

# JSON for API clients, 503 + Retry-After for outages, whatever escaped the middleware.
handler500 = "agents_app.base.overload.server_error"

urlpatterns = [
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico whatever the page names: the studio's icon, not a 404.
    path("favicon.ico", RedirectView.as_view(url=f"{settings.STATIC_URL}favicon.svg")),
    path("api/", api.urls),
    # Any other /api/… path: a JSON 404 ({"error": …}), never the HTML page. Any character,
    # a newline too (a decoded %0A in a file path: "." would stop there), to the very end
    # (\Z: "$" also matches before a last newline).
    re_path(r"^api(?:/[\s\S]*)?\Z", not_found_view),
    # Sign-in with the identity provider (/oidc/) and SCIM provisioning (/scim/v2/).
    path("", include("agents_app.identity.urls")),
    path("", include("agents_app.web.urls")),
    path("", RedirectView.as_view(url="/chat/", permanent=False)),
]

# Under /api/ even Django's last-resort errors are JSON (agents_app.api).
handler400 = "agents_app.api.bad_request_view"
handler500 = "agents_app.api.server_error_view"

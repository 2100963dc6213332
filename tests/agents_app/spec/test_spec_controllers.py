"""defineController: code-defined routes outside a thread, mounted beneath /api/.

Discovered from ``agents/controllers/`` like thread endpoints, authenticated by default,
never shadowing a built-in route, answering with the same safe defaults as thread
endpoints, and given the spec's ``ControllerContext``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from agents_app.base.code_registry import reset_registry
from runtime.tools.registry import discover
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

HEALTH = '''
from runtime.tools.controllers import define_controller


@define_controller
async def health(context):
    """Is the CRM integration up?"""
    return {
        "agents": context.agent_names,
        "user": context.req.auth.username,
        "path": context.url.path,
        "has_helper": "helper" in context.agents,
        "tools": sorted(context.tools),
    }


@define_controller(method="POST", route="/health/ping", name="ping")
def ping(context):
    return {"pong": True}
'''
WEBHOOK = '''
from django.http import HttpResponse

from runtime.tools.controllers import define_controller


@define_controller(public=True)
def webhook(context):
    """A webhook: anyone may call it; it checks its own signature."""
    if context.req.headers.get("X-Signature") != "good":
        return 401, {"error": "bad signature"}
    return {"source": context.params["source"], "anonymous": context.req.auth is None}


@define_controller(route="/page", name="page", method="GET")
def page(context):
    return HttpResponse("<script>alert(1)</script>", content_type="text/html")


@define_controller(route="/agents", name="shadow", method="GET")
def shadow(context):
    return {"shadowed": True}


@define_controller(route="/text", name="text", method="GET")
def text(context):
    return "plain words"
'''


@pytest.fixture
def controllers(tmp_path: Path, agent: str) -> Iterator[None]:
    folder = tmp_path / "agents" / "controllers"
    (folder / "hooks").mkdir(parents=True)
    (folder / "health.py").write_text(HEALTH)
    (folder / "hooks" / "[source].post.py").write_text(WEBHOOK)
    reset_registry(discover(folders=[tmp_path]))
    yield
    reset_registry(None)


def test_spec_controller_discovered_from_its_file_and_mounted_under_api(
    controllers: None, as_: Any, alice: Any
) -> None:
    response = as_(alice).get("/api/health")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "agents": ["helper"],
        "user": alice.username,
        "path": "/api/health",
        "has_helper": True,
        "tools": [],
    }


def test_spec_controller_is_authenticated_by_default(controllers: None, anonymous: Client) -> None:
    response = anonymous.get("/api/health")
    assert response.status_code == 401
    assert response.json() == {"error": "Unauthorized"}


def test_spec_controller_session_cookie_needs_csrf_on_unsafe_methods(
    controllers: None, alice: Any, as_: Any
) -> None:
    assert as_(alice).post("/api/health/ping").json() == {"pong": True}  # API key: no CSRF
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.get("/api/health").status_code == 200
    response = client.post("/api/health/ping")
    assert response.status_code == 403
    assert response.json() == {"error": "CSRF check failed"}


def test_spec_public_controller_takes_anonymous_calls_with_route_params(
    controllers: None, anonymous: Client
) -> None:
    response = anonymous.post("/api/hooks/github", HTTP_X_SIGNATURE="good")
    assert response.status_code == 200
    assert response.json() == {"source": "github", "anonymous": True}
    assert anonymous.post("/api/hooks/github").status_code == 401


def test_spec_controller_responses_get_the_safe_defaults(
    controllers: None, as_: Any, alice: Any
) -> None:
    response = as_(alice).get("/api/page")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]
    assert response["Content-Disposition"] == "attachment"
    json_response = as_(alice).get("/api/health")
    assert json_response["Content-Disposition"] == "inline"
    assert json_response["X-Content-Type-Options"] == "nosniff"
    text = as_(alice).get("/api/text")
    assert text["Content-Type"].startswith("text/plain") and text.content == b"plain words"


def test_spec_controller_never_shadows_a_built_in_route(
    controllers: None, as_: Any, alice: Any
) -> None:
    response = as_(alice).get("/api/agents")
    assert "agents" in response.json() and "shadowed" not in response.json()


def test_spec_controller_unknown_path_is_a_json_404(controllers: None, anonymous: Client) -> None:
    response = anonymous.get("/api/nothing/here")
    assert response.status_code == 404
    assert response.json() == {"error": "Not found"}

"""Fixtures and helpers for the API tests (import the fixtures into a test module).

alice owns threads, bob and charlie are other users, ops is staff. Requests
authenticate with API keys (``as_(user)`` → a client sending ``Authorization``).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from agents_app.models import Thread
from agents_app.services.access.api_keys import api_key_create
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig


def scripted_model(name: str = "scripted", script: list[dict[str, Any]] | None = None, **kw: Any):
    return ModelDefinition(
        name=name,
        provider="test",
        model="scripted",
        script=script if script is not None else [{"content": "Hello from the test provider."}],
        **kw,
    )


def define_agent(
    name: str = "helper",
    script: list[dict[str, Any]] | None = None,
    *,
    streaming: dict[str, int] | None = None,
    dual: bool = False,
) -> None:
    """Save a ``test``-provider model, a prompt and an agent called ``name``."""
    model = scripted_model(f"{name}-model", script, streaming=streaming)
    prompt = PromptDefinition(
        name=f"{name}-prompt", model=model.name, prompt="You are helpful.", include_chat=True
    )
    side_b = SideConfig(prompt=prompt.name) if dual else None
    agent = AgentDefinition(
        name=name,
        title=name.title(),
        type="dual_ai" if dual else "ai_human",
        side_a=SideConfig(prompt=prompt.name),
        side_b=side_b,
    )
    save_definitions(
        [("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False
    )


class ApiClient(Client):
    """A test client whose JSON helpers send ``application/json``."""

    def post_json(self, path: str, data: Any = None, **kw: Any) -> Any:
        return self.post(
            path, data if data is not None else {}, content_type="application/json", **kw
        )

    def patch_json(self, path: str, data: Any, **kw: Any) -> Any:
        return self.patch(path, data, content_type="application/json", **kw)


def client_for(user: Any) -> ApiClient:
    _, raw = api_key_create(user=user, name=f"key for {user.username}")
    return ApiClient(HTTP_AUTHORIZATION=f"Bearer {raw}")


@pytest.fixture
def agent(db: Any) -> str:
    define_agent("helper")
    return "helper"


@pytest.fixture
def as_(db: Any) -> Any:
    """``as_(alice).get(...)``: a client authenticated as that user (API key)."""
    clients: dict[int, ApiClient] = {}

    def make(user: Any) -> ApiClient:
        if user.pk not in clients:
            clients[user.pk] = client_for(user)
        return clients[user.pk]

    return make


@pytest.fixture
def anonymous() -> ApiClient:
    return ApiClient()


@pytest.fixture(scope="module")
def openapi_document(django_db_blocker: Any) -> dict[str, Any]:
    """``GET /api/openapi.json`` as an anonymous client sees it, fetched once per module:
    building the document takes about half a second, and the parametrized schema tests
    (a hundred of them) only read it."""
    with django_db_blocker.unblock():
        response = ApiClient().get("/api/openapi.json")
    assert response.status_code == 200, response.content
    return response.json()  # type: ignore[no-any-return]


@pytest.fixture
def thread_of(as_: Any, agent: str) -> Any:
    """``thread_of(alice)`` → a new thread owned by alice (created over HTTP)."""

    def make(user: Any, **body: Any) -> Thread:
        response = as_(user).post_json("/api/threads", {"agent_id": agent, **body})
        assert response.status_code == 200, response.content
        return Thread.objects.get(pk=response.json()["threadId"])

    return make


@pytest.fixture(autouse=True)
def _api_hosts(settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1"]
    settings.STUDIO_EXECUTOR = "none"


__all__ = ["_api_hosts", "agent", "anonymous", "as_", "openapi_document", "thread_of"]

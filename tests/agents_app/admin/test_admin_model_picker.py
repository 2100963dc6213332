"""The model editor's picker and "Test connection" views (Django test client, a real local
vendor server), and the planted-secret check: the key never reaches the page, the
picker's JSON or an error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from agents_app.models import EnvValue
from runtime.core import egress
from tests.runtime.providers.recordings import cassette
from tests.runtime.providers.replay import ReplayServer, Reply

pytestmark = pytest.mark.django_db

PLANTED = "sk-or-PLANTED-0a1b2c3d4e5f-admin-never"
DISCOVER = reverse("admin:agents_app_languagemodel_discover")
TEST = reverse("admin:agents_app_languagemodel_test_connection")
ADD = reverse("admin:agents_app_languagemodel_add")


@pytest.fixture
def vendor(monkeypatch: pytest.MonkeyPatch) -> Iterator[ReplayServer]:
    # The replay server plays the vendors' own hosts, where the instance's key may go
    # (the egress key rule: tests/agents_app/services/test_egress.py).
    for provider in egress.OFFICIAL_HOSTS:
        monkeypatch.setitem(egress.OFFICIAL_HOSTS, provider, frozenset({"127.0.0.1"}))
    server = ReplayServer().start()
    try:
        yield server
    finally:
        server.stop()
    cache.clear()


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def _key(name: str) -> None:
    row = EnvValue(scope="instance", key=name, value_type="secret")
    row.value = PLANTED
    row.save()


def test_the_editor_shows_the_picker_beside_the_model_id(staff: Client) -> None:
    page = staff.get(ADD).content.decode()
    assert 'class="studio-model-picker"' in page
    assert f'data-list-url="{DISCOVER}"' in page and f'data-test-url="{TEST}"' in page
    assert "studio/model_picker.js" in page
    assert 'name="model"' in page  # the id field itself is still the form's input
    assert "<script>" not in page and " style=" not in page  # CSP: no inline script/style


def test_picker_json_has_the_models_and_never_the_key(staff: Client, vendor: ReplayServer) -> None:
    _key("OPENROUTER_API_KEY")
    vendor.queue(cassette("openrouter/models_list.yaml")[0].reply())
    response = staff.get(
        DISCOVER, {"provider": "openrouter", "base_url": vendor.url + "/api/v1", "search": "4o"}
    )
    assert response.status_code == 200, response.content
    data = response.json()
    assert "openai/gpt-4o" in [m["id"] for m in data["models"]]
    assert vendor.requests[0].headers["authorization"] == f"Bearer {PLANTED}"
    assert PLANTED not in response.content.decode()
    assert PLANTED not in staff.get(ADD).content.decode()


def test_picker_error_is_json_in_plain_words(staff: Client, vendor: ReplayServer) -> None:
    _key("OPENROUTER_API_KEY")
    refusal = {"error": {"message": f"No auth credentials found for {PLANTED}", "code": 401}}
    vendor.queue(Reply.json(refusal, status=401))
    response = staff.get(DISCOVER, {"provider": "openrouter", "base_url": vendor.url + "/api/v1"})
    assert response.status_code == 502
    message = response.json()["error"]
    assert message.startswith("The OpenRouter key in OPENROUTER_API_KEY was refused (401).")
    assert PLANTED not in response.content.decode()
    bad = staff.get(DISCOVER, {"provider": "openrouter", "base_url": "ftp://x"})
    assert bad.status_code == 400 and "http://" in bad.json()["error"]


def test_connection_button_reports_the_vendor_error(staff: Client, vendor: ReplayServer) -> None:
    _key("ANTHROPIC_API_KEY")
    refusal = {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
    }
    vendor.queue(Reply.json(refusal, status=401))
    response = staff.post(
        TEST, {"provider": "anthropic", "model": "claude-haiku-4-5", "base_url": vendor.url + "/v1"}
    )
    assert response.status_code == 200
    data = response.json()
    assert data["ok"] is False
    assert data["message"].startswith("The Anthropic key in ANTHROPIC_API_KEY was refused (401).")
    assert "invalid x-api-key" in data["message"]
    sent = vendor.requests[0].json()
    assert sent["max_tokens"] == 1 and sent["model"] == "claude-haiku-4-5"
    assert PLANTED not in response.content.decode()
    assert staff.get(TEST).status_code == 405


def test_people_who_cannot_edit_models_cannot_use_either_view(client: Client, alice: Any) -> None:
    client.force_login(alice)  # not staff: the admin sends her to its login page
    assert client.get(DISCOVER, {"provider": "test"}).status_code == 302
    assert client.post(TEST, {"provider": "test", "model": "x"}).status_code == 302

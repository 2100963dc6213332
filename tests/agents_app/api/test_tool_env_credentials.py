"""A credential written in clear in a prompt tool entry's ``env`` is refused wherever a prompt
is saved (issue #36 item 11), as in MCP headers: the studio's form, the definition-write
API and ``import_definitions`` each tell the author to write it ``${NAME}`` and keep it in a
secret env value. A reference passes, and nothing of the refused literal is stored."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from agents_app.models import LanguageModel, Prompt, PromptTool
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form, set_rows
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

LITERAL = "sk_live_51Hx0canaryDoNotStore"
REFUSED = (
    "STRIPE_SECRET_KEY holds a credential in clear, which the studio, the API and exports "
    "would show. Write a credential as ${NAME} and keep it in a secret env value."
)
PATH = "tools.0.env"


@pytest.fixture
def helper_prompt() -> Prompt:
    model = LanguageModel.objects.create(name="gpt", provider="openai", model="gpt-4o-mini")
    return Prompt.objects.create(name="payments", model=model, text="Charge the card.")


def body(value: str) -> dict[str, Any]:
    entry = {"name": "payments", "env": {"STRIPE_SECRET_KEY": value, "REGION": "eu"}}
    return {"name": "checkout", "model": "gpt", "prompt": "Help.", "tools": [entry]}


def test_literal_credential_in_tool_env_is_refused_by_the_api(
    as_: Any, ops: Any, helper_prompt: Prompt
) -> None:
    refused = as_(ops).post_json("/api/prompts", body(LITERAL))
    assert refused.status_code == 400, refused.content
    assert refused.json() == {"error": "Validation failed", "fieldErrors": {PATH: REFUSED}}
    assert not Prompt.objects.filter(name="checkout").exists()
    saved = as_(ops).post_json("/api/prompts", body("${STRIPE_LIVE}"))
    assert saved.status_code == 201, saved.content
    entry = PromptTool.objects.get(prompt__name="checkout")
    assert entry.env == {"STRIPE_SECRET_KEY": "${STRIPE_LIVE}", "REGION": "eu"}
    # An update that writes the literal in is refused too.
    updated = as_(ops).put("/api/prompts/checkout", body(LITERAL), content_type="application/json")
    assert updated.status_code == 400 and updated.json()["fieldErrors"] == {PATH: REFUSED}
    assert LITERAL not in json.dumps(list(PromptTool.objects.values("env")))


def test_literal_credential_in_tool_env_is_refused_by_the_studio(
    client: Client, ops: Any, helper_prompt: Prompt
) -> None:
    client.force_login(ops)
    add = reverse("admin:agents_app_prompt_add")
    data = fill(read_form(client, add), name="checkout", model=helper_prompt.model.pk, text="Hi.")
    env = f"STRIPE_SECRET_KEY={LITERAL}\nREGION=eu"
    set_rows(data, "tool_entries", [{"name": "payments", "env": env}])
    page = post(client, add, data)
    assert page.status_code == 200
    assert errors_of(page) == {"tool_entries-0-env": [REFUSED]}
    assert not Prompt.objects.filter(name="checkout").exists()
    set_rows(
        data, "tool_entries", [{"name": "payments", "env": "STRIPE_SECRET_KEY=${STRIPE_LIVE}"}]
    )
    assert post(client, add, data).status_code == 302


def test_literal_credential_in_tool_env_is_refused_by_import(
    helper_prompt: Prompt, tmp_path: Path
) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "checkout.json").write_text(json.dumps(body(LITERAL)))
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("import_definitions", str(tmp_path), stdout=out, stderr=err)
    assert failed.value.returncode == 1
    assert "Nothing was imported" in str(failed.value)
    assert err.getvalue().splitlines() == [f"prompts/checkout.json: {PATH}: {REFUSED}"]
    assert not Prompt.objects.filter(name="checkout").exists()

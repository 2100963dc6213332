# ruff: noqa: F811  (the fixtures imported from api_support are parameters here)
"""Rows C2, C3, C4 (spec 0.2.0) at the platform's doors: a ``define_provider`` file in the
project's ``agents/providers/`` and the first-party OpenAI-compatible vendors in
``GET /api/providers``, the variable scans, file import, the definition API and the studio's
model form; an unknown provider refused at each; a request with no known price shown as an
unknown cost (null in the API, "unknown" in the studio), end to end over a real socket."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from agents_app.base.code_registry import reset_registry
from agents_app.models import LanguageModel, Log, Thread, ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.threads import messages as message_service
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from runtime.providers.registry import undefine
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form
from tests.agents_app.api.api_support import _api_hosts, as_  # noqa: F401 (fixtures)
from tests.runtime.providers import recordings
from tests.runtime.providers.replay import ReplayServer

SECRET = "tok-PLANTED-5e1d0c77-never-show-me"
KEY = "sk-acme-PLANTED-03fa9b12"
ACME = """
from runtime.providers.compatible.definition import define_provider

acme = define_provider(
    name="acme",
    label="Acme Cloud",
    base_url="https://api.acme.example/tenants/{tenant}/v1",
    api_key={"default_env": "ACME_API_KEY", "required": True},
    config={
        "tenant": {"type": "text", "default_env": "ACME_TENANT", "required": True,
                   "description": "Your tenant id."},
        "region": {"type": "text", "default": "eu-west"},
        "gateway_token": {"type": "secret", "default_env": "ACME_GATEWAY_TOKEN"},
    },
    headers={"x-acme-region": "{region}", "x-acme-gateway": "Bearer {gateway_token}"},
)
"""
UNKNOWN = (
    "Provider must be one of: 'openai', 'openrouter', 'anthropic', 'google', 'groq', 'xai', "
    "'cerebras', 'deepinfra', 'novita', 'cloudflare', 'acme' or 'test'."
)


@pytest.fixture
def acme(settings: Any, tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "project"
    (folder / "agents" / "providers").mkdir(parents=True)
    (folder / "agents" / "providers" / "acme.py").write_text(ACME)
    settings.STUDIO_AGENTS_DIRS = [str(folder)]
    reset_registry()
    try:
        yield folder
    finally:
        undefine("acme")
        reset_registry()


@pytest.mark.django_db
def test_C2_providers_lists_builtin_and_defined_with_slots_never_values(
    acme: Path,
    as_: Any,
    ops: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ACME_API_KEY", KEY)
    monkeypatch.setenv("ACME_GATEWAY_TOKEN", SECRET)
    monkeypatch.setenv("GROQ_API_KEY", KEY)

    response = as_(ops).get("/api/providers")

    assert response.status_code == 200
    assert SECRET not in response.content.decode() and KEY not in response.content.decode()
    found = {p["name"]: p for p in response.json()["providers"]}
    assert list(found) == [
        "openai", "openrouter", "anthropic", "google", "groq", "xai", "cerebras",
        "deepinfra", "novita", "cloudflare", "acme", "test",
    ]  # fmt: skip
    assert found["acme"]["isUserDefined"] is True and found["acme"]["label"] == "Acme Cloud"
    assert found["acme"]["envKeys"] == [
        "ACME_API_KEY",
        "ACME_TENANT",
        "ACME_GATEWAY_TOKEN",
    ]
    assert [(v["slot"], v["type"], v["required"]) for v in found["acme"]["variables"]] == [
        ("api_key", "secret", True),
        ("tenant", "text", True),
        ("region", "text", False),
        ("gateway_token", "secret", False),
    ]
    assert found["acme"]["hasApiKey"] is False  # ACME_TENANT is required and not set
    assert found["groq"]["hasApiKey"] is True and found["groq"]["isUserDefined"] is False
    assert found["cloudflare"]["envKeys"] == ["CLOUDFLARE_API_TOKEN", "CLOUDFLARE_ACCOUNT_ID"]


@pytest.mark.django_db
def test_C2_a_model_on_a_defined_provider_saves_at_every_door(
    acme: Path,
    as_: Any,
    ops: Any,
    client: Client,
    tmp_path: Path,
) -> None:
    # File import.
    files = tmp_path / "defs" / "models"
    files.mkdir(parents=True)
    (files / "imported.json").write_text(
        json.dumps({"name": "imported", "provider": "acme", "model": "acme-large"})
    )
    call_command("import_definitions", str(files.parent), stdout=io.StringIO())
    # The definition API.
    api = as_(ops).post_json("/api/models", {"name": "by_api", "provider": "acme", "model": "a"})
    assert api.status_code in (200, 201), api.content
    # The studio's model form offers the provider and saves it.
    client.force_login(ops)
    add = reverse("admin:agents_app_languagemodel_add")
    page = client.get(add).content.decode()
    assert '<option value="acme">Acme Cloud</option>' in page
    assert '<option value="groq">Groq</option>' in page
    saved = post(
        client, add, fill(read_form(client, add), name="by_form", provider="acme", model="a")
    )
    assert saved.status_code == 302, errors_of(saved)
    stored = dict(LanguageModel.objects.values_list("name", "provider"))
    assert stored == {"imported": "acme", "by_api": "acme", "by_form": "acme"}


@pytest.mark.django_db
def test_C2_an_unknown_provider_is_refused_at_every_door_with_a_sentence(
    acme: Path,
    as_: Any,
    ops: Any,
    client: Client,
    tmp_path: Path,
) -> None:
    files = tmp_path / "defs" / "models"
    files.mkdir(parents=True)
    (files / "typo.json").write_text(
        json.dumps({"name": "typo", "provider": "acmee", "model": "a"})
    )
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_definitions", str(files.parent), stdout=io.StringIO(), stderr=err)
    assert err.getvalue().splitlines() == [f"models/typo.json: provider: {UNKNOWN}"]

    api = as_(ops).post_json("/api/models", {"name": "typo", "provider": "acmee", "model": "a"})
    assert api.status_code == 400 and UNKNOWN in api.content.decode()

    client.force_login(ops)
    add = reverse("admin:agents_app_languagemodel_add")
    refused = post(
        client, add, fill(read_form(client, add), name="typo", provider="acmee", model="a")
    )
    assert refused.status_code == 200
    assert "provider" in errors_of(refused)
    assert not LanguageModel.objects.filter(name="typo").exists()


@pytest.mark.django_db
def test_C2_the_variable_scan_lists_the_provider_env(
    acme: Path,
    as_: Any,
    ops: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ACME_GATEWAY_TOKEN", SECRET)
    save_definitions(
        [
            ("model", ModelDefinition(name="am", provider="acme", model="a")),
            ("prompt", PromptDefinition(name="ap", model="am", prompt="Hi.")),
            ("agent", AgentDefinition(name="aa", title="A", side_a=SideConfig(prompt="ap"))),
        ]
    )

    response = as_(ops).get("/api/variables/agents/aa")

    assert response.status_code == 200 and SECRET not in response.content.decode()
    found = {v["property"]: (v["type"], v["required"]) for v in response.json()["variables"]}
    assert found == {
        "ACME_API_KEY": ("secret", True),
        "ACME_TENANT": ("text", True),
        "ACME_GATEWAY_TOKEN": ("secret", False),
    }


# --- C3 and C4 end to end: a Groq model with no price anywhere -----------------------------


@sync_to_async
def _setup(user: Any, base_url: str) -> Thread:
    model = ModelDefinition(
        name="groq-model", provider="groq", model="mystery-model-9b", base_url=base_url
    )
    prompt = PromptDefinition(name="p", model=model.name, prompt="Hi.", include_chat=True)
    agent = AgentDefinition(name="g", title="G", side_a=SideConfig(prompt="p"))
    save_definitions([("model", model), ("prompt", prompt), ("agent", agent)])
    # The key is the server's and the "vendor" a local socket: a superuser's tick lets it go.
    LanguageModel.objects.filter(name=model.name).update(send_instance_key_to_base_url=True)
    return thread_create(user=user, agent_name="g")


@sync_to_async
def _post(thread: Thread) -> str:
    message_service.message_post(thread=thread, role="user", content="hello")
    row = ThreadSession.objects.get(thread=thread, status__in=["queued", "running"])
    return str(row.pk)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_C4_an_unknown_cost_is_null_in_the_api_and_unknown_in_the_studio(
    ops: Any,
    as_: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    replay = ReplayServer().start()
    try:
        replay.queue(recordings.cassette("openai/chat_stream_tool_call_roundtrip.yaml")[1].reply())
        thread = await _setup(ops, replay.url + "/openai/v1")
        await run_session_job(await _post(thread))
        [sent] = replay.requests
    finally:
        replay.stop()
    assert sent.path == "/openai/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"

    @sync_to_async
    def observe() -> tuple[Any, Any, Any, str]:
        log = Log.objects.get(thread=thread, kind="llm")
        client = as_(ops)
        logs = client.get(f"/api/threads/{thread.pk}/logs").json()["logs"]
        detail = client.get(f"/api/threads/{thread.pk}/logs/{log.pk}").json()
        cost = client.get(f"/api/threads/{thread.pk}/cost").json()
        studio = Client()
        studio.force_login(ops)
        page = studio.get(reverse("admin:agents_app_log_changelist")).content.decode()
        page += studio.get("/admin/").content.decode()  # the dashboard's usage totals
        return log, (logs, detail), cost, page

    log, (logs, detail), cost, page = await observe()
    assert log.provider == "groq" and log.output_tokens > 0 and log.cost_known is False
    assert [item["cost_total"] for item in logs] == [None]
    assert [detail[k] for k in ("cost_total", "cost_input", "cost_output")] == [None] * 3
    assert cost["unknownCostRequests"] == 1 and cost["totalCost"] == 0.0
    assert ">unknown<" in page
    assert (
        'id="range-spend">$0.00 <span id="range-unknown-cost">+ 1 request of unknown cost' in page
    )


@pytest.mark.django_db
def test_C3_test_connection_fills_workers_ai_account_from_the_env(
    ops: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The studio's "Test connection" resolves a compatible vendor's config slots as it
    resolves the key (the user's env value, the instance's, the process env)."""
    from agents_app.models import EnvValue
    from agents_app.services.definitions import model_catalog
    from runtime.core import egress

    # The replay server plays the vendor's own host (as test_model_catalog.py does).
    monkeypatch.setitem(egress.OFFICIAL_HOSTS, "cloudflare", frozenset({"127.0.0.1"}))
    for name, value in (("CLOUDFLARE_API_TOKEN", KEY), ("CLOUDFLARE_ACCOUNT_ID", "acct-77")):
        row = EnvValue(scope="user", user=ops, key=name, value_type="secret")
        row.value = value
        row.save()
    replay = ReplayServer().start()
    try:
        reply = recordings.cassette("openai/chat_nonstream_json_schema_output.yaml")[0].reply()
        replay.queue(reply)
        result = model_catalog.check_connection(
            "cloudflare",
            "@cf/meta/llama-3.1-8b-instruct",
            user=ops,
            base_url=replay.url + "/client/v4/accounts/{account_id}/ai/v1",
        )
        [sent] = replay.requests
    finally:
        replay.stop()
    assert result["ok"] is True, result
    assert sent.path == "/client/v4/accounts/acct-77/ai/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in json.dumps(result)

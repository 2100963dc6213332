"""The planted-secret test: no admin page ever contains a secret env value or its ciphertext.

Secrets are planted at every scope, changed once through the admin (so history and
"changed successfully" messages exist), and then every page of every registered
admin is fetched: the index, each changelist (also searched for the secret), each
add page, and the change, history and delete pages of every object. Models are
enumerated from ``admin.site._registry``, so a new admin is covered automatically.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from agents_app.models import (
    Agent,
    EnvValue,
    LanguageModel,
    Log,
    Message,
    ModelFallback,
    Prompt,
    PromptPart,
    PromptTool,
    QueuedMessage,
    ScheduledEffect,
    Thread,
    ThreadFile,
    ThreadFileChunk,
    ThreadSession,
    ThreadValue,
    WebSocketTicket,
)
from agents_app.services.access.api_keys import api_key_create
from tests.agents_app.admin.admin_pages import change_row, fill, post, read_form
from tests.plain_templates import plain_templates

pytestmark = pytest.mark.django_db
CANARY = f"sk-canary-{uuid.uuid4().hex}"
VISIBLE = f"text-canary-{uuid.uuid4().hex}"


def _env(value: str, *, value_type: str = "secret", **fields: Any) -> EnvValue:
    env = EnvValue(value_type=value_type, **fields)
    env.value = value
    env.save()
    return env


@pytest.fixture
def world(alice: Any, ops: Any) -> dict[str, Any]:
    """One row of every model, and a secret at every scope."""
    backup = LanguageModel.objects.create(name="backup", provider="openai", model="gpt-4o-mini")
    model = LanguageModel.objects.create(
        name="scripted", provider="test", model="s", script=[{"content": "hi"}]
    )
    ModelFallback.objects.create(model=model, fallback=backup)
    style = Prompt.objects.create(name="style", model=model, text="Be brief.")
    prompt = Prompt.objects.create(name="support_prompt", model=model)
    PromptPart.objects.create(prompt=prompt, type="include", include=style)
    PromptPart.objects.create(prompt=prompt, position=1, type="env", env_key="API_TOKEN")
    PromptTool.objects.create(prompt=prompt, name="style")
    agent = Agent.objects.create(name="support", side_a_prompt=prompt)
    thread = Thread.objects.create(agent=agent, origin_agent=agent, owner=alice)
    # A prompt's env part put a secret into the system prompt the engine logged.
    log = Log.objects.create(
        thread=thread,
        model="scripted",
        prompt_name="support_prompt",
        system_prompt=f"Be brief. Token: {CANARY}",
        request_body={"messages": [{"role": "system", "content": f"Token: {CANARY}"}]},
        error=f"401 for key {CANARY}",
    )
    Message.objects.create(thread=thread, role="user", content="Where is my order?")
    Message.objects.create(
        thread=thread,
        role="assistant",
        tool_calls=[
            {"id": "c1", "type": "function", "function": {"name": "style", "arguments": "{}"}}
        ],
        log=log,
    )
    QueuedMessage.objects.create(thread=thread, content="later")
    ThreadSession.objects.create(thread=thread, status="completed", progress={"steps": 1})
    ScheduledEffect.objects.create(thread=thread, name="reminder", due_at=timezone.now())
    ThreadValue.objects.create(thread=thread, key="cart", value={"items": 2})
    file = ThreadFile.objects.create(thread=thread, path="/notes.txt", name="notes.txt", size=3)
    ThreadFileChunk.objects.create(file=file, index=0, blob="threads/x/notes.txt.0", size=3)
    api_key_create(user=alice, name="CI key")
    WebSocketTicket.objects.create(
        ticket_hash="f" * 64,
        pathname="/api/threads/x/stream",
        user=alice,
        expires_at=timezone.now(),
    )
    Group.objects.create(name="operators")
    secrets = [
        _env(CANARY, scope="instance", key="OPENAI_API_KEY"),
        _env(CANARY, scope="user", user=alice, key="GITHUB_TOKEN"),
        _env(CANARY, scope="agent", agent=agent, key="ZENDESK_TOKEN"),
        _env(CANARY, scope="prompt", prompt=prompt, key="API_TOKEN"),
        _env(CANARY, scope="thread", thread=thread, key="SESSION_TOKEN"),
    ]
    _env(VISIBLE, value_type="text", scope="instance", key="REGION")
    return {"prompt": prompt, "agent": agent, "secrets": secrets}


def _change_through_the_admin(client: Client, world: dict[str, Any]) -> None:
    """Edit secrets through forms, so history, log entries and messages mention them."""
    prompt_url = reverse("admin:agents_app_prompt_change", args=[world["prompt"].pk])
    data = change_row(read_form(client, prompt_url), "env_values", 0, value_input=CANARY + "-2")
    assert post(client, prompt_url, data).status_code == 302
    env = world["secrets"][0]
    env_url = reverse("admin:agents_app_envvalue_change", args=[env.pk])
    assert (
        post(client, env_url, fill(read_form(client, env_url), value_input=CANARY)).status_code
        == 302
    )
    # A failed submission re-renders the form with what was typed: still nothing shown.
    bad = fill(read_form(client, env_url), key="has space", value_input=CANARY)
    assert CANARY not in post(client, env_url, bad).content.decode()


def _admin_urls() -> Iterator[str]:
    yield reverse("admin:index")
    for model, model_admin in admin.site._registry.items():
        info = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        yield reverse("admin:app_list", args=[model._meta.app_label])
        yield reverse(f"{info}_changelist")
        yield reverse(f"{info}_changelist") + "?q=sk-canary"
        yield reverse(f"{info}_add")
        for obj in model._default_manager.all():
            # "inspect" and "panels": the live thread inspector's page and its JSON.
            for view in ("change", "history", "delete", "inspect", "panels"):
                try:
                    yield reverse(f"{info}_{view}", args=[obj.pk])
                except NoReverseMatch:
                    continue
        assert model_admin is not None
    # Each log's detail in the live inspector (bodies, cURL).
    for log in Log.objects.all():
        yield reverse("admin:agents_app_thread_log", args=[log.thread_id, log.pk])


def _forbidden() -> list[str]:
    sealed = [e.ciphertext for e in EnvValue.objects.all()]
    # The base64 body alone too, in case a page showed only part of the stored string.
    return [CANARY, *sealed, *(s.split(":", 2)[2] for s in sealed)]


def _crawl(client: Client) -> int:
    forbidden = _forbidden()
    pages = 0
    with plain_templates():  # only status and content are read
        for url in _admin_urls():
            response = client.get(url)
            assert response.status_code < 500, url
            body = response.content.decode()
            for needle in forbidden:
                assert needle not in body, f"{url} shows a secret or its ciphertext"
            pages += 1
    return pages


def test_no_admin_page_shows_a_planted_secret(client: Client, ops: Any, world: Any) -> None:
    client.force_login(ops)
    _change_through_the_admin(client, world)

    pages = _crawl(client)

    assert pages > 60
    # The crawl does render env values: the text one is visible on the env values page.
    assert VISIBLE in client.get(reverse("admin:agents_app_envvalue_changelist")).content.decode()


def test_a_view_only_staff_user_never_sees_a_planted_secret(
    client: Client, ops: Any, make_user: Any, world: Any
) -> None:
    client.force_login(ops)
    _change_through_the_admin(client, world)
    viewer = make_user("viewer")
    viewer.is_staff = True
    viewer.save()
    viewer.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
    client.force_login(viewer)

    assert _crawl(client) > 60

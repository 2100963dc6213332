"""The studio's live thread inspector: the page, its panels and a log's detail (Django client).

The live parts (streaming, the log pane, the buttons) are in
``tests/browser/test_studio_live_inspector.py``; these check the JSON the page reads and
who may read it.
"""

from __future__ import annotations

import re
import uuid
from decimal import Decimal
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from agents_app.models import (
    Agent,
    EnvValue,
    LanguageModel,
    Log,
    Prompt,
    ScheduledEffect,
    Thread,
    ThreadFile,
    ThreadValue,
)
from runtime.engine import NewMessage
from tests.agents_app.bridge.test_tool_waits_store import _engine

pytestmark = pytest.mark.django_db
SECRET = f"sk-live-{uuid.uuid4().hex}"


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


@pytest.fixture
def thread(alice: Any) -> Thread:
    model = LanguageModel.objects.create(name="m", provider="test", model="x")
    agent = Agent.objects.create(
        name="support", side_a_prompt=Prompt.objects.create(name="p", model=model)
    )
    return Thread.objects.create(agent=agent, origin_agent=agent, owner=alice)


def _secret() -> None:
    env = EnvValue(scope="instance", key="OPENAI_API_KEY", value_type="secret")
    env.value = SECRET
    env.save()


def _vendor_log(thread: Thread, **fields: Any) -> Log:
    body = {
        "method": "POST",
        "url": "https://api.openai.com/v1/chat/completions",
        "headers": {"content-type": "application/json"},
        "body": {"model": "gpt-4o", "messages": [{"role": "user", "content": f"key {SECRET}"}]},
        "summary": {"model": "gpt-4o", "messages": 1},
    }
    values: dict[str, Any] = {
        "thread": thread,
        "provider": "openai",
        "model": "gpt",
        "model_id": "gpt-4o",
        "request_body": body,
        "response_body": {"content": "hello", "finish_reason": "stop"},
        "input_tokens": 1200,
        "cached_tokens": 200,
        "output_tokens": 40,
        "cost_total": Decimal("0.0123"),
        "latency_ms": 850,
        "time_to_first_token_ms": 240,
        "finish_reason": "stop",
        "is_complete": True,
    }
    return Log.objects.create(**{**values, **fields})


def _log_url(thread: Thread, log: Log) -> str:
    return reverse("admin:agents_app_thread_log", args=[thread.pk, log.pk])


def test_the_inspector_page_is_a_shell_with_no_inline_script(staff: Client, thread: Thread) -> None:
    page = staff.get(reverse("admin:agents_app_thread_inspect", args=[thread.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "studio/inspector/inspector.js" in html and 'id="inspector-boot"' in html
    scripts = re.findall(r"<script([^>]*)>", html)
    # Every script is a file or JSON data (the admin's own plus ours): nothing inline runs.
    assert all("src=" in s or 'type="application/json"' in s for s in scripts)
    assert " style=" not in html
    assert f"/chat/t/{thread.pk}" in html  # "Open in chat"


def test_the_thread_record_and_list_link_to_the_live_inspector(
    staff: Client, thread: Thread
) -> None:
    live = reverse("admin:agents_app_thread_inspect", args=[thread.pk])
    record = staff.get(reverse("admin:agents_app_thread_change", args=[thread.pk]))
    listing = staff.get(reverse("admin:agents_app_thread_changelist"))
    assert live in record.content.decode()
    assert live in listing.content.decode()


def test_staff_without_the_view_permission_get_nothing(
    client: Client, make_user: Any, thread: Thread
) -> None:
    log = _vendor_log(thread)
    clerk = make_user("clerk")
    clerk.is_staff = True
    clerk.save()
    client.force_login(clerk)
    for url in (
        reverse("admin:agents_app_thread_inspect", args=[thread.pk]),
        reverse("admin:agents_app_thread_panels", args=[thread.pk]),
        _log_url(thread, log),
    ):
        assert client.get(url).status_code == 403, url


def test_a_viewer_may_look_but_not_act(client: Client, make_user: Any, thread: Thread) -> None:
    viewer = make_user("viewer")
    viewer.is_staff = True
    viewer.save()
    viewer.user_permissions.add(Permission.objects.get(codename="view_thread"))
    client.force_login(viewer)
    page = client.get(reverse("admin:agents_app_thread_inspect", args=[thread.pk]))
    assert page.status_code == 200 and '"canAct": false' in page.content.decode()
    refused = client.post(
        reverse("admin:agents_app_thread_stop", args=[thread.pk]), HTTP_ACCEPT="application/json"
    )
    assert refused.status_code == 403
    assert refused.json() == {"error": "You may look at threads but not act on them."}
    assert not Thread.objects.get(pk=thread.pk).stopped


def test_log_detail_has_people_numbers_and_a_curl_with_a_key_placeholder(
    staff: Client, thread: Thread
) -> None:
    _secret()
    log = _vendor_log(thread)
    detail = staff.get(_log_url(thread, log)).json()
    assert (detail["input_tokens"], detail["cached_tokens"], detail["output_tokens"]) == (
        1200,
        200,
        40,
    )
    assert detail["cost"]["total"] == "$0.01"
    assert detail["latency_ms"] == 850 and detail["time_to_first_token_ms"] == 240
    assert detail["finish_reason"] == "stop"
    assert detail["shown_as"] == "openai"
    assert '"url": "https://api.openai.com/v1/chat/completions"' in detail["request_json"]
    curl = detail["curl"]
    assert curl.startswith("curl -X POST https://api.openai.com/v1/chat/completions")
    assert '"authorization: Bearer $OPENAI_API_KEY"' in curl
    assert SECRET not in str(detail)  # redacted in the body, never in the command


def test_log_detail_lists_retries_and_fallbacks_in_order(staff: Client, thread: Thread) -> None:
    first = _vendor_log(thread, error="rate limited", status_code=429, created_at=1)
    retry = _vendor_log(thread, error="overloaded", attempt=2, retry_of=first, created_at=2)
    fallback = _vendor_log(
        thread, model="backup", provider="anthropic", attempt=3, retry_of=retry, created_at=3
    )
    detail = staff.get(_log_url(thread, retry)).json()
    ladder = [(r["kind"], r["model"], r["is_current"]) for r in detail["ladder"]]
    assert ladder == [
        ("first", "gpt", False),
        ("retry", "gpt", True),
        ("fallback", "backup", False),
    ]
    assert detail["ladder"][2]["id"] == str(fallback.pk)
    # A vendor request can only be shown as sent: no "view as" offered.
    assert detail["views"] == []


def test_a_test_model_request_is_shown_as_a_vendor_would_get_it(
    staff: Client, thread: Thread
) -> None:
    neutral = {
        "model": "x",
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [],
    }
    log = _vendor_log(thread, provider="test", request_body=neutral)
    detail = staff.get(_log_url(thread, log)).json()
    assert detail["shown_as"] == "openai" and "openai" in detail["views"]
    assert "sends no HTTP request" in detail["view_note"]
    assert "$OPENAI_API_KEY" in detail["curl"]
    anthropic = staff.get(_log_url(thread, log), {"view": "anthropic"}).json()
    assert anthropic["shown_as"] == "anthropic"
    assert '"x-api-key: $ANTHROPIC_API_KEY"' in anthropic["curl"]


def test_another_threads_log_is_not_found(staff: Client, thread: Thread) -> None:
    other = Thread.objects.create(agent=thread.agent, origin_agent=thread.agent)
    log = _vendor_log(other)
    answer = staff.get(_log_url(thread, log))
    assert answer.status_code == 404 and "Log not found" in answer.json()["error"]


def test_panels_show_files_values_effects_and_the_subagent_tree(
    staff: Client, thread: Thread
) -> None:
    from django.utils import timezone

    ThreadFile.objects.create(
        thread=thread, path="/notes.txt", name="notes.txt", mime_type="text/plain", size=5
    )
    ThreadFile.objects.create(
        thread=thread, path="/page.html", name="page.html", mime_type="text/html", size=5
    )
    ThreadFile.objects.create(
        thread=thread, path="/logo.svg", name="logo.svg", mime_type="image/svg+xml", size=5
    )
    ThreadValue.objects.create(thread=thread, key="plan", value={"step": 2})
    ScheduledEffect.objects.create(thread=thread, name="remind", due_at=timezone.now())
    child = Thread.objects.create(
        agent=thread.agent, origin_agent=thread.agent, parent=thread, display_name="researcher"
    )
    Thread.objects.create(
        agent=thread.agent, origin_agent=thread.agent, parent=child, display_name="helper"
    )
    thread.stopped = True
    thread.save()

    data = staff.get(reverse("admin:agents_app_thread_panels", args=[thread.pk])).json()

    assert data["state"]["kind"] == "stopped" and data["state"]["can_continue"]
    previews = {f["name"]: f["preview"] for f in data["files"]}
    # Text previews as text; HTML too (shown in a <pre>, never rendered); SVG never as an image.
    assert previews == {"notes.txt": "text", "page.html": "text", "logo.svg": None}
    assert data["files"][0]["url"].startswith(f"/api/threads/{thread.pk}/fs/")
    assert data["values"][0]["key"] == "plan" and '"step": 2' in data["values"][0]["value"]
    [effect] = data["effects"]
    assert effect["can_cancel"] and effect["run_label"] == "Run now"
    [node] = data["subagents"]
    assert node["name"] == "researcher" and node["children"][0]["name"] == "helper"
    assert data["cost"]["total"] == "$0.00"


def test_a_parked_call_shows_and_is_approved_through_the_studio(client: Client) -> None:
    engine, _, thread_id = _engine(requires_approval=True)
    async_to_sync(engine.run_session)(thread_id, message=NewMessage("clean"))
    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.create_superuser("root-admin", password="pw-admin-1")
    client.force_login(admin)
    data = client.get(reverse("admin:agents_app_thread_panels", args=[thread_id])).json()
    assert data["state"]["kind"] == "parked" and data["state"]["can_stop"]
    [call] = data["pending"]
    assert call["tool"] == "wipe" and '"/tmp"' in call["args"]

    decide = reverse("admin:agents_app_thread_tool_decide", args=[thread_id])
    refused = client.post(
        decide, {"tool_call_id": "call_1", "approve": "false"}, HTTP_ACCEPT="application/json"
    )
    assert refused.status_code == 400
    assert refused.json() == {"error": "reason is required when rejecting a tool call"}
    done = client.post(
        decide, {"tool_call_id": "call_1", "approve": "true"}, HTTP_ACCEPT="application/json"
    )
    assert done.status_code == 200 and done.json()["message"].startswith("Approved")
    again = client.post(
        decide, {"tool_call_id": "call_1", "approve": "true"}, HTTP_ACCEPT="application/json"
    )
    assert again.status_code == 409
    data = client.get(reverse("admin:agents_app_thread_panels", args=[thread_id])).json()
    assert data["pending"] == [] and data["state"]["kind"] == "running"

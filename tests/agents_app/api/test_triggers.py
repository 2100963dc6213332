"""Inbound triggers: a token URL starts a thread from the request's JSON through the
template (202 with the thread id); revoked → 404; signatures and limits apply
(docs/automation.md, "Triggers")."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from typing import Any

import pytest

from agents_app.models import EnvValue, Message, QueuedMessage, Thread, UsageLimit
from tests.agents_app.api.api_support import ApiClient, _api_hosts, client_for, define_agent  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def _contents(thread_id: str) -> list[str]:
    rows = [
        *QueuedMessage.objects.filter(thread_id=thread_id),
        *Message.objects.filter(thread_id=thread_id),
    ]
    return [r.content for r in rows]


def _create(user: Any, **body: Any) -> dict[str, Any]:
    define_agent("helper")
    template = "New order {{ order.id }} from {{ customer.name }}: {{ order.items }}"
    response = client_for(user).post_json(
        "/api/triggers", {"agent": "helper", "template": template, **body}
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_a_trigger_url_starts_a_thread_and_a_revoked_one_answers_404(admin_user: Any) -> None:
    created = _create(admin_user)
    anyone = ApiClient()
    event = {"order": {"id": "A-7", "items": ["tea", "mug"]}, "customer": {"name": "Ana"}}
    fired = anyone.post(created["path"], json.dumps(event), content_type="application/json")
    assert fired.status_code == 202, fired.content
    thread = Thread.objects.get(pk=fired.json()["threadId"])
    assert thread.owner_id == admin_user.pk and thread.agent.name == "helper"
    assert _contents(str(thread.pk)) == ['New order A-7 from Ana: ["tea", "mug"]']
    missing = anyone.post(created["path"], "{}", content_type="application/json")
    assert missing.status_code == 400 and "order.id" in missing.json()["error"]
    listed = client_for(admin_user).get("/api/triggers").json()["triggers"]
    assert "token" not in listed[0] and listed[0]["tokenPrefix"] == created["token"][:10]
    revoked = client_for(admin_user).delete(f"/api/triggers/{created['id']}")
    assert revoked.json()["revoked"] is True
    again = anyone.post(created["path"], json.dumps(event), content_type="application/json")
    assert again.status_code == 404 and again.json() == {"error": "Not found"}
    assert (
        ApiClient()
        .post("/api/inbound/trg_guess", "{}", content_type="application/json")
        .status_code
        == 404
    )
    assert Thread.objects.count() == 1


def test_a_signed_trigger_refuses_bad_or_old_signatures(admin_user: Any) -> None:
    row = EnvValue(scope=EnvValue.Scope.INSTANCE, key="SENDER_SECRET")
    row.value = "s3cret-sender"
    row.save()
    created = _create(admin_user, secretEnv="SENDER_SECRET")
    body = json.dumps({"order": {"id": 1, "items": []}, "customer": {"name": "B"}}).encode()

    def post(stamp: int, secret: bytes = b"s3cret-sender") -> Any:
        mac = hmac.new(secret, str(stamp).encode() + b"." + body, hashlib.sha256).hexdigest()
        headers = {"HTTP_WEBHOOK_TIMESTAMP": str(stamp), "HTTP_WEBHOOK_SIGNATURE": f"v1={mac}"}
        return ApiClient().post(created["path"], body, content_type="application/json", **headers)

    now = int(time.time())
    assert post(now, b"wrong").status_code == 401
    assert post(now - 3600).status_code == 401  # outside the replay window
    assert (
        ApiClient().post(created["path"], body, content_type="application/json").status_code == 401
    )
    assert Thread.objects.count() == 0
    assert post(now).status_code == 202


def test_the_owners_usage_limit_applies_to_trigger_requests(admin_user: Any) -> None:
    created = _create(admin_user)
    UsageLimit.objects.create(user=admin_user, action="thread_create", limit=1, period=3600)
    event = json.dumps({"order": {"id": 1, "items": []}, "customer": {"name": "C"}})
    first = ApiClient().post(created["path"], event, content_type="application/json")
    second = ApiClient().post(created["path"], event, content_type="application/json")
    assert first.status_code == 202 and second.status_code == 429
    assert "Too many" in second.json()["error"]


def test_the_studio_creates_a_trigger_shows_its_url_once_and_revokes_it(
    admin_client: Any, admin_user: Any
) -> None:
    from agents_app.models import Agent, Trigger

    define_agent("helper")
    add = "/admin/agents_app/trigger/add/"
    form = {
        "agent": Agent.objects.get(name="helper").pk,
        "name": "orders",
        "template": "Order {{ id }}",
    }
    refused = admin_client.post(add, {**form, "secret_env": "NO_SUCH_SECRET"})
    assert "There is no secret named NO_SUCH_SECRET" in refused.content.decode()
    assert not Trigger.objects.exists()
    created = admin_client.post(add, {**form, "secret_env": ""}, follow=True).content.decode()
    found = re.search(r"/api/inbound/(trg_[A-Za-z0-9_\-]+)", created)
    assert found, "the new trigger's URL is shown once"
    token = found.group(1)
    row = Trigger.objects.get()
    assert row.owner_id == admin_user.pk and row.token_prefix == token[:10]
    fired = ApiClient().post(f"/api/inbound/{token}", '{"id": 7}', content_type="application/json")
    assert fired.status_code == 202, fired.content
    assert _contents(fired.json()["threadId"]) == ["Order 7"]
    # Never shown again: not on its page, not in the list.
    for page in ("/admin/agents_app/trigger/", f"/admin/agents_app/trigger/{row.pk}/change/"):
        html = admin_client.get(page).content.decode()
        assert token not in html and row.token_prefix in html
    admin_client.post(
        "/admin/agents_app/trigger/", {"action": "revoke", "_selected_action": [str(row.pk)]}
    )
    again = ApiClient().post(f"/api/inbound/{token}", "{}", content_type="application/json")
    assert again.status_code == 404

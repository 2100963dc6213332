"""Issue #55: whatever is typed into the new forms (schedule, webhook, trigger, eval case and
run, dataset upload) comes back as a page with errors, never a server error, and never as
markup: a script or an event handler typed anywhere is shown as text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from agents_app.models import Agent
from tests.agents_app.admin.admin_pages import fill, post, read_form, set_rows
from tests.agents_app.api.api_support import define_agent
from tests.plain_templates import plain_templates

pytestmark = pytest.mark.django_db

TAG = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
NASTY = ["", "9" * 40, "x" * 3000, "\x00", TAG, '["\\ud800"]', '{"a": "\\u0000"}']


def _forms(client: Client) -> list[tuple[str, dict[str, Any]]]:
    define_agent("helper")
    agent = Agent.objects.get(name="helper").pk
    pages = []
    url = "/admin/agents_app/schedule/add/"
    pages.append((url, fill(read_form(client, url), agent=agent, message="hi", at="09:00")))
    url = "/admin/agents_app/webhooksubscription/add/"
    pages.append((url, fill(read_form(client, url), url="https://example.com/h")))
    url = "/admin/agents_app/trigger/add/"
    pages.append((url, fill(read_form(client, url), agent=agent, template="Hi {{ a }}")))
    url = "/admin/agents_app/evaldataset/add/"
    data = fill(read_form(client, url), name="set")
    case = {"name": "c", "messages": json.dumps([{"role": "user", "content": "Hi"}])}
    pages.append((url, set_rows(data, "cases", [case])))
    url = "/admin/agents_app/evalrun/add/"
    pages.append((url, fill(read_form(client, url), agent="helper", pins="helper-prompt = 1")))
    return pages


@pytest.mark.sweep
def test_no_input_makes_a_new_form_fail_or_echo_markup(admin_client: Client) -> None:
    with plain_templates():  # only status and content are read
        _post_every_nasty_value(admin_client)


def _post_every_nasty_value(admin_client: Client) -> None:
    for url, data in _forms(admin_client):
        fields = [
            k
            for k in data
            if "__prefix__" not in k and not k.endswith("FORMS") and k != "csrfmiddlewaretoken"
        ]
        for field in fields:
            for value in NASTY:
                response = post(admin_client, url, {**data, field: value})
                assert response.status_code in (200, 302), (url, field, value)
                page = response.content.decode()
                assert "<img src=x" not in page and "<script>alert" not in page, (url, field)


def test_hostile_text_in_a_case_and_a_dataset_file_is_shown_as_text(admin_client: Client) -> None:
    url = "/admin/agents_app/evaldataset/add/"
    data = fill(read_form(admin_client, url), name="set")
    checks = [{"type": TAG}, {"type": "judge", "agent": TAG, "criteria": "x"}]
    case = {
        "name": TAG,
        "messages": json.dumps([{"role": "user", "content": TAG}]),
        "checks": json.dumps(checks),
        "env": json.dumps({TAG: TAG}),
    }
    page = post(admin_client, url, set_rows(data, "cases", [case])).content.decode()
    assert "there is no kind of check called" in page
    assert "<img src=x" not in page and "<script>alert" not in page
    upload = {
        "format": "standard-agents/eval-dataset",
        "version": 1,
        "name": TAG,
        "cases": [{"name": TAG, "messages": [{"role": TAG, "content": "x"}]}],
    }
    file = SimpleUploadedFile("x.json", json.dumps(upload).encode(), "application/json")
    page = admin_client.post(
        "/admin/agents_app/evaldataset/upload/", {"file": file}
    ).content.decode()
    assert "who says it must be the person or the agent" in page
    assert "<img src=x" not in page and "<script>alert" not in page
    unstorable = json.dumps({**upload, "cases": [{"name": "a\x00b", "messages": []}]})
    file = SimpleUploadedFile("x.json", unstorable.encode(), "application/json")
    response = admin_client.post("/admin/agents_app/evaldataset/upload/", {"file": file})
    assert response.status_code == 200 and response.context["form"].errors["file"]
    surrogate = '{"format": "standard-agents/eval-dataset", "version": 1, "name": "s", '
    surrogate += '"cases": [{"name": "c", "messages": [{"role": "user", "content": "\\ud800"}]}]}'
    file = SimpleUploadedFile("x.json", surrogate.encode(), "application/json")
    response = admin_client.post("/admin/agents_app/evaldataset/upload/", {"file": file})
    assert response.status_code == 200 and response.context["form"].errors["file"]

"""Issue #55 item 4: the webhook form is for people. Events are ticked from sentences (no
JSON list of dotted codes), refusals are sentences on their field (not ``secretEnv: …`` or
``url: …``), and a new trigger's URL is shown once with a copy button and a curl request
that really fires it."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator

import pytest
from django.test import Client

from agents_app.models import Agent, EnvValue, Trigger, WebhookSubscription
from agents_app.pages.trigger_examples import curl_example, example_body
from runtime.core import egress
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form
from tests.agents_app.api.api_support import define_agent

pytestmark = pytest.mark.django_db

HOOKS = "/admin/agents_app/webhooksubscription/add/"
TRIGGERS = "/admin/agents_app/trigger/add/"


@pytest.fixture
def strict_egress() -> Iterator[None]:
    egress.configure([])
    yield


@pytest.fixture
def hook_secret() -> None:
    row = EnvValue(scope=EnvValue.Scope.INSTANCE, key="HOOK_SECRET", value_type="secret")
    row.value = "whsec-forms-0123456789"
    row.save()


def test_events_are_labelled_checkboxes_and_save_as_the_list(
    admin_client: Client, hook_secret: None
) -> None:
    page = admin_client.get(HOOKS).content.decode()
    assert page.count('type="checkbox" name="events"') == 5
    assert "A conversation failed" in page and "needs a person&#x27;s approval" in page
    assert "JSON list" not in page and "studio-secret-names" in page
    assert '<option value="HOOK_SECRET">' in page  # the secret is offered by name
    data = fill(
        read_form(admin_client, HOOKS),
        url="hooks.example.com/agents",
        secret_env="HOOK_SECRET",
        events=["session.failed", "tool.waiting_approval"],
    )
    saved = post(admin_client, HOOKS, data)
    assert saved.status_code == 302, errors_of(saved)
    row = WebhookSubscription.objects.get()
    assert row.events == ["session.failed", "tool.waiting_approval"]
    assert row.url == "https://hooks.example.com/agents"
    listing = admin_client.get("/admin/agents_app/webhooksubscription/").content.decode()
    assert "A conversation failed, A tool call waits for a decision" in listing
    again = read_form(admin_client, f"/admin/agents_app/webhooksubscription/{row.pk}/change/")
    assert again["events"] == "tool.waiting_approval"  # the reader keeps the last ticked one


def test_refusals_are_sentences_on_their_fields(admin_client: Client, strict_egress: None) -> None:
    data = fill(
        read_form(admin_client, HOOKS), url="http://127.0.0.1:9/hook", secret_env="HOOK_SECRET"
    )
    data.pop("events", None)
    errors = errors_of(post(admin_client, HOOKS, data))
    assert errors["secret_env"] == [
        "There is no secret named HOOK_SECRET: add it under Env values first (none the "
        "instance has by that name), or pick one of the names offered as you type."
    ]
    assert errors["events"] == ["Tick at least one event to send."]
    (url_error,) = errors["url"]
    assert url_error.startswith("Webhooks are not sent to this address: 127.0.0.1 is")
    assert "ask your operator" in url_error and "egress allow-list" in url_error
    assert not any(e.startswith(("url:", "secretEnv:")) for es in errors.values() for e in es)
    assert not WebhookSubscription.objects.exists()


def test_a_new_trigger_shows_its_url_once_with_a_working_curl(
    admin_client: Client, hook_secret: None
) -> None:
    define_agent("helper")
    form = {
        "agent": Agent.objects.get(name="helper").pk,
        "name": "orders",
        "template": "Order {{ order.id }} from {{ customer }}: {{ items.0.name }}",
        "secret_env": "",
    }
    refused = errors_of(admin_client.post(TRIGGERS, {**form, "template": " "}))
    assert refused["template"][0].startswith("Write the message the agent receives")
    created = admin_client.post(TRIGGERS, form)
    assert created.status_code == 200 and "no-store" in created["Cache-Control"]
    page = created.content.decode()
    url = re.search(r'<code id="trigger-url">([^<]+)</code>', page).group(1)  # type: ignore[union-attr]
    assert 'data-copy="#trigger-url"' in page and 'data-copy="#trigger-curl"' in page
    curl = re.search(r'<pre class="studio-example" id="trigger-curl">([^<]+)</pre>', page)
    assert curl is not None
    command = shlex.split(curl.group(1).replace("&#x27;", "'").replace("&quot;", '"'))
    assert command[:3] == ["curl", "-X", "POST"] and command[3] == url
    body = json.loads(command[command.index("--data-raw") + 1])
    assert body == {
        "order": {"id": "example id"},
        "customer": "example customer",
        "items": [{"name": "example name"}],
    }
    fired = Client().post(
        url.removeprefix("http://testserver"), json.dumps(body), content_type="application/json"
    )
    assert fired.status_code == 202, fired.content
    row = Trigger.objects.get()
    for later in ("/admin/agents_app/trigger/", f"/admin/agents_app/trigger/{row.pk}/change/"):
        assert url.rsplit("/", 1)[1] not in admin_client.get(later).content.decode()


def test_a_signed_trigger_example_computes_the_signature() -> None:
    text = curl_example("https://studio.example/api/inbound/trg_x", "Hi {{ name }}", "HOOK_SECRET")
    assert 'openssl dgst -sha256 -hmac "$SECRET"' in text
    assert "Webhook-Signature: v1=$SIG" in text and "HOOK_SECRET" in text
    assert example_body("no fields") == {}


def test_a_trigger_with_an_unknown_secret_is_refused_in_words(admin_client: Client) -> None:
    define_agent("helper")
    response = admin_client.post(
        TRIGGERS,
        {
            "agent": Agent.objects.get(name="helper").pk,
            "name": "x",
            "template": "Hi {{ name }}",
            "secret_env": "MISSING",
        },
    )
    assert errors_of(response)["secret_env"][0].startswith(
        "There is no secret named MISSING: add it under Env values first"
    )
    assert not Trigger.objects.exists()

"""Remote A2A agents in the studio: the form saves through the one save path with its
refusals on the field they are about, and "Fetch the card" says what failed in words."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.models import A2aAgent, EnvValue
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form

pytestmark = pytest.mark.django_db

ADD = reverse("admin:agents_app_a2aagent_add")


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def test_the_form_saves_a_remote_agent_and_refuses_what_the_save_refuses(
    staff: Client,
) -> None:
    form = read_form(staff, ADD)
    refused = post(staff, ADD, fill(dict(form), name="partner", url="not a url"))
    assert "http:// or https://" in str(errors_of(refused)["url"])
    refused = post(
        staff,
        ADD,
        fill(
            dict(form),
            name="partner",
            url="https://partner.example.com/a2a/researcher",
            headers="Authorization=Bearer ${PARTNER_KEY}",
        ),
    )
    assert "PARTNER_KEY, which is not set anywhere" in str(errors_of(refused)["headers"])
    refused = post(
        staff,
        ADD,
        fill(dict(form), name="partner", url="http://10.1.2.3/a2a/x"),
    )
    assert "egress policy does not allow" in str(errors_of(refused)["url"])
    assert not A2aAgent.objects.exists()

    secret = EnvValue(scope="instance", key="PARTNER_KEY")
    secret.value = "partner-secret-value"
    secret.save()
    saved = post(
        staff,
        ADD,
        fill(
            dict(form),
            name="partner",
            url="https://partner.example.com/a2a/researcher",
            headers="Authorization=Bearer ${PARTNER_KEY}",
            timeout_ms="5000",
        ),
    )
    assert saved.status_code == 302, errors_of(saved)
    row = A2aAgent.objects.get(name="partner")
    assert row.headers == {"Authorization": "Bearer ${PARTNER_KEY}"} and row.timeout_ms == 5000

    # Editing keeps the name (prompts use it) and saves the same row.
    change = reverse("admin:agents_app_a2aagent_change", args=[row.pk])
    edited = post(staff, change, fill(read_form(staff, change), description="Finds papers."))
    assert edited.status_code == 302, errors_of(edited)
    assert list(A2aAgent.objects.values_list("name", "description")) == [
        ("partner", "Finds papers.")
    ]


def test_fetch_the_card_says_what_failed(staff: Client) -> None:
    row = A2aAgent.objects.create(name="gone", url="http://127.0.0.1:9/a2a/x")
    page = staff.post(
        reverse("admin:agents_app_a2aagent_changelist"),
        {"action": "fetch_cards", "_selected_action": [row.pk]},
        follow=True,
    ).content.decode()
    # The page capitalises the message's first letter.
    assert "Gone: could not read the card: could not connect to 127.0.0.1 (ConnectError)." in page
    row.refresh_from_db()
    assert row.last_error.startswith("Could not read the card: could not connect")

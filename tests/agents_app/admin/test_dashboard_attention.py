"""Issue #55 item 7: the dashboard starts with what to do: the configure shortcuts (with how
many of each there are) and "Needs attention" (failed sessions, paused schedules with their
reasons, turned-off triggers and webhooks, budgets near their cap, failed effects), in words,
before the figures and charts. A person sees only what they may open."""

from __future__ import annotations

import re
from decimal import Decimal
from html import unescape
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from agents_app.models import (
    Agent,
    LanguageModel,
    Log,
    Prompt,
    Schedule,
    SpendBudget,
    Thread,
    ThreadSession,
    Trigger,
    WebhookSubscription,
)
from agents_app.models.timestamps import now_us

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent() -> Agent:
    model = LanguageModel.objects.create(name="m", provider="test", model="t")
    prompt = Prompt.objects.create(name="p", model=model)
    return Agent.objects.create(name="order_helper", title="Order helper", side_a_prompt=prompt)


@pytest.fixture
def trouble(agent: Agent, alice: Any) -> None:
    thread = Thread.objects.create(agent=agent, origin_agent=agent, owner=alice)
    ThreadSession.objects.create(thread=thread, status="failed", stop_reason="step_error")
    Schedule.objects.create(
        agent=agent,
        owner=alice,
        name="Nightly digest",
        message="Summarise the day",
        paused=True,
        paused_reason="Its owner's account was deactivated.",
    )
    Trigger.objects.create(
        agent=agent,
        owner=alice,
        name="Shop orders",
        token_hash="a" * 64,
        token_prefix="abc",
        template="{{ order }}",
        disabled_reason="Its owner's account was deactivated.",
    )
    WebhookSubscription.objects.create(
        agent=agent, owner=alice, url="https://hooks.example.org/in", secret_env="S", active=False
    )
    SpendBudget.objects.create(agent=agent, monthly_limit_usd=Decimal("1.00"))
    Log.objects.create(thread=thread, model="t", cost_total=Decimal("0.85"), created_at=now_us())
    Thread.objects.filter(pk=thread.pk).update(last_activity_at=thread.created_at)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def test_shortcuts_and_attention_come_before_the_charts(
    admin_client: Client, agent: Agent, trouble: None
) -> None:
    page = admin_client.get("/admin/").content.decode()
    start = page.index('id="studio-shortcuts"')
    assert start < page.index('id="studio-attention"') < page.index('id="usage-charts"')
    setup = _text(page[start : page.index('id="studio-attention"')])
    for label in ("Agents 1", "Prompts 1", "Models 1", "Env values", "Schedules 1", "Triggers 1"):
        assert label in setup, setup
    assert 'href="/admin/agents_app/agent/add/"' in page
    attention = _text(page[page.index('id="studio-attention"') : page.index('id="usage-charts"')])
    assert "A session of Order helper failed A step failed" in attention, attention
    assert "The schedule Nightly digest is paused Its owner's account was deactivated." in attention
    assert "The trigger Shop orders is turned off" in attention
    assert "The webhook to hooks.example.org is turned off" in attention
    assert "The monthly budget of the agent Order helper is nearly used up" in attention
    assert "$0.85 of $1.00 spent this month" in attention
    assert "order_helper" not in attention and "step_error" not in attention


def test_a_quiet_instance_says_nothing_needs_attention(admin_client: Client) -> None:
    page = admin_client.get("/admin/").content.decode()
    assert 'id="attention-none"' in page and "Nothing needs attention" in page


def test_staff_see_only_what_they_may_open(
    client: Client, make_user: Any, agent: Agent, trouble: None
) -> None:
    viewer = make_user("viewer")
    viewer.is_staff = True
    viewer.save()
    viewer.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_agent", "view_schedule"])
    )
    client.force_login(viewer)
    page = _text(client.get("/admin/").content.decode())
    assert "Agents 1" in page and "Schedules 1" in page
    assert "Prompts" not in page.split("Needs attention")[0]
    assert "The schedule Nightly digest is paused" in page
    assert "trigger Shop orders" not in page and "session of Order helper" not in page
    assert "+ Add" not in page  # may view, may not add

"""The admin's effects page: every thread's runs, filters, and the cancel / run now actions."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.models import Agent, ScheduledEffect, Thread
from tests.agents_app.bridge.effects_support import *  # noqa: F403  (fixtures)
from tests.agents_app.bridge.effects_support import make_effect

pytestmark = pytest.mark.django_db(transaction=True)
URL = reverse("admin:agents_app_scheduledeffect_changelist")


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def _listed(page: Any) -> set[str]:
    return {str(pk) for pk in page.context["cl"].result_list.values_list("pk", flat=True)}


def test_the_page_lists_every_threads_runs_with_filters(
    staff: Client, thread: Thread, effects: Any, bob: Any
) -> None:
    agent = Agent.objects.get()
    other = Thread.objects.create(agent=agent, origin_agent=agent, owner=bob)
    mine = make_effect(thread, in_s=60)
    failed = make_effect(thread, "flaky", status="failed", error="RuntimeError: boom")
    theirs = make_effect(other, in_s=60)
    page = staff.get(URL)
    assert page.status_code == 200
    assert _listed(page) == {str(mine.pk), str(failed.pk), str(theirs.pk)}
    assert "RuntimeError: boom" in page.content.decode()
    assert _listed(staff.get(URL, {"status__exact": "failed"})) == {str(failed.pk)}
    assert _listed(staff.get(URL, {"name": "flaky"})) == {str(failed.pk)}
    assert _listed(staff.get(URL, {"name__exact": "flaky"})) == {str(failed.pk)}
    assert _listed(staff.get(URL, {"thread": str(other.pk)})) == {str(theirs.pk)}


def test_cancel_action_cancels_pending_runs_only(
    staff: Client, thread: Thread, effects: Any
) -> None:
    pending = make_effect(thread, in_s=60)
    done = make_effect(thread, status="completed")
    response = staff.post(
        URL,
        {"action": "cancel", "_selected_action": [str(pending.pk), str(done.pk)]},
        follow=True,
    )
    text = response.content.decode()
    assert "Canceled 1 effect(s)." in text and "1 effect(s) were not pending" in text
    statuses = dict(ScheduledEffect.objects.values_list("pk", "status"))
    assert (statuses[pending.pk], statuses[done.pk]) == ("user_canceled", "completed")


def test_run_now_action_runs_pending_and_replays_finished(
    staff: Client, thread: Thread, effects: Any
) -> None:
    pending = make_effect(thread, in_s=3600, args={"text": "pending"})
    finished = make_effect(thread, status="completed", args={"text": "again"})
    response = staff.post(
        URL,
        {"action": "run_now", "_selected_action": [str(pending.pk), str(finished.pk)]},
        follow=True,
    )
    text = response.content.decode()
    assert "Ran note: completed" in text and "Replayed note: completed" in text
    assert sorted(c["text"] for c in effects) == ["again", "pending"]
    replay = ScheduledEffect.objects.get(replayed_from=finished)
    assert replay.status == "completed" and replay.manual_run
    assert ScheduledEffect.objects.get(pk=pending.pk).status == "completed"


def test_run_now_refuses_too_many_at_once(staff: Client, thread: Thread, effects: Any) -> None:
    rows = [make_effect(thread, in_s=3600) for _ in range(21)]
    response = staff.post(
        URL, {"action": "run_now", "_selected_action": [str(r.pk) for r in rows]}, follow=True
    )
    assert "Select at most 20 effects" in response.content.decode()
    assert effects == []


def test_runs_are_not_editable_by_hand(staff: Client, thread: Thread, effects: Any) -> None:
    effect = make_effect(thread)
    page = staff.get(reverse("admin:agents_app_scheduledeffect_change", args=[effect.pk]))
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert staff.get(reverse("admin:agents_app_scheduledeffect_add")).status_code == 403
